"""The body of a batch job: `python -m tasks.job MODULE CLASS PARAMS_JSON` builds that one task's artifact;
`... PARAMS_JSON SHARD SHARDS FOLDER` builds part SHARD of SHARDS of it into FOLDER (atomically), for the worker to
merge.

The worker that submitted the job (tasks/cluster.py) checks the artifact when the job has left the queue.
"""
from __future__ import annotations

import importlib
import json
import logging
import sys
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.io import atomic_dir, remove_stale_temporaries, write_json


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (3, 6):
        print("usage: python -m tasks.job MODULE CLASS PARAMS_JSON [SHARD SHARDS FOLDER]", file=sys.stderr)
        return 2
    module, name, params = args[:3]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    task = getattr(importlib.import_module(module), name).from_str_params(json.loads(params))
    print(f"[job] building {task}", file=sys.stderr, flush=True)
    try:
        if len(args) == 6:
            shard, shards, folder = int(args[3]), int(args[4]), Path(args[5])
            remove_stale_temporaries(folder.parent, folder.name)
            with atomic_dir(folder) as tmp:
                write_json(tmp / "part.json", {"shard": shard, "shards": shards,
                                               "stats": task.build_shard(tmp, shard, shards)})
        else:
            task.build_artifact()
    except PipelineError as e:
        print(f"[job] error: {e}", file=sys.stderr)
        return 1
    print(f"[job] done: {task.artifact_dir()}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
