"""Benchmark: building the phrase table (extract, sort and count, score), this checkout beside another one.

Builds the phrase table of a task's training data (the profile's truecased words and symmetrised alignment, Luigi
artifacts under --work-dir; ``--build`` builds what is missing) with this checkout's code and, with ``--reference
DIR``, with the code of another checkout of the repository (``git worktree add /tmp/ref <commit>``). The runs
alternate between the two, each in its own process, so that both see the same machine load; every run's Moses
text table and fast form are hashed, and the report says whether the two checkouts wrote the same bytes.

    .venv/bin/python benchmarks/phrase_table.py --task eng-ger --reference /tmp/ref --runs 3
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, artifact_arguments, machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402

# Run in a child process with the checkout to measure first on sys.path; argv: checkout, words, links, source,
# target, max phrase length, output folder. Prints the statistics of build_phrase_table and the files' sha256.
CHILD = """
import hashlib, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from pipeline.io import read_lines
from pipeline.smt.align import parse_links
from pipeline.smt.phrase_scoring import build_phrase_table
words, links, out = Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[7])
started = time.perf_counter()
stats = build_phrase_table((l.split() for l in read_lines(words / f"words.{sys.argv[4]}.gz")),
                           (l.split() for l in read_lines(words / f"words.{sys.argv[5]}.gz")),
                           (parse_links(l) for l in read_lines(links / "links.gdfa.gz")), int(sys.argv[6]),
                           out / "table.gz", out / "table.npz", tmp_dir=out, threads=1)
stats["seconds"] = time.perf_counter() - started
stats["sha256"] = {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in ("table.gz", "table.npz")}
print(json.dumps(stats))
"""


def locate(args: argparse.Namespace) -> tuple[Path, Path, str, str, int]:
    """The truecased training words, the alignment, the language codes and the profile's phrase length."""
    import luigi

    from tasks.smt import AlignWords, BuildPhraseTable

    task = BuildPhraseTable(task_name=args.task, profile=args.profile, work_dir=str(args.work_dir),
                            config_dir=str(args.config_dir))
    inputs = task.requires()
    if args.build and not all(t.complete() for t in inputs.values()):
        luigi.build(list(inputs.values()), local_scheduler=True, workers=1)
    missing = [name for name, t in inputs.items() if not t.complete()]
    if missing:
        sys.exit(f"phrase_table.py: the {' and '.join(missing)} artifacts of {args.task} ({args.profile}) are not "
                 f"built under {args.work_dir}; pass --build")
    assert isinstance(inputs["align"], AlignWords)
    return (inputs["words"].artifact_dir(), inputs["align"].artifact_dir(), task.config.source, task.config.target,
            task.profile_config.pbmt.max_phrase_length)


def run_once(checkout: Path, inputs: tuple, scratch: Path) -> dict:
    words, links, source, target, max_length = inputs
    with tempfile.TemporaryDirectory(dir=scratch) as out:
        result = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(words), str(links), source, target,
                                 str(max_length), out], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"phrase_table.py: the build with {checkout} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def summary(runs: list[dict]) -> dict:
    phases = {name: statistics.median(r["timings"][name] for r in runs) for name in runs[0]["timings"]}
    return {"median_seconds": round(statistics.median(r["seconds"] for r in runs), 2),
            "median_phase_seconds": {k: round(v, 2) for k, v in phases.items()},
            "phrase_pairs": runs[0]["phrase_pairs"], "sha256": runs[0]["sha256"],
            "same_output_every_run": all(r["sha256"] == runs[0]["sha256"] for r in runs), "runs": runs}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    artifact_arguments(p, "eng-ger")
    p.add_argument("--build", action="store_true", help="build the missing tokenization/truecasing/alignment")
    p.add_argument("--reference", type=Path, help="another checkout of the repository, timed beside this one")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--json", type=Path, default=REPO / "results" / "benchmarks-local" / "phrase_table.json")
    args = p.parse_args(argv)
    inputs = locate(args)
    checkouts = {"this": REPO, **({"reference": args.reference.resolve()} if args.reference else {})}
    runs: dict[str, list[dict]] = {name: [] for name in checkouts}
    for run in range(args.runs):
        for name, checkout in checkouts.items():
            runs[name].append(run_once(checkout, inputs, args.scratch))
            print(f"run {run + 1}/{args.runs} {name}: {runs[name][-1]['seconds']:.1f} s "
                  f"{runs[name][-1]['timings']}", flush=True)
    report = {"machine": machine(1),
              "task": args.task, "profile": args.profile, "sort_threads": 1,
              "checkouts": {name: str(path) for name, path in checkouts.items()},
              **{name: summary(r) for name, r in runs.items()}}
    if args.reference:
        report["speedup"] = round(report["reference"]["median_seconds"] / report["this"]["median_seconds"], 2)
        report["identical_outputs"] = report["reference"]["sha256"] == report["this"]["sha256"]
        print(f"median {report['this']['median_seconds']} s against {report['reference']['median_seconds']} s "
              f"({report['speedup']}x); identical outputs: {report['identical_outputs']}")
    write_json(args.json, report)


if __name__ == "__main__":
    main()
