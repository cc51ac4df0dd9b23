"""`lmbr export-pretrained --base DIR -o DIR [--model NAME]`: an exported system whose NMT is a pretrained
`transformers` model (PNMT, LPNMT, PNMT-lat, LPNMT-lat), over an exported system's PBMT and settings
(pipeline/deploy/pretrained_export.py). The model defaults to the base task's `[pretrained] model` (its task
config), the system to the base's counterpart (LNMT -> LPNMT)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline import config as configs
from pipeline.deploy.system import PRETRAINED_KINDS
from pipeline.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export-pretrained", help="export a system whose NMT is a pretrained transformers model, "
                                                         "over an exported system's PBMT and settings")
    p.add_argument("--base", required=True, help="an exported NMT system of the task (e.g. systems/ger-eng/LNMT), "
                                                 "with the settings the system needs")
    p.add_argument("-o", "--output", required=True, help="the system folder to write")
    p.add_argument("--model", help="a model folder or a hub name (default: the base task's [pretrained] model)")
    p.add_argument("--system", choices=list(PRETRAINED_KINDS), help="the system: the model alone, with LMBR, inside "
                                                                    "the lattice (default: what the base does)")
    p.add_argument("--nmt-lambda", type=float, help="lambda: the weight of the model's log-probabilities against L "
                                                    "(default: the base's)")
    p.add_argument("--link", action="store_true", help="name the model's files by path, their sha256s in the "
                                                       "manifest, instead of copying them into the folder")
    p.add_argument("--config-dir", help="folder of tasks/*.toml, for --model's default (default: the checkout's "
                                         "configs)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.data.resolver import CHECKOUT
    from pipeline.deploy.manifest import read_manifest
    from pipeline.deploy.pretrained_export import export_pretrained_system

    model = args.model
    if model is None:
        task = read_manifest(Path(args.base), verify=False).get("task")
        config = configs.load_task(task, Path(args.config_dir) if args.config_dir else configs.CONFIG_DIR)
        model = config.pretrained.location(CHECKOUT)
        if model is None:
            raise ConfigError(f"{config.path}: key 'pretrained.model' is not set: give --model")
    system = export_pretrained_system(model, Path(args.base), Path(args.output), args.system,
                                      nmt_lambda=args.nmt_lambda, link=args.link)
    print(f"{system.name}: {system.folder} ({len(system.manifest['files'])} files, model {model})", file=sys.stderr)
    return 0
