"""The command reference, docs/cli.md, generated from the argparse definitions of `reproduce-table` and `lmbr`.

    .venv/bin/python -m tasks.cli_reference           # print it
    .venv/bin/python -m tasks.cli_reference --write   # write docs/cli.md

tests/tasks/test_cli_reference.py fails when docs/cli.md differs from what the parsers give, so an option cannot be
added, renamed or re-documented without the page following.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.cli.lmbr import build_parser as lmbr_parser
from pipeline.io import write_text
from tasks.reproduce import build_parser as reproduce_parser

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
HEADER = """# Command reference

Every option of every command, generated from their argparse definitions (`python -m tasks.cli_reference --write`;
a test fails when this page and the commands disagree). The guides are [running the pipeline](running.md) and
[deployment](deployment.md).
"""


def _cell(text: str) -> str:
    """Help text as one Markdown table cell: one line, and the characters Markdown would take for markup escaped."""
    text = " ".join(str(text).split())
    for char, escaped in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("*", "\\*")):
        text = text.replace(char, escaped)
    return text


def _argument(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    metavar = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    return {None: metavar, "?": f"[{metavar}]", "*": f"[{metavar} ...]", "+": f"{metavar} [...]"}.get(
        action.nargs, f"{metavar} x {action.nargs}") if not isinstance(action.nargs, int) else \
        " ".join([metavar] * action.nargs)


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    return f"`{action.default}`"


def render_parser(title: str, parser: argparse.ArgumentParser, level: int = 2, summary: str = "") -> str:
    """One command: its description (or `summary`, its help as a subcommand) and a table of its arguments
    (positional first), then its subcommands."""
    lines = [f"{'#' * level} `{title}`", ""]
    if parser.description or summary:
        lines += [_cell(parser.description or summary), ""]
    actions = [a for a in parser._actions if a.help != argparse.SUPPRESS
               and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    if actions:
        lines += ["| argument | value | default | what |", "|---|---|---|---|"]
        for action in sorted(actions, key=lambda a: bool(a.option_strings)):
            name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            value = _argument(action)
            lines.append(f"| {name} | {f'`{value}`' if value else ''} | {_default(action)} | {_cell(action.help or '')} |")
        lines.append("")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                lines.append(render_parser(f"{title} {name}", sub, level + 1, helps.get(name) or ""))
    return "\n".join(lines)


def reference() -> str:
    return "\n".join([HEADER, render_parser("reproduce-table", reproduce_parser()),
                      render_parser("lmbr", lmbr_parser())]).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print or write docs/cli.md from the commands' argparse definitions.")
    parser.add_argument("--write", action="store_true", help=f"write {PAGE}")
    args = parser.parse_args(argv)
    if args.write:
        write_text(PAGE, reference())
    else:
        sys.stdout.write(reference())
    return 0


if __name__ == "__main__":
    sys.exit(main())
