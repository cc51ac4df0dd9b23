"""Benchmark: train a 5-gram with KenLM's real lmplz + build_binary on the first N lines of a corpus.

Reports the median wall time (lmplz + build_binary), the ARPA size and the dev perplexity over
--runs runs, prints a table and writes JSON. Run from anywhere:

    .venv/bin/python benchmarks/lm_train.py --lines 50000 --runs 3
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.io import write_json  # noqa: E402
from pipeline.lm import KenlmTools, perplexity, train_lm  # noqa: E402


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_lines(path: Path, n: int) -> list[str]:
    """The first N lines of a (possibly gzipped) text file, whitespace-normalised."""
    with _open_text(path) as f:
        return [" ".join(line.split()) for line in islice(f, n)]


def _oov_rate(model_path: Path, lines: list[str]) -> float:
    """Share of dev words (not counting </s>) outside the model's vocabulary."""
    import kenlm

    model = kenlm.Model(str(model_path))
    words = [w for line in lines for w in line.split()]
    return sum(w not in model for w in words) / max(len(words), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data = Path(os.environ.get("MT_DATA_DIR", "")) if os.environ.get("MT_DATA_DIR") else None
    parser.add_argument("--text", type=Path, default=data / "de-en/train.en.gz" if data else None, required=not data,
                        help="training text (default: $MT_DATA_DIR/de-en/train.en.gz)")
    parser.add_argument("--dev", type=Path, default=data / "de-en/dev.en.gz" if data else None, required=not data,
                        help="held-out text (default: $MT_DATA_DIR/de-en/dev.en.gz)")
    parser.add_argument("--lines", type=int, default=50000)
    parser.add_argument("--dev-lines", type=int, default=1000)
    parser.add_argument("--order", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory", default="1G", help="lmplz -S")
    parser.add_argument("--tools", type=Path, default=REPO / "tools")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks-local/lm_train.json")
    args = parser.parse_args(argv)

    tools = KenlmTools.locate(args.tools)
    text = read_lines(args.text, args.lines)
    dev = read_lines(args.dev, args.dev_lines)
    runs = []
    with tempfile.TemporaryDirectory(prefix="lm_train_bench-") as tmp:
        for i in range(args.runs):
            out_dir = Path(tmp) / f"run{i}"
            start = time.perf_counter()
            result = train_lm(text, out_dir, args.order, tools, memory=args.memory)
            wall = time.perf_counter() - start
            runs.append({"seconds": wall, "arpa_bytes": result.arpa.stat().st_size,
                         "binary_bytes": result.binary.stat().st_size,
                         "dev_perplexity": perplexity(result.binary, dev),
                         "dev_oov_rate": _oov_rate(result.binary, dev),
                         "ngram_counts": {str(k): v for k, v in result.ngram_counts.items()}})
            shutil.rmtree(out_dir)  # keep the disk (and page cache) state the same for every run
            print(f"run {i + 1}/{args.runs}: {wall:.2f} s", file=sys.stderr)

    summary = {
        "benchmark": "lm_train",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "text": str(args.text.resolve()), "lines": len(text),
        "tokens": sum(len(line.split()) for line in text),
        "dev": str(args.dev.resolve()), "dev_lines": len(dev),
        "order": args.order, "memory": args.memory, "runs": args.runs,
        "median_seconds": statistics.median(r["seconds"] for r in runs),
        "arpa_bytes": runs[0]["arpa_bytes"], "binary_bytes": runs[0]["binary_bytes"],
        "dev_perplexity": statistics.median(r["dev_perplexity"] for r in runs),
        "dev_oov_rate": runs[0]["dev_oov_rate"],
        "ngram_counts": runs[0]["ngram_counts"],
        "per_run": runs,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                    "lmplz_threads": "no thread option in lmplz (KenLM 0.3.0): its stream stages run as threads"},
    }
    rows = [("lines", f"{summary['lines']}"), ("tokens", f"{summary['tokens']}"),
            ("order", f"{args.order}"), ("runs", f"{args.runs}"),
            ("median wall s (lmplz+build_binary)", f"{summary['median_seconds']:.3f}"),
            ("per-run s", " ".join(f"{r['seconds']:.3f}" for r in runs)),
            ("ARPA MB", f"{summary['arpa_bytes'] / 1e6:.1f}"),
            ("binary MB", f"{summary['binary_bytes'] / 1e6:.1f}"),
            ("n-grams", " ".join(f"{k}:{v}" for k, v in summary["ngram_counts"].items())),
            (f"dev perplexity ({len(dev)} lines)", f"{summary['dev_perplexity']:.2f}"),
            ("dev OOV rate", f"{summary['dev_oov_rate']:.2%}"),
            ("cpu_count", f"{os.cpu_count()}")]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
