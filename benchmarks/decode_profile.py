"""Benchmark: where a decoding step's time goes, on this CPU: matrix products, the ancestry kernels, the other
operations and Python.

Our Transformer decodes the same sentences as ct2_speed.py does (--model, or random weights at --profile's sizes;
--source, or synthetic sentences), batched and sorted, beam --beam, with the profile's default path (early exit, the
ancestry caches and serial small operations), in fp32 and int8. Each precision is decoded once untimed, once timed without the profiler
(--runs times, the median kept), and once under torch.profiler. The profile's operator self-times are split into:

- matrix products: the GEMMs (mm, addmm, bmm, matmul, linear, the int8 dynamic-quantized linear and its
  quantize/dequantize of the activations);
- ancestry kernels: the self-attention through the rows' ancestry and the source attention per sentence
  (pipeline/nmt/ancestry.py: numba loops, timed as ranges around their calls, with the operators inside them);
- other operations: every other torch operator (layer norms, softmax, top-k, indexing, concatenations, ...);
- Python: the rest of the profiled wall time (the interpreter, the search's own bookkeeping, the profiler's cost).

A step is one call of the model's `step`; per-step figures divide by their number. Each timed run alternates with
one that takes the candidates' top-k with torch.topk over whole rows (`plain_topk_wall_s`), the path before the
block maxima of pipeline/decode/topk.py: their ratio is that change's gain on this CPU; and with one whose step runs
every operation on all threads (`all_threads_wall_s`), without serial_small_ops (pipeline/nmt/threads.py). --isa avx2 runs the measurement
in a child process whose torch, oneDNN, MKL and FBGEMM are held to AVX2 (common.AVX2_ENV): the AVX2 variant's kernels
on an AVX-512 CPU, not its clock or memory. --trace writes each
profile as a Chrome trace (chrome://tracing, Perfetto).

    .venv/bin/python benchmarks/decode_profile.py --profile medium --threads 2 --out results/benchmarks/x.json
"""
from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import replace
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP: see beam_speed.py

from common import OWN_RESULTS, AVX2_ENV, REPO, load_model, machine, source_ids  # noqa: E402
from pipeline.config import load_profile  # noqa: E402
from pipeline.decode import SearchSettings, decode_sources  # noqa: E402
from pipeline.io import read_json, write_json  # noqa: E402
from pipeline.machine import describe_cpu  # noqa: E402
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups  # noqa: E402

import torch  # noqa: E402

GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
         "quantized::linear_dynamic", "aten::quantize_per_tensor", "aten::quantize_per_tensor_dynamic",
         "aten::dequantize", "aten::_weight_int8pack_mm", "aten::mkldnn_linear"}
ANCESTRY = "ancestry kernels"


def _ranged(function):
    """`function` called inside a profiler range named ANCESTRY."""
    def wrapper(*args, **kwargs):
        with torch.profiler.record_function(ANCESTRY):
            return function(*args, **kwargs)
    return wrapper


def split_profile(events, wall_s: float) -> dict[str, Any]:
    """The profiled operators' self-times (FunctionEvents) by category, in seconds, and the top operators."""
    seconds: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    for event in events:
        if event.name == ANCESTRY:
            continue
        self_s = event.self_cpu_time_total / 1e6
        parent, inside = event.cpu_parent, False
        while parent is not None and not inside:
            inside, parent = parent.name == ANCESTRY, parent.cpu_parent
        category = ANCESTRY if inside else "matrix products" if event.name in GEMMS else "other operations"
        seconds[category] += self_s
        by_op[event.name] += self_s
    # the ancestry ranges' own time outside torch operators is the numba loops
    for event in events:
        if event.name == ANCESTRY and (event.cpu_parent is None or event.cpu_parent.name != ANCESTRY):
            seconds[ANCESTRY] += event.self_cpu_time_total / 1e6
    seconds["python"] = max(0.0, wall_s - sum(seconds.values()))
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:15]
    return {"seconds": {k: round(v, 4) for k, v in seconds.items()},
            "share": {k: round(v / wall_s, 3) for k, v in seconds.items()},
            "top_operators_s": {name: round(s, 4) for name, s in top}}


@contextlib.contextmanager
def plain_topk():
    """Inside: the decoder's top-k is torch.topk over whole rows (the path before block maxima)."""
    import pipeline.decode.topk as topk

    blocks = topk.row_topk
    topk.row_topk = lambda grid, k: grid.topk(k, dim=1)
    try:
        yield
    finally:
        topk.row_topk = blocks


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The profile of each precision in this process."""
    import pipeline.nmt.transformer as transformer

    for name in ("attend_ancestry", "attend_sources", "cache_room"):
        setattr(transformer, name, _ranged(getattr(transformer, name)))
    torch.set_num_threads(args.threads)
    args.architecture, args.device = "transformer", "cpu"
    decode = load_profile(args.profile).decode
    ensemble, src_vocab, model_info = load_model(args)
    ids, words, data = source_ids(args, src_vocab, args.sentences)
    settings = SearchSettings(beam=args.beam, max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                              early_exit=decode.early_exit)
    results = {}
    for precision in args.precisions:
        speedups = CpuSpeedups(int8=precision == "int8", ancestry_cache=decode.ancestry_cache, serial_small_ops=True)
        # (always on here, whatever the wait policy: the alternating all-threads run gives its gain or loss)
        model = apply_speedups(ensemble.models[0], speedups)
        all_threads = apply_speedups(ensemble.models[0], replace(speedups, serial_small_ops=False))
        steps = [0]
        step = model.step

        def counted(*a, **k):
            steps[0] += 1
            return step(*a, **k)

        model.step = counted

        def run(decoder=model) -> float:
            started = time.perf_counter()
            decode_sources(decoder, ids, settings, batch_sentences=args.batch_sentences, sort=True)
            return time.perf_counter() - started

        with torch.inference_mode():
            run(), run(all_threads)
            steps[0] = 0
            timed, plain, parallel = [], [], []
            for _ in range(args.runs):
                timed.append(run())
                steps_before = steps[0]
                with plain_topk():
                    plain.append(run())
                steps[0] = steps_before
                parallel.append(run(all_threads))
            per_run_steps = steps[0] // args.runs
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                profiled_s = run()
        if args.trace:
            prof.export_chrome_trace(str(args.out.with_name(f"{args.out.stem}_{precision}_trace.json")))
        split = split_profile(prof.events(), profiled_s)
        wall = statistics.median(timed)
        results[precision] = {"wall_s": round(wall, 5), "wpm": round(60 * sum(words) / wall, 1),
                              "plain_topk_wall_s": round(statistics.median(plain), 5),
                              "topk_speedup": round(statistics.median(plain) / wall, 3),
                              "all_threads_wall_s": round(statistics.median(parallel), 5),
                              "serial_small_ops_speedup": round(statistics.median(parallel) / wall, 3),
                              "steps": per_run_steps, "ms_per_step": round(1000 * wall / max(per_run_steps, 1), 3),
                              "profiled_wall_s": round(profiled_s, 3),
                              "profiled_ms_per_step": {k: round(1000 * v / max(per_run_steps, 1), 3)
                                                       for k, v in split["seconds"].items()},
                              **split}
        shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in split["share"].items())
        print(f"{precision}: {results[precision]['ms_per_step']:.2f} ms a step ({per_run_steps} steps); {shares}; "
              f"block top-k {results[precision]['topk_speedup']:.2f}x torch.topk; serial small operations "
              f"{results[precision]['serial_small_ops_speedup']:.2f}x all threads", file=sys.stderr)
    return {"model": model_info, "data": data, "results": results,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", help="a Transformer checkpoint / artifact folder (default: random weights)")
    p.add_argument("--profile", default="medium", help="the decoding settings, and the sizes of a random model")
    p.add_argument("--random-vocab", type=int, default=8000)
    p.add_argument("--source", help="BPE source lines (default: synthetic sentences)")
    p.add_argument("--sentences", type=int, default=100)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch-sentences", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--precisions", nargs="+", default=["fp32", "int8"], choices=["fp32", "int8"])
    p.add_argument("--isa", choices=["native", "avx2"], default="native",
                   help="avx2: torch, oneDNN, MKL and FBGEMM held to AVX2 in a child process")
    p.add_argument("--trace", action="store_true", help="also write each profile as a Chrome trace beside --out")
    p.add_argument("--out", type=Path, default=OWN_RESULTS / "decode_profile.json")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # the measurement of --isa avx2, into this file
    args = p.parse_args(argv)
    if args.child:
        write_json(args.child, measure(args))
        return 0
    if args.isa == "avx2":
        child = args.out.with_name(f"{args.out.stem}_child.json")
        command = [sys.executable, str(Path(__file__).resolve()), *(argv if argv is not None else sys.argv[1:]),
                   "--child", str(child)]
        subprocess.run(command, check=True, env={**os.environ, **AVX2_ENV})
        measured = read_json(child)
        child.unlink()
    else:
        measured = measure(args)
    cpu = describe_cpu()
    write_json(args.out, {
        "benchmark": "decode_profile", "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {**machine(args.threads), "cpu_variant": cpu.variant, "isa": args.isa,
                    "isa_env": AVX2_ENV if args.isa == "avx2" else {}},
        "profile": args.profile, "beam": args.beam, "batch_sentences": args.batch_sentences, "threads": args.threads,
        "runs": args.runs, **measured})
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
