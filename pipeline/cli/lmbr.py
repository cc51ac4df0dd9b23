"""`lmbr`: the toolbox command. Each subcommand lives in its own module and registers itself here."""
from __future__ import annotations

import argparse
import logging
import sys

from pipeline.cli import (bleu_command, config_command, data_command, export_command, pbmt_command, posteriors_command,
                          serve_command, text_commands, train_jobs_command, translate_command)
from pipeline.errors import PipelineError

SUBCOMMANDS = (bleu_command, config_command, data_command, export_command, pbmt_command, posteriors_command,
               serve_command, text_commands, train_jobs_command, translate_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmbr", description="Hybrid SMT+NMT translation with LMBR posteriors.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args) or 0
    except (PipelineError, FileNotFoundError) as e:
        print(f"lmbr {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
