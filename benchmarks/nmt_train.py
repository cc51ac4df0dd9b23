"""Benchmark: NMT training throughput (target tokens per second) of the GRU and Transformer models.

Models at a profile's sizes (default: small), trained with the pipeline's own Trainer.train_step (Adam, label
smoothing, clipping) on token-count batches of the profile's size. Each run builds a fresh model, does --warmup
untimed updates, then --updates timed ones; the table gives the median over --runs runs. Prints a table and
writes JSON with the machine, the thread count and the batch sizes.

Data: the BPE training text and vocabularies of a translation task when a work folder holds them (ApplyBPE and
BuildVocab artifacts, e.g. after `luigi --module tasks ApplyBPE --split dev --task-name ger-eng --profile small`),
else synthetic sentences (random ids, lengths drawn like the real ones: 5-60 tokens).

    .venv/bin/python benchmarks/nmt_train.py --threads 2 --runs 5 --work-dir work --task ger-eng
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from common import machine  # noqa: E402
from pipeline.io import write_json  # noqa: E402
from pipeline.config import load_profile  # noqa: E402
from pipeline.io import read_lines  # noqa: E402
from pipeline.nmt.models import limit_vocabulary, model_config  # noqa: E402
from pipeline.nmt.precision import training_precision  # noqa: E402
from pipeline.nmt.train import ParallelText, Trainer  # noqa: E402
from pipeline.vocab import Vocabulary  # noqa: E402


def newest(pattern: str, root: Path) -> Path | None:
    found = sorted(root.glob(pattern), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def real_data(work_dir: Path, profile: str, task: str, lines: int) -> tuple[ParallelText, Vocabulary, Vocabulary,
                                                                              dict] | None:
    """The first `lines` BPE training pairs of a task and its vocabularies, if the work folder has them."""
    from pipeline.config import load_task

    config = load_task(task)
    root = work_dir / profile / task
    subwords = newest(f"subwords/{config.splits.train}-*/signature.json", root)
    vocab = newest("vocab/vocab-*/signature.json", root)
    if subwords is None or vocab is None:
        return None
    src, tgt = config.source, config.target
    sources = [line.split() for _, line in zip(range(lines), read_lines(subwords.parent / f"bpe.{src}.gz"))]
    targets = [line.split() for _, line in zip(range(lines), read_lines(subwords.parent / f"bpe.{tgt}.gz"))]
    return (ParallelText(sources, targets), Vocabulary.load(vocab.parent / f"vocab.{src}.json"),
            Vocabulary.load(vocab.parent / f"vocab.{tgt}.json"),
            {"kind": "real", "task": task, "bpe": str(subwords.parent), "vocab": str(vocab.parent)})


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


def measure(architecture: str, profile_name: str, data, src_vocab, tgt_vocab, runs: int, warmup: int,
            updates: int, device: str = "cpu") -> dict:
    """Target tokens per second of `runs` fresh trainers at the profile's sizes and precision (on `device`)."""
    arch = getattr(load_profile(profile_name).nmt, architecture)
    src_vocab, tgt_vocab = limit_vocabulary(src_vocab, arch.vocab_size), limit_vocabulary(tgt_vocab, arch.vocab_size)
    config = model_config(architecture, arch, src_vocab, tgt_vocab)
    precision = training_precision(arch.training.precision, torch.device(device))
    speeds, sentences, tokens, params = [], [], [], 0
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="nmt_train_bench-") as tmp:
            trainer = Trainer(config, arch.training, seed=run + 1, src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                              train=data, state_dir=Path(tmp), device=device,
                              precision=precision)
            params = trainer.model.num_parameters()
            trainer.model.train()
            for _ in range(warmup):
                trainer.train_step(next(trainer.stream))
            started, run_tokens = time.perf_counter(), 0
            for _ in range(updates):
                ids = next(trainer.stream)
                run_tokens += trainer.train_step(ids)[2]
                sentences.append(len(ids))
            if device.startswith("cuda"):
                torch.cuda.synchronize(device)
            seconds = time.perf_counter() - started
        speeds.append(run_tokens / seconds)
        tokens.append(run_tokens / updates)
        print(f"{architecture} run {run + 1}/{runs}: {run_tokens / seconds:.0f} target tokens/s", file=sys.stderr)
    return {"architecture": architecture, "parameters": params, "precision": precision,
            "max_tokens": arch.training.max_tokens,
            "vocab_sizes": [len(src_vocab), len(tgt_vocab)], "updates_per_run": updates, "warmup_updates": warmup,
            "mean_batch_sentences": statistics.mean(sentences), "mean_batch_target_tokens": statistics.mean(tokens),
            "target_tokens_per_s_runs": [round(s, 1) for s in speeds],
            "median_target_tokens_per_s": statistics.median(speeds),
            "median_seconds_per_update": statistics.median(tokens) / statistics.median(speeds)}


def trace(architecture: str, profile_name: str, data, src_vocab, tgt_vocab, warmup: int, updates: int,
          device: str) -> dict:
    """Where an update's time goes: seconds spent drawing batches against seconds in train_step (synchronised on a
    GPU), then torch.profiler over `updates` updates: the top operators by self time on the device and on the CPU."""
    from torch.profiler import ProfilerActivity, profile

    arch = getattr(load_profile(profile_name).nmt, architecture)
    src_vocab, tgt_vocab = limit_vocabulary(src_vocab, arch.vocab_size), limit_vocabulary(tgt_vocab, arch.vocab_size)
    config = model_config(architecture, arch, src_vocab, tgt_vocab)
    cuda = device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    with tempfile.TemporaryDirectory(prefix="nmt_train_trace-") as tmp:
        trainer = Trainer(config, arch.training, seed=1, src_vocab=src_vocab, tgt_vocab=tgt_vocab, train=data,
                          state_dir=Path(tmp), device=device,
                          precision=training_precision(arch.training.precision, torch.device(device)))
        trainer.model.train()
        for _ in range(warmup):
            trainer.train_step(next(trainer.stream))
        batching = stepping = 0.0
        for _ in range(updates):
            sync()
            t0 = time.perf_counter()
            ids = next(trainer.stream)
            t1 = time.perf_counter()
            trainer.train_step(ids)
            sync()
            batching, stepping = batching + t1 - t0, stepping + time.perf_counter() - t1
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities) as prof:
            for _ in range(updates):
                trainer.train_step(next(trainer.stream))
            sync()
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
    from pipeline.nmt.batching import source_ids
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
    parser.add_argument("--profile", default="small")
    parser.add_argument("--architectures", default="gru,transformer")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (the paper's setting is a GPU)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3, help="untimed updates per run")
    parser.add_argument("--updates", type=int, default=15, help="timed updates per run")
    parser.add_argument("--work-dir", type=Path, default=REPO / "work")
    parser.add_argument("--task", default="ger-eng")
    parser.add_argument("--lines", type=int, default=20000, help="training pairs to batch from")
    parser.add_argument("--synthetic-vocab", type=int, default=10000, help="vocabulary size without real data")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks/nmt_train.json")
    parser.add_argument("--dev-bleu", default="", metavar="TASKS",
                        help="comma-separated tasks: also report greedy tuning-set BLEU of each architecture's "
                             "averaged seed-1 model, built with the Luigi tasks in --work-dir (trains if needed)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--trace", type=int, default=0, metavar="N",
                        help="also profile N updates per architecture (batching vs step time, torch.profiler top ops)")
    args = parser.parse_args(argv)

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
    loaded = real_data(args.work_dir, args.profile, args.task, args.lines)
    data, src_vocab, tgt_vocab, source = loaded or synthetic_data(args.lines, args.synthetic_vocab)
    info = machine(args.threads, args.device)
    results = [measure(a, args.profile, data, src_vocab, tgt_vocab, args.runs, args.warmup, args.updates, args.device)
               for a in args.architectures.split(",")]
    summary = {"benchmark": "nmt_train", "command": " ".join([Path(sys.executable).name, *sys.argv]),
               "profile": args.profile, "runs": args.runs, "data": {**source, "pairs": len(data.sources)},
               "machine": info, "results": results}
    if args.trace:
        summary["traces"] = [trace(a, args.profile, data, src_vocab, tgt_vocab, args.warmup, args.trace, args.device)
                             for a in args.architectures.split(",")]

    header = ("model", "params", "max_tokens", "sent/batch", "tgt tok/batch", "s/update", "tgt tok/s (median)",
              "runs")
    rows = [(r["architecture"], f"{r['parameters'] / 1e6:.2f}M", str(r["max_tokens"]),
             f"{r['mean_batch_sentences']:.0f}", f"{r['mean_batch_target_tokens']:.0f}",
             f"{r['median_seconds_per_update']:.3f}", f"{r['median_target_tokens_per_s']:.0f}",
             " ".join(f"{s:.0f}" for s in r["target_tokens_per_s_runs"])) for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    print(f"profile {args.profile}, {info.get('gpu') or str(args.threads) + ' threads, ' + info['cpu']}, "
          f"data {source['kind']}")
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    write_json(args.out, summary)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
