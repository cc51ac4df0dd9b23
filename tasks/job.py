"""The body of a batch job: `python -m tasks.job MODULE CLASS PARAMS_JSON` builds that one task's artifact.

The worker that submitted the job (tasks/cluster.py) checks the artifact when the job has left the queue.
"""
from __future__ import annotations

import importlib
import json
import logging
import sys

from pipeline.errors import PipelineError


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m tasks.job MODULE CLASS PARAMS_JSON", file=sys.stderr)
        return 2
    module, name, params = args
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    task = getattr(importlib.import_module(module), name).from_str_params(json.loads(params))
    print(f"[job] building {task}", file=sys.stderr, flush=True)
    try:
        task.build_artifact()
    except PipelineError as e:
        print(f"[job] error: {e}", file=sys.stderr)
        return 1
    print(f"[job] done: {task.artifact_dir()}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
