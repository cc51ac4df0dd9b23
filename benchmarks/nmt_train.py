"""Benchmark: NMT training throughput (target tokens per second) of the GRU and Transformer models, against an
earlier commit's trainer side by side, with the loss curves of both.

Models at a profile's sizes (default: medium), trained with the pipeline's own Trainer.train_step (Adam, label
smoothing, clipping) on token-count batches of the profile's size. Each timed run is a fresh process that builds a
fresh model, does --warmup untimed updates, then --updates timed ones. With --baseline REF the same runs are also
made with the trainer of commit REF (its pipeline/ and configs/ from `git archive`), alternating run by run with
the current code, so both see the same machine load; the table gives the medians and their ratio.

--loss-updates N also trains each variant for N updates from the same seed and compares the per-token training
loss in windows of --loss-window updates (a change that is not exact must stay within a stated bound).

On a CPU that computes bfloat16 natively (avx512_bf16 or AMX) the current code is also measured with the profile's
precision set to "auto" (bf16 autocast), as a third variant. --compile adds the current code trained through
torch.compile (the profile's `compile = true`), in fp32 and, where native, bf16; their runs get --compile-warmup
untimed updates, so that compiling and the recompiles of the first batch shapes stay out of the timing.

Data: the BPE training text and vocabularies of a translation task when a work folder holds them (ApplyBPE and
BuildVocab artifacts, e.g. after `luigi --module tasks BuildVocab --task-name chi-eng --profile medium`),
else synthetic sentences (random ids, lengths drawn like the real ones: 5-60 tokens).

    .venv/bin/python benchmarks/nmt_train.py --threads 2 --runs 3 --work-dir work --task chi-eng \
        --baseline be169a7 --loss-updates 300
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
if "--code-root" in sys.argv:  # a worker measuring another commit's trainer: its pipeline/ comes first
    sys.path.insert(0, sys.argv[sys.argv.index("--code-root") + 1])
else:
    sys.path.insert(0, str(REPO))
sys.path.insert(1, str(HERE))

import torch  # noqa: E402

from common import first_lines, machine, newest_artifact  # noqa: E402
from pipeline.config import load_profile  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402
from pipeline.nmt.models import limit_vocabulary, model_config  # noqa: E402
from pipeline.nmt.precision import training_precision  # noqa: E402
from pipeline.nmt.train import ParallelText, Trainer  # noqa: E402
from pipeline.vocab import Vocabulary  # noqa: E402


def real_data(work_dir: Path, profile: str, task: str, lines: int) -> tuple[ParallelText, Vocabulary, Vocabulary,
                                                                              dict] | None:
    """The first `lines` BPE training pairs of a task and its vocabularies, if the work folder has them."""
    from pipeline.config import load_task

    config = load_task(task)
    root = work_dir / profile / task
    subwords, vocab = newest_artifact(root, "subwords", config.splits.train), newest_artifact(root, "vocab", "vocab")
    if subwords is None or vocab is None:
        return None
    src, tgt = config.source, config.target
    sources = [line.split() for line in first_lines(subwords / f"bpe.{src}.gz", lines)]
    targets = [line.split() for line in first_lines(subwords / f"bpe.{tgt}.gz", lines)]
    return (ParallelText(sources, targets), Vocabulary.load(vocab / f"vocab.{src}.json"),
            Vocabulary.load(vocab / f"vocab.{tgt}.json"),
            {"kind": "real", "task": task, "bpe": str(subwords), "vocab": str(vocab)})


def synthetic_data(lines: int, vocab_size: int, seed: int = 0) -> tuple[ParallelText, Vocabulary, Vocabulary, dict]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab_size - 4)]
    vocab = Vocabulary.build([words])
    sources, targets = [], []
    for _ in range(lines):
        n = min(60, max(5, int(rng.lognormvariate(3.1, 0.5))))
        sources.append(rng.choices(words, k=n))
        targets.append(rng.choices(words, k=max(1, int(n * rng.uniform(0.8, 1.2)))))
    return ParallelText(sources, targets), vocab, vocab, {"kind": "synthetic", "vocab_size": vocab_size}


def load_data(args: argparse.Namespace) -> tuple[ParallelText, Vocabulary, Vocabulary, dict]:
    return (real_data(args.work_dir, args.profile, args.task, args.lines)
            or synthetic_data(args.lines, args.synthetic_vocab))


def make_trainer(architecture: str, profile_name: str, data, src_vocab, tgt_vocab, seed: int, state_dir: Path,
                 device: str, precision: str = "", compiled: bool = False) -> Trainer:
    """A fresh trainer at the profile's sizes; `precision` overrides the profile's (before the device decides),
    `compiled` sets the profile's `compile`."""
    arch = getattr(load_profile(profile_name).nmt, architecture)
    training = dataclasses.replace(arch.training, precision=precision) if precision else arch.training
    if compiled:
        training = dataclasses.replace(training, compile=True)
    src_vocab, tgt_vocab = limit_vocabulary(src_vocab, arch.vocab_size), limit_vocabulary(tgt_vocab, arch.vocab_size)
    config = model_config(architecture, arch, src_vocab, tgt_vocab)
    resolved = training_precision(training.precision, torch.device(device))
    return Trainer(config, training, seed=seed, src_vocab=src_vocab, tgt_vocab=tgt_vocab, train=data,
                   state_dir=state_dir, device=device, precision=resolved)


def stepper(trainer: Trainer):
    """One update of `trainer` as (number of sentences, target tokens, per-token loss as a float), for the current
    trainer (an UpdateStream of prepared updates) and for earlier ones (a BatchStream of example ids)."""
    if hasattr(trainer, "updates"):
        def step() -> tuple[int, int, float]:
            update = next(trainer.updates)
            loss, _, tokens = trainer.train_step(update)
            return sum(len(i) for i in update.ids), tokens, float(loss) / tokens
    else:
        def step() -> tuple[int, int, float]:
            ids = next(trainer.stream)
            loss, _, tokens = trainer.train_step(ids)
            return len(ids), tokens, float(loss) / tokens
    return step


def worker(args: argparse.Namespace) -> dict:
    """One measurement in this process: a timed run (--updates after --warmup) or a loss curve (--loss-updates)."""
    torch.set_num_threads(args.threads)
    data, src_vocab, tgt_vocab, _ = load_data(args)
    with tempfile.TemporaryDirectory(prefix="nmt_train_bench-") as tmp:
        trainer = make_trainer(args.architectures, args.profile, data, src_vocab, tgt_vocab, args.seed, Path(tmp),
                               args.device, args.precision, args.compiled)
        trainer.model.train()
        step = stepper(trainer)
        result = {"parameters": trainer.model.num_parameters(), "precision": trainer.precision,
                  "max_tokens": trainer.training.max_tokens}
        if args.loss_updates:
            result["losses"] = [step()[2] for _ in range(args.loss_updates)]
            return result
        for _ in range(args.warmup):
            step()
        sentences, tokens = [], 0
        started = time.perf_counter()
        for _ in range(args.updates):
            rows, ntokens, _ = step()  # the float() of the loss waits for the device, as before the change
            sentences.append(rows)
            tokens += ntokens
        if args.device.startswith("cuda"):
            torch.cuda.synchronize(args.device)
        seconds = time.perf_counter() - started
    return {**result, "target_tokens_per_s": tokens / seconds, "seconds": seconds, "target_tokens": tokens,
            "mean_batch_sentences": statistics.mean(sentences), "mean_batch_target_tokens": tokens / args.updates}


Variant = tuple[Path, str, bool]  # code root, precision override ("" the profile's), trained through torch.compile


def spawn(args: argparse.Namespace, architecture: str, variant: Variant, loss_updates: int = 0) -> dict:
    """A worker process of this script measuring `variant`; its JSON result."""
    code_root, precision, compiled = variant
    warmup = args.compile_warmup if compiled else args.warmup
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--code-root", str(code_root),
                   "--architectures", architecture, "--profile", args.profile, "--threads", str(args.threads),
                   "--device", args.device, "--warmup", str(warmup), "--updates", str(args.updates),
                   "--work-dir", str(args.work_dir), "--task", args.task, "--lines", str(args.lines),
                   "--synthetic-vocab", str(args.synthetic_vocab), "--seed", str(args.seed),
                   "--loss-updates", str(loss_updates), "--worker-out", out.name]
        if precision:
            command += ["--precision", precision]
        if compiled:
            command.append("--compiled")
        subprocess.run(command, check=True, env={**os.environ, "TQDM_DISABLE": "1"})
        return json.loads(Path(out.name).read_text())


def snapshot(ref: str, into: Path) -> Path:
    """pipeline/ and configs/ of commit `ref` in `into` (what a worker needs to build that commit's trainer)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "pipeline", "configs"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def loss_windows(curves: dict[str, list[float]], window: int) -> list[dict]:
    """Mean per-token training loss of each variant in consecutive windows of updates."""
    length = min(len(c) for c in curves.values())
    return [{"updates": f"{start + 1}-{start + window}",
             **{name: round(statistics.mean(c[start:start + window]), 4) for name, c in curves.items()}}
            for start in range(0, length - window + 1, window)]


def compare(args: argparse.Namespace) -> dict:
    """Every variant of every architecture: timed runs alternating variant by variant, then the loss curves."""
    from pipeline.nmt.precision import cpu_has_native_bf16

    with tempfile.TemporaryDirectory(prefix="nmt_train_baseline-") as tmp:
        native_bf16 = args.device != "cpu" or cpu_has_native_bf16()
        variants: dict[str, Variant] = {"current": (REPO, "", False)}
        if args.baseline:
            variants = {f"baseline {args.baseline}": (snapshot(args.baseline, Path(tmp)), "", False), **variants}
        if args.device == "cpu" and native_bf16:
            variants["current bf16"] = (REPO, "auto", False)
        if args.compile:
            variants["current compiled"] = (REPO, "", True)
            if native_bf16:
                variants["current bf16 compiled"] = (REPO, "auto", True)
        results = []
        for arch in args.architectures.split(","):
            runs: dict[str, list[dict]] = {name: [] for name in variants}
            for run in range(args.runs):
                for name, variant in variants.items():
                    runs[name].append(spawn(args, arch, variant))
                    print(f"{arch} {name} run {run + 1}/{args.runs}: "
                          f"{runs[name][-1]['target_tokens_per_s']:.0f} target tokens/s", file=sys.stderr)
            entry = {"architecture": arch, "variants": {}}
            for name, measured in runs.items():
                speeds = [m["target_tokens_per_s"] for m in measured]
                entry["variants"][name] = {
                    "parameters": measured[0]["parameters"], "precision": measured[0]["precision"],
                    "max_tokens": measured[0]["max_tokens"],
                    "mean_batch_sentences": statistics.mean(m["mean_batch_sentences"] for m in measured),
                    "mean_batch_target_tokens": statistics.mean(m["mean_batch_target_tokens"] for m in measured),
                    "target_tokens_per_s_runs": [round(v, 1) for v in speeds],
                    "median_target_tokens_per_s": round(statistics.median(speeds), 1)}
            if args.baseline:
                base = entry["variants"][f"baseline {args.baseline}"]["median_target_tokens_per_s"]
                entry["speedup_over_baseline"] = {
                    name: round(v["median_target_tokens_per_s"] / base, 3)
                    for name, v in entry["variants"].items() if not name.startswith("baseline")}
            if args.loss_updates:
                curves = {name: spawn(args, arch, variant, args.loss_updates)["losses"]
                          for name, variant in variants.items()}
                windows = loss_windows(curves, args.loss_window)
                names = list(curves)
                entry["loss_curve"] = {"updates": args.loss_updates, "window": args.loss_window, "seed": args.seed,
                                       "windows": windows,
                                       "max_abs_window_difference": {
                                           f"{other} vs {names[0]}": round(max(abs(w[other] - w[names[0]])
                                                                               for w in windows), 4)
                                           for other in names[1:]},
                                       "bound": args.loss_bound}
                entry["loss_curve"]["within_bound"] = all(
                    d <= args.loss_bound for d in entry["loss_curve"]["max_abs_window_difference"].values())
            results.append(entry)
    return {"results": results}


def trace(architecture: str, profile_name: str, data, src_vocab, tgt_vocab, warmup: int, updates: int,
          device: str) -> dict:
    """Where an update's time goes: seconds spent waiting for the next update's batches against seconds in
    train_step (synchronised on a GPU), then torch.profiler over `updates` updates: the top operators by self time
    on the device and on the CPU."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    with tempfile.TemporaryDirectory(prefix="nmt_train_trace-") as tmp:
        trainer = make_trainer(architecture, profile_name, data, src_vocab, tgt_vocab, 1, Path(tmp), device)
        trainer.model.train()
        for _ in range(warmup):
            trainer.train_step(next(trainer.updates))
        batching = stepping = 0.0
        for _ in range(updates):
            sync()
            t0 = time.perf_counter()
            update = next(trainer.updates)
            t1 = time.perf_counter()
            trainer.train_step(update)
            sync()
            batching, stepping = batching + t1 - t0, stepping + time.perf_counter() - t1
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities) as prof:
            for _ in range(updates):
                trainer.train_step(next(trainer.updates))
            sync()
        trainer.updates.close()
    events = prof.key_averages()

    def top(key: str) -> list[dict]:
        ranked = sorted(events, key=lambda e: getattr(e, key, 0.0), reverse=True)[:25]
        return [{"op": e.key, "calls": e.count, "self_cpu_ms": round(e.self_cpu_time_total / 1e3, 3),
                 "self_device_ms": round(getattr(e, "self_device_time_total", 0.0) / 1e3, 3)} for e in ranked]

    result = {"architecture": architecture, "updates": updates,
              "batching_s_per_update": batching / updates, "train_step_s_per_update": stepping / updates,
              "top_by_self_cpu": top("self_cpu_time_total")}
    if cuda:
        result["top_by_self_device"] = top("self_device_time_total")
    print(f"{architecture}: batching {1e3 * batching / updates:.1f} ms, train_step {1e3 * stepping / updates:.1f} ms "
          "per update", file=sys.stderr)
    print(prof.key_averages().table(sort_by="self_cuda_time_total" if cuda else "self_cpu_time_total",
                                    row_limit=20), file=sys.stderr)
    return result


def dev_bleu(task: str, profile: str, work_dir: Path, architecture: str, threads: int) -> dict:
    """Greedy BLEU on the whole tuning set of the model that AverageCheckpoints builds (training it first through
    Luigi if needed: that takes the profile's budget)."""
    import luigi

    from pipeline.evaluation import corpus_bleu
    from pipeline.nmt.token_batches import source_ids
    from pipeline.nmt.checkpoint import load_checkpoint, load_vocabularies, model_from_checkpoint
    from pipeline.nmt.greedy import translate_ids
    from pipeline.text import TextProcessor, get_tokenizer
    from tasks import AverageCheckpoints, TrainNMT
    from tasks.data import ApplyBPE, TokenizeSplit, TrainTruecaser, load_truecaser

    common = {"task_name": task, "profile": profile, "work_dir": str(work_dir), "processes": threads,
              "cache_dir": str(REPO / "cache"), "tools_dir": str(REPO / "tools")}
    averaged = AverageCheckpoints(architecture=architecture, seed=1, **common)
    if not luigi.build([averaged], local_scheduler=True, workers=1, log_level="WARNING"):
        raise RuntimeError(f"AverageCheckpoints failed for {task} {architecture}")
    config, tune = averaged.config, averaged.config.splits.tune
    ckpt = load_checkpoint(averaged.artifact_dir() / "model.pt")
    src_vocab, tgt_vocab = load_vocabularies(ckpt)
    model = model_from_checkpoint(ckpt)
    bpe = ApplyBPE(split=tune, **common).artifact_dir()
    sources = [source_ids(line.split(), src_vocab) for line in read_lines(bpe / f"bpe.{config.source}.gz")]
    references = list(read_lines(TokenizeSplit(split=tune, **common).artifact_dir() / f"raw.{config.target}.gz"))
    tokenizer = get_tokenizer(config.languages[config.target].tokenizer, config.target, REPO / "cache" / "tokenizers")
    processor = TextProcessor(tokenizer, load_truecaser(TrainTruecaser(**common).artifact_dir(), config.target), None)
    started = time.perf_counter()
    with torch.no_grad():
        outputs = translate_ids(model, sources, src_vocab.pad_id, "cpu")
    seconds = time.perf_counter() - started
    bleu = corpus_bleu([processor.postprocess(tgt_vocab.decode(o)) for o in outputs], references, config.target)
    stats = TrainNMT(architecture=architecture, seed=1, **common).signature()["stats"]
    return {"task": task, "architecture": architecture, "split": tune, "sentences": len(sources),
            "greedy_bleu": round(bleu.score, 2), "signature": bleu.signature, "decode_seconds": round(seconds, 1),
            "train_updates": stats["updates"], "train_seconds": stats["train_seconds"], "epochs": stats["epochs"],
            "stop_reason": stats["stop_reason"], "target_tokens_per_second": stats["target_tokens_per_second"],
            "last_validation": stats["validation"], "averaged": averaged.signature()["stats"]["averaged"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="medium")
    parser.add_argument("--architectures", default="gru,transformer")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (the paper's setting is a GPU)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per variant (the median is reported)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed updates per run")
    parser.add_argument("--updates", type=int, default=15, help="timed updates per run")
    parser.add_argument("--compile", action="store_true",
                        help="also measure the current trainer through torch.compile (fp32; and bf16 where native)")
    parser.add_argument("--compile-warmup", type=int, default=10,
                        help="untimed updates per compiled run (compiling and the first recompiles)")
    parser.add_argument("--baseline", default="", metavar="REF",
                        help="also measure the trainer of this git commit, alternating with the current one")
    parser.add_argument("--loss-updates", type=int, default=0, metavar="N",
                        help="also train each variant N updates from the same seed and compare the loss curves")
    parser.add_argument("--loss-window", type=int, default=50, help="updates per window of the loss comparison")
    parser.add_argument("--loss-bound", type=float, default=0.05,
                        help="the stated bound: largest allowed difference of two windows' mean loss (nats)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, default=REPO / "work")
    parser.add_argument("--task", default="chi-eng")
    parser.add_argument("--lines", type=int, default=20000, help="training pairs to batch from")
    parser.add_argument("--synthetic-vocab", type=int, default=10000, help="vocabulary size without real data")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks-local/nmt_train.json")
    parser.add_argument("--dev-bleu", default="", metavar="TASKS",
                        help="comma-separated tasks: also report greedy tuning-set BLEU of each architecture's "
                             "averaged seed-1 model, built with the Luigi tasks in --work-dir (trains if needed)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--trace", type=int, default=0, metavar="N",
                        help="also profile N updates per architecture (batching vs step time, torch.profiler top ops)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--code-root", type=Path, default=REPO, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="", help=argparse.SUPPRESS)
    parser.add_argument("--compiled", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        args.worker_out.write_text(json.dumps(worker(args)))
        return 0
    torch.set_num_threads(args.threads)
    bleu = [dev_bleu(task, args.profile, args.work_dir, arch, args.threads)
            for task in filter(None, args.dev_bleu.split(",")) for arch in args.architectures.split(",")]
    if bleu:
        print("task     model        split  sentences  greedy BLEU  updates  train s  tgt tok/s  stop")
        for b in bleu:
            print(f"{b['task']:<8} {b['architecture']:<12} {b['split']:<6} {b['sentences']:>9}  {b['greedy_bleu']:>11}"
                  f"  {b['train_updates']:>7}  {b['train_seconds']:>7}  {b['target_tokens_per_second']:>9}  "
                  f"{b['stop_reason']}")
        out = args.out.with_name(args.out.stem + "_dev_bleu.json")
        write_json(out, {"benchmark": "nmt_dev_bleu", "command": " ".join([Path(sys.executable).name, *sys.argv]),
                         "profile": args.profile, "machine": machine(args.threads), "results": bleu})
        print(f"wrote {out}", file=sys.stderr)
    if args.skip_throughput:
        return 0
    data, src_vocab, tgt_vocab, source = load_data(args)
    info = machine(args.threads, args.device)
    summary = {"benchmark": "nmt_train", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "profile": args.profile, "runs": args.runs, "warmup_updates": args.warmup,
               "updates_per_run": args.updates, "data": {**source, "pairs": len(data.sources)}, "machine": info,
               **compare(args)}
    if args.trace:
        summary["traces"] = [trace(a, args.profile, data, src_vocab, tgt_vocab, args.warmup, args.trace, args.device)
                             for a in args.architectures.split(",")]

    header = ("model", "variant", "params", "precision", "sent/batch", "tgt tok/batch", "tgt tok/s (median)",
              "runs", "speed-up")
    rows = []
    for r in summary["results"]:
        for name, v in r["variants"].items():
            rows.append((r["architecture"], name, f"{v['parameters'] / 1e6:.2f}M", v["precision"],
                         f"{v['mean_batch_sentences']:.0f}", f"{v['mean_batch_target_tokens']:.0f}",
                         f"{v['median_target_tokens_per_s']:.0f}",
                         " ".join(f"{s:.0f}" for s in v["target_tokens_per_s_runs"]),
                         f"{r.get('speedup_over_baseline', {}).get(name, 1.0):.2f}x"))
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    print(f"profile {args.profile}, {info.get('gpu') or str(args.threads) + ' threads, ' + info['cpu']}, "
          f"data {source['kind']}")
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    for r in summary["results"]:
        if "loss_curve" in r:
            curve = r["loss_curve"]
            print(f"{r['architecture']}: per-token training loss by windows of {curve['window']} updates")
            for w in curve["windows"]:
                print("  " + "  ".join(f"{k} {v}" for k, v in w.items()))
            print(f"  largest window difference: {curve['max_abs_window_difference']} "
                  f"({'within' if curve['within_bound'] else 'OUTSIDE'} the bound {curve['bound']})")
    write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
