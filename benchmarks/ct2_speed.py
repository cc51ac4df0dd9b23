"""Benchmark: the same Transformer decoded by CTranslate2 and by our batched beam decoder, fp32 and int8, on the CPU.

The model (--model: an averaged Transformer, e.g. the AverageCheckpoints artifact of the medium profile; else random
weights at the --profile's sizes) is exported with pipeline/nmt/export_ct2.py. Both sides decode the same BPE
sentences in the same batches (--batch-sentences, sorted by length), with the same beam, raw scores (no length
penalty) and the same threads, and both stop a sentence the same way: CTranslate2 without length or coverage
penalty ends a sentence as soon as its best candidate of a step is EOS (its "early exit"), and ours runs with
SearchSettings.early_exit (Algorithm 1's n-best, ended once no live hypothesis can reach it; --no-early-exit keeps
Algorithm 1's B finished hypotheses, which the figures before 2026-11-28 used against CTranslate2's early exit). CTranslate2
has one length limit per call, so every batch gets one limit on both sides: the largest a * |source| + b of its
sentences (our a = 0, b = that limit: at most `limit` tokens, then EOS is forced; CTranslate2's
max_decoding_length = limit: at most `limit` steps, cut without EOS). int8: CTranslate2's compute_type int8 against
torch.ao.quantization.quantize_dynamic of our nn.Linear layers (qint8). Ours decodes as the --profile's [decode]
says, with no flags: early_exit and the CPU speed-up `ancestry_cache` (pipeline/nmt/ancestry.py: self-attention
caches that beam reorders never copy) are on in every profile, and serial_small_ops (a step's small operations on one
thread, pipeline/nmt/threads.py) where CPU decoding turns it on (passive OpenMP waiting); --no-early-exit / --no-ancestry-cache /
--no-serial-small-ops turn them off.
Each configuration is timed --runs times,
the two decoders alternating run by run, and the median is kept. Prints a table and writes JSON.

--isolate times each run in a fresh process that loads one decoder only (after an untimed warm-up run in that
process): torch and CTranslate2 each bring their own OpenMP runtime, and in one process the idle threads of one spin
while the other decodes when OMP_WAIT_POLICY=ACTIVE. Isolated runs are the like-for-like comparison with spinning
threads. --isa avx2 holds both decoders' kernels to AVX2 in those processes (torch, MKL, oneDNN, FBGEMM and
CTranslate2's own dispatch: common.AVX2_ENV): the AVX2 variant's instructions on an AVX-512 CPU, not its clock,
caches or memory.

OpenMP waiting: PASSIVE unless OMP_WAIT_POLICY is set (as in beam_speed.py), which keeps a shared machine's figures
meaningful but slows both runtimes' many small parallel regions, CTranslate2's most. On a quiet machine, also run
with OMP_WAIT_POLICY=ACTIVE (docs/benchmarks/decoding-speed.md reports both).

    .venv/bin/python benchmarks/ct2_speed.py --model work/medium/ger-eng/nmt-average/transformer-seed1-*/model.pt \\
        --source work/medium/ger-eng/subwords/newstest2016-*/bpe.de.gz --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP: see beam_speed.py

REPO = Path(__file__).resolve().parents[1]
COMPUTE_TYPES = {"fp32": "float32", "int8": "int8"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", nargs="+", help="a Transformer checkpoint / artifact folder (default: random weights)")
    p.add_argument("--profile", default="medium", help="sizes of the random-weight model")
    p.add_argument("--random-vocab", type=int, default=8000)
    p.add_argument("--source", help="BPE source lines (default: synthetic sentences)")
    p.add_argument("--sentences", type=int, default=200)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch-sentences", type=int, default=16)
    p.add_argument("--max-length-a", type=float, default=2.0)
    p.add_argument("--max-length-b", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--ancestry-cache", action=argparse.BooleanOptionalAction, default=None,
                   help="ours reads self-attention caches through the rows' ancestry (default: the profile's [decode])")
    p.add_argument("--early-exit", action=argparse.BooleanOptionalAction, default=None,
                   help="ours ends a sentence once its n-best is certain (default: the profile's [decode])")
    p.add_argument("--serial-small-ops", action=argparse.BooleanOptionalAction, default=None,
                   help="ours runs a step's small operations on one thread, its large matrix products on all "
                        "(default: as CPU decoding chooses, on with passive OpenMP waiting)")
    p.add_argument("--isolate", action="store_true",
                   help="every timed run in a fresh process of its own that loads one decoder's runtime only (each "
                        "brings its own OpenMP: alone, neither's idle threads spin beside the other's)")
    p.add_argument("--isa", choices=("native", "avx2"), default="native",
                   help="avx2: both decoders held to AVX2 (common.AVX2_ENV; implies --isolate)")
    p.add_argument("--alone", choices=("ours", "ct2"), help=argparse.SUPPRESS)  # --isolate's child processes
    p.add_argument("--precision", choices=tuple(COMPUTE_TYPES), help=argparse.SUPPRESS)
    p.add_argument("--job", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=REPO / "results/benchmarks-local/ct2_speed.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.isolate = args.isolate or args.isa == "avx2"
    if args.alone == "ct2":
        return decode_ct2_alone(args.job, args.precision, args.out)
    return compare(args, sys.argv[1:] if argv is None else list(argv))


def decode_ct2_alone(job: Path, precision: str, out: Path) -> int:
    """--isolate's CTranslate2 child: a warm-up and one timed run of the job's batches; imports neither torch nor the
    pipeline, so only CTranslate2's OpenMP runtime is in the process."""
    import ctranslate2

    spec = json.loads((job / "job.json").read_text(encoding="utf-8"))
    translator = ctranslate2.Translator(str(job / "ct2"), device="cpu", compute_type=COMPUTE_TYPES[precision],
                                        inter_threads=1, intra_threads=spec["threads"])

    translate_ct2(translator, spec["batches"], spec["beam"])  # warm-up
    started = time.perf_counter()
    results = translate_ct2(translator, spec["batches"], spec["beam"])
    seconds = time.perf_counter() - started
    out.write_text(json.dumps({"seconds": seconds, "best": [r.hypotheses[0] for r in results]}), encoding="utf-8")
    return 0


def translate_ct2(translator, batches: list, beam: int) -> list:
    """CTranslate2's results for (source tokens, length limit) batches, with the settings ours is compared under."""
    return [r for tokens, limit in batches for r in translator.translate_batch(
        tokens, beam_size=beam, patience=1, length_penalty=0, min_decoding_length=0, max_decoding_length=limit,
        return_scores=True)]


def target_vocabulary(model, args):
    from pipeline.vocab import Vocabulary

    if args.model:
        from pipeline.decode.translate import load_models

        return load_models(args.model, "cpu").tgt_vocab
    return Vocabulary.build([[f"w{i}" for i in range(args.random_vocab - 4)]])


def run_alone(argv: list[str], side: str, precision: str, job: Path, env: dict) -> dict:
    """One timed run of `side` in a fresh process (--isolate) with `env` added to this one's environment: its
    "seconds" and "best" (the 1-best of every sentence)."""
    out = job / f"{side}-{precision}.json"
    command = [sys.executable, str(Path(__file__).resolve()), *argv, "--alone", side, "--precision", precision,
               "--job", str(job), "--out", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env={**os.environ, **env})
    return json.loads(out.read_text(encoding="utf-8"))


def compare(args: argparse.Namespace, argv: list[str]) -> int:
    from common import AVX2_ENV, load_model, machine, source_ids
    from pipeline.config import load_profile
    from pipeline.decode import SearchSettings, decode_sources, make_batches
    from pipeline.decode.scores import max_output_lengths
    from pipeline.decode.speed import timed, tokens_of
    from pipeline.io import write_json
    from pipeline.nmt.export_ct2 import export_model
    from pipeline.nmt.speedups import CpuSpeedups, apply_speedups
    import torch

    args.architecture, args.device = "transformer", "cpu"
    decode = load_profile(args.profile).decode  # the default path: what the profile's decoding runs with
    args.ancestry_cache = decode.ancestry_cache if args.ancestry_cache is None else args.ancestry_cache
    args.early_exit = decode.early_exit if args.early_exit is None else args.early_exit
    if args.serial_small_ops is None:
        args.serial_small_ops = CpuSpeedups.of(decode).serial_small_ops

    at_start = machine(args.threads)  # the load average before any run
    # --isolate's parent decodes nothing: one thread, so that no idle OpenMP thread of its own spins beside a child
    torch.set_num_threads(1 if args.isolate and not args.alone else args.threads)
    ensemble, src_vocab, model_info = load_model(args)
    model = ensemble.models[0]
    if model.config.architecture != "transformer":
        raise SystemExit("ct2_speed.py compares Transformers only")
    tgt_vocab = target_vocabulary(model, args)
    ids, words, data = source_ids(args, src_vocab, args.sentences)
    limits = max_output_lengths(torch.tensor([len(s) for s in ids]), args.max_length_a, args.max_length_b).tolist()
    batches = []  # (our source ids, CTranslate2's source tokens, the batch's length limit)
    for batch in make_batches([len(s) for s in ids], args.batch_sentences, sort=True):
        batches.append(([ids[i] for i in batch], [src_vocab.decode(ids[i][:-1]) for i in batch],  # CT2 adds EOS
                        max(limits[i] for i in batch)))
    speedups = CpuSpeedups(ancestry_cache=args.ancestry_cache, serial_small_ops=args.serial_small_ops)
    precisions = (args.precision,) if args.alone else tuple(COMPUTE_TYPES)

    def run_ours(precision: str):
        ours = apply_speedups(model, replace(speedups, int8=precision == "int8"))
        return lambda: [h for sources, _, limit in batches for h in decode_sources(
            ours, sources, SearchSettings(beam=args.beam, max_length_a=0.0, max_length_b=limit,
                                          early_exit=args.early_exit),
            batch_sentences=len(sources), sort=False)]

    if args.alone == "ours":  # --isolate's child: a warm-up, then one timed run
        with torch.inference_mode():
            run = run_ours(args.precision)
            run()
            seconds, out = timed(1, run)
        args.out.write_text(json.dumps({"seconds": seconds, "best": [h[0] for h in tokens_of(out)],
                                        "cpu_capability": torch.backends.cpu.get_cpu_capability()}),
                            encoding="utf-8")
        return 0

    results = {}
    with tempfile.TemporaryDirectory(prefix="ct2_speed-") as tmp, torch.inference_mode():
        job = Path(tmp)
        export_model(model, src_vocab, tgt_vocab, job / "ct2")
        (job / "job.json").write_text(json.dumps({"threads": args.threads, "beam": args.beam,
                                                  "batches": [[tokens, limit] for _, tokens, limit in batches]}),
                                      encoding="utf-8")
        env = AVX2_ENV if args.isa == "avx2" else {}
        for precision in precisions:
            ct2_runs, ours_runs = [], []
            if args.isolate:
                for _ in range(args.runs):  # alternating, each run alone in its process
                    ct2_alone = run_alone(argv, "ct2", precision, job, env)
                    ct2_runs.append(ct2_alone["seconds"])
                    ours_alone = run_alone(argv, "ours", precision, job, env)
                    ours_runs.append(ours_alone["seconds"])
                ct2_best, ours_best = ct2_alone["best"], [tuple(t) for t in ours_alone["best"]]
                ours_capability = ours_alone["cpu_capability"]
            else:
                import ctranslate2

                translator = ctranslate2.Translator(str(job / "ct2"), device="cpu",
                                                    compute_type=COMPUTE_TYPES[precision], inter_threads=1,
                                                    intra_threads=args.threads)

                def run_ct2():
                    return translate_ct2(translator, [(tokens, limit) for _, tokens, limit in batches], args.beam)

                ours = run_ours(precision)
                run_ct2(), ours()  # warm-up
                for _ in range(args.runs):  # alternating, so both sides see the same machine load
                    seconds, ct2_out = timed(1, run_ct2)
                    ct2_runs.append(seconds)
                    seconds, ours_out = timed(1, ours)
                    ours_runs.append(seconds)
                ct2_best = [r.hypotheses[0] for r in ct2_out]
                ours_best = [t[0] for t in tokens_of(ours_out)]
                ours_capability = torch.backends.cpu.get_cpu_capability()
            ct2_s, ours_s = statistics.median(ct2_runs), statistics.median(ours_runs)
            ct2_tokens = [tuple(tgt_vocab.encode(h)) for h in ct2_best]
            agree = sum(a == b for a, b in zip(ours_best, ct2_tokens))
            results[precision] = {
                "ct2_seconds": round(ct2_s, 3), "ours_seconds": round(ours_s, 3),
                "ct2_wpm": round(60 * sum(words) / ct2_s, 1), "ours_wpm": round(60 * sum(words) / ours_s, 1),
                "ct2_over_ours": round(ours_s / ct2_s, 2), "ours_over_ct2": round(ct2_s / ours_s, 2),
                "ratio_per_run": [round(c / o, 3) for c, o in zip(ct2_runs, ours_runs)],
                "ct2_runs_s": [round(x, 3) for x in ct2_runs], "ours_runs_s": [round(x, 3) for x in ours_runs],
                "same_1best_sentences": agree,
                "ours_target_tokens": sum(len(t) for t in ours_best),
                "ct2_target_tokens": sum(len(t) for t in ct2_tokens),
                "ours_cpu_capability": ours_capability}  # torch's kernels: what --isa avx2 holds them to
            r = results[precision]
            print(f"{precision}: CTranslate2 {r['ct2_wpm']:8.0f} wpm, ours {r['ours_wpm']:8.0f} wpm: CTranslate2 is "
                  f"{r['ct2_over_ours']:.2f}x ours; same 1-best on {agree}/{len(ids)} sentences", file=sys.stderr)
    import ctranslate2

    summary = {"benchmark": "ct2_speed", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "machine": {**at_start, "load_average_at_end": os.getloadavg()},
               "ctranslate2": ctranslate2.__version__, "model": model_info, "data": data, "beam": args.beam,
               "batch_sentences": args.batch_sentences, "threads": args.threads, "runs": args.runs,
               "isolated": args.isolate, "isa": args.isa, "isa_env": AVX2_ENV if args.isa == "avx2" else {},
               "length_limits": f"per batch: max over its sentences of {args.max_length_a} * |source| + "
                                f"{args.max_length_b}", "sentence_order": "sorted by length, longest first",
               "ours_settings": {"early_exit": args.early_exit, "ancestry_cache": args.ancestry_cache,
                                 "serial_small_ops": args.serial_small_ops},
               "ct2_settings": {"patience": 1, "length_penalty": 0, "min_decoding_length": 0,
                                "max_decoding_length": "the batch's limit", "inter_threads": 1,
                                "intra_threads": args.threads},
               "int8": {"ours": "torch.ao.quantization.quantize_dynamic(nn.Linear, qint8) (apply_speedups)",
                        "ct2": "compute_type=int8"},
               "results": results}
    write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
