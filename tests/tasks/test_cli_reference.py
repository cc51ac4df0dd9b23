import argparse

from tasks.cli_reference import PAGE, reference, render_parser


def test_the_command_reference_page_is_what_the_parsers_give():
    assert PAGE.read_text(encoding="utf-8") == reference(), \
        "docs/cli.md is out of date: run .venv/bin/python -m tasks.cli_reference --write"


def test_every_option_and_subcommand_has_a_row():
    parser = argparse.ArgumentParser(prog="tool", description="A tool.")
    parser.add_argument("--size", type=int, default=3, help="how big | how <wide>")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run it")
    run.add_argument("path", help="a file")
    run.add_argument("--fast", action="store_true", help="go faster")
    page = render_parser("tool", parser)
    assert "| `--size` | `SIZE` | `3` | how big \\| how &lt;wide&gt; |" in page
    assert "### `tool run`\n\nrun it\n" in page
    assert "| `path` | `path` |  | a file |" in page and "| `--fast` |  |  | go faster |" in page


def test_every_command_module_is_on_the_page():
    """Every module of pipeline/cli that registers a subcommand is one of lmbr's, so the generated page has its
    options (a module left out of lmbr's SUBCOMMANDS would have a parser that no page shows)."""
    import importlib
    import pkgutil

    import pipeline.cli
    from pipeline.cli.lmbr import SUBCOMMANDS

    registering = [importlib.import_module(f"pipeline.cli.{m.name}") for m in pkgutil.iter_modules(pipeline.cli.__path__)]
    registering = [module for module in registering if hasattr(module, "register")]
    assert registering and set(registering) == set(SUBCOMMANDS)
    page = PAGE.read_text(encoding="utf-8")
    for module in registering:
        parser = argparse.ArgumentParser()
        module.register(parser.add_subparsers())
        for name in parser._subparsers._group_actions[0].choices:
            assert f"### `lmbr {name}`" in page, f"lmbr {name} is missing from docs/cli.md"
