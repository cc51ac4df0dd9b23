"""Benchmark: our Transformer training against a peer toolkit's on the same work (eole 0.6, OpenNMT's successor).

Both toolkits train the same model on the same data, on the same machine, one after the other (never beside each
other), with the same number of CPU threads:

- the model: the profile's Transformer (default: medium, 3 layers of 256, 4 heads, feed-forward 1024), pre-norm,
  sinusoidal positions, the decoder's input embeddings tied to its output projection, biases on every projection,
  LayerNorm eps 1e-6, dropout as the profile's (attention and activation dropout 0);
- the data: the task's BPE training pairs and vocabularies from a work folder (ApplyBPE and BuildVocab artifacts:
  `luigi --module tasks BuildVocab --task-name ger-eng --profile medium`); eole reads the same subwords and the same
  vocabularies (its four specials in place of ours);
- the updates: token batches of `max_tokens` (rows x longest side), Adam (0.9, 0.98, eps 1e-9), the profile's
  learning-rate schedule (eole's "noam" at learning_rate = peak x sqrt(d x warmup) is our inverse_sqrt), label
  smoothing, gradient clipping and update_freq.

Two phases:

- speed: --speed-runs (at least 3) alternating runs of each toolkit, --speed-minutes each; target tokens per second
  over the steady part of the run (after its first --speed-skip seconds), median over the runs;
- quality: one run of each for the largest of --minutes of wall time from its process's start (start-up included);
  the model as it stood at each mark (ours: saved at the first update past it; eole's: its last checkpoint saved
  before it) decodes the devtest split, cased BLEU with sacrebleu after the same post-processing (BPE merge,
  detruecasing, detokenization) for both. Both decode alike: beam --beam, batches of --decode-batch sentences, no
  length penalty, at most 2 x the source length (eole also caps at 250); at each mark, ours against eole by
  paired bootstrap (BLEU and chrF2; `significance`, which also runs alone on a kept quality phase's hypotheses).

eole saves only what the marks need: its checkpoint interval is derived from its updates per second in the speed
phase (this run's or --previous's), so that a save falls just before each mark (about 3% of a mark's time early)
instead of one every few updates; ours saves once at each mark. Each run starts on a quiet machine: the benchmark
waits until the 1-minute load average is below --max-load (recorded per run) and refuses to report after
--quiet-timeout minutes. Every run's log (eole's own, our update rows) is kept under --logs-dir, to be committed
beside the report.

The report records the machine each phase ran on (`machines`, with the CPU's vector variant; with --previous, an
earlier run's phases keep theirs).

The peer is installed on first use into a virtual environment of its own (--peer-venv; not a project dependency):
torch pinned to this one's version, eole 0.6.4 and aiohttp (its CLI needs it and does not declare it).

    .venv/bin/python benchmarks/peer_nmt.py --work-dir work --profile medium --task ger-eng --threads 2 \
        --minutes 30 60 --speed-runs 3 --speed-minutes 4
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import gzip
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
sys.path.insert(1, str(HERE))

from common import keep_log, wait_for_quiet  # noqa: E402

EOLE_VERSION = "0.6.4"
EOLE_SPECIALS = ("<unk>", "<blank>", "<s>", "</s>")
EOLE_LOG = re.compile(r"Step (\d+)(?:/\s*\d+)?;.*?lr: +([0-9.e+-]+);.*?([0-9.]+)/\s*([0-9.]+) tok/s;\s+([0-9.]+) sec")


# -- data ----------------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class TaskData:
    """The files of one task in a work folder that both toolkits read."""

    source: str
    target: str
    train: Path  # bpe.<lang>.gz
    vocab: Path  # vocab.<lang>.json
    devtest: Path  # bpe.<lang>.gz
    references: Path  # raw.<target>.gz
    truecaser: Path  # truecase.<lang>.json


def task_data(work_dir: Path, profile: str, task: str, split: str) -> TaskData:
    from common import artifact
    from pipeline.config import load_task

    config = load_task(task)
    root = work_dir / profile / task
    return TaskData(config.source, config.target,
                    artifact(root, "subwords", config.splits.train), artifact(root, "vocab", "vocab"),
                    artifact(root, "subwords", split), artifact(root, "tokenized", split),
                    artifact(root, "truecaser", "truecaser"))


# -- our trainer ---------------------------------------------------------------------------------------------------

def training_settings(profile: str, task: str):
    """The task's Transformer sizes and training settings in the profile (the profile's, with the task's own
    [nmt.<profile>.transformer] entries in their place), as a benchmark run uses them: the training pairs' own
    targets (no distillation: both toolkits read the same BPE pairs), no validation, no checkpoints but the marks',
    no update or time cap (the benchmark stops the run)."""
    from pipeline.config import load_profile, load_task

    arch = load_task(task).nmt_for(load_profile(profile), "transformer")
    training = dataclasses.replace(arch.training, max_updates=0, budget_seconds=0, checkpoint_every=10 ** 9,
                                   distillation="none")
    return arch, training


class _Done(Exception):
    pass


def ours_worker(args: argparse.Namespace) -> None:
    """One timed run of our trainer in this process (started by `run_ours`); the result JSON in --out-dir."""
    started = time.monotonic()
    import torch

    from pipeline.nmt.checkpoint import save_checkpoint
    from pipeline.nmt.models import model_config
    from pipeline.nmt.train import ParallelText, Trainer
    from pipeline.vocab import Vocabulary

    torch.set_num_threads(args.threads)
    out = Path(args.out_dir)
    data = TaskData(**{k: (Path(v) if k not in ("source", "target") else v)
                       for k, v in json.loads(args.data).items()})
    arch, training = training_settings(args.profile, args.task)
    src_vocab = Vocabulary.load(data.vocab / f"vocab.{data.source}.json")
    tgt_vocab = Vocabulary.load(data.vocab / f"vocab.{data.target}.json")
    with gzip.open(data.train / f"bpe.{data.source}.gz", "rt") as s, gzip.open(data.train / f"bpe.{data.target}.gz",
                                                                               "rt") as t:
        text = ParallelText([line.split() for line in s], [line.split() for line in t])
    config = model_config("transformer", arch, src_vocab, tgt_vocab)
    trainer = Trainer(config, training, seed=args.seed, src_vocab=src_vocab, tgt_vocab=tgt_vocab, train=text,
                      state_dir=out / "state", device="cpu", log_every=50)
    marks = sorted(args.minutes)
    rows: list[dict] = []

    def after_update(update: int) -> None:
        wall = time.monotonic() - started
        if update % 50 == 0 or (marks and wall >= marks[0] * 60):
            rows.append({"update": update, "wall_s": wall, "train_s": trainer.elapsed,
                         "target_tokens": trainer.target_tokens})
        if marks and wall >= marks[0] * 60:
            minutes = marks.pop(0)
            path = save_checkpoint(out / f"ours-{minutes:g}min.pt", trainer.config, trainer.model.state_dict(),
                                   {"source": str(data.vocab / f"vocab.{data.source}.json"),
                                    "target": str(data.vocab / f"vocab.{data.target}.json")},
                                   meta={"update": update, "wall_s": wall})
            rows[-1]["checkpoint"] = str(path)
            if not marks:
                raise _Done

    trainer.after_update = after_update
    try:
        trainer.run()
    except _Done:
        pass
    (out / "ours.json").write_text(json.dumps({"rows": rows, "parameters": trainer.model.num_parameters(),
                                               "training_sentences": len(text.sources)}))


def ours_command(args: argparse.Namespace, data: TaskData, out: Path, minutes: list[float]) -> list[str]:
    """The worker process of one run of our trainer: the same task, profile, threads and seed as this run."""
    return [sys.executable, str(Path(__file__).resolve()), "--worker-ours", "--out-dir", str(out),
            "--data", json.dumps({k: str(v) for k, v in dataclasses.asdict(data).items()}),
            "--profile", args.profile, "--task", args.task, "--threads", str(args.threads), "--seed", str(args.seed),
            "--minutes", *[f"{m:g}" for m in minutes]]


def run_ours(args: argparse.Namespace, data: TaskData, out: Path, minutes: list[float]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    load = wait_for_quiet(args.max_load, args.quiet_timeout, f"ours in {out.name}")
    subprocess.run(ours_command(args, data, out, minutes), check=True, env=thread_env(args.threads),
                   stdout=subprocess.DEVNULL)
    result = json.loads((out / "ours.json").read_text())
    rows = result["rows"]
    checkpoints = {f"{m:g}": {"path": r["checkpoint"], "update": r["update"], "wall_s": round(r["wall_s"], 1)}
                   for m, r in zip(minutes, [r for r in rows if "checkpoint" in r])}
    return {"toolkit": "ours", "load_at_start": load, "log": keep_log(out / "ours.json", args.logs_dir,
                                                                       f"{out.name}-ours.json"),
            "parameters": result["parameters"], "updates": rows[-1]["update"], "wall_s": round(rows[-1]["wall_s"], 1),
            "target_tokens_per_update": rows[-1]["target_tokens"] / rows[-1]["update"],
            "steady_target_tokens_per_s": steady_rate([(r["wall_s"], r["target_tokens"]) for r in rows],
                                                      args.speed_skip),
            "checkpoints": checkpoints}


# -- eole ----------------------------------------------------------------------------------------------------------

def thread_env(threads: int) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "TQDM_DISABLE": "1"}


def ensure_peer(venv: Path) -> Path:
    """eole's command in `venv`, installed there first if missing (torch pinned to this environment's)."""
    import torch

    eole = venv / "bin" / "eole"
    if eole.exists():
        return eole
    print(f"installing eole {EOLE_VERSION} into {venv} (once)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"torch=={torch.__version__.split('+')[0]}",
                    f"eole=={EOLE_VERSION}", "aiohttp"], check=True)
    return eole


def eole_vocab(ours: Path, into: Path) -> int:
    """Our vocabulary file as eole reads one (a token a line; its own specials come first): the size eole sees."""
    from pipeline.vocab import Vocabulary

    from pipeline.vocab import SPECIALS

    tokens = [t for t in Vocabulary.load(ours).tokens if t not in SPECIALS]
    into.write_text("".join(f"{t}\t1\n" for t in tokens), encoding="utf-8")
    return len(tokens) + len(EOLE_SPECIALS)


def eole_save_steps(marks: list[float], updates_per_s: float | None) -> int:
    """eole's checkpoint interval for the marks (minutes): about 97% of the updates it makes by the first mark at its
    measured rate (start-up included), so that each later mark, a multiple of the first, also finds a save just
    before it."""
    if not updates_per_s:
        raise SystemExit("the quality phase needs eole's update rate from a speed phase (this run's, or "
                         "--previous's), or --eole-updates-per-s, or a fixed --eole-save-steps")
    return max(1, int(0.97 * updates_per_s * 60 * min(marks)))


def eole_config(args: argparse.Namespace, data: TaskData, work: Path, save_steps: int) -> Path:
    """eole's YAML for the same model, data and updates as ours (see the module docstring)."""
    arch, training = training_settings(args.profile, args.task)
    for lang in (data.source, data.target):
        with gzip.open(data.train / f"bpe.{lang}.gz", "rb") as f, open(work / f"train.{lang}", "wb") as g:
            shutil.copyfileobj(f, g)
    sizes = {lang: eole_vocab(data.vocab / f"vocab.{lang}.json", work / f"vocab.{lang}")
             for lang in (data.source, data.target)}
    if training.lr_schedule != "inverse_sqrt":
        raise SystemExit(f"eole's noam schedule is our inverse_sqrt; the profile's is {training.lr_schedule}")
    config = {
        "seed": args.seed, "report_every": 50, "overwrite": True,
        "src_vocab": str(work / f"vocab.{data.source}"), "tgt_vocab": str(work / f"vocab.{data.target}"),
        "src_vocab_size": sizes[data.source], "tgt_vocab_size": sizes[data.target], "vocab_size_multiple": 1,
        "share_vocab": False, "n_sample": 0,
        "data": {"corpus_1": {"path_src": str(work / f"train.{data.source}"),
                              "path_tgt": str(work / f"train.{data.target}")}},
        "transforms": [],
        "training": {
            "model_path": str(work / "model"), "keep_checkpoint": 4, "save_checkpoint_steps": save_steps,
            "train_steps": 10 ** 8, "valid_steps": 10 ** 8, "world_size": 1, "gpu_ranks": [],
            "batch_type": "tokens", "batch_size": args.eole_batch_size or training.max_tokens, "batch_size_multiple": 1,
            "accum_count": [training.update_freq], "accum_steps": [0], "normalization": "tokens",
            "compute_dtype": "fp32", "optim": "adam", "adam_beta1": 0.9, "adam_beta2": 0.98, "adam_eps": 1e-9,
            "learning_rate": training.lr * math.sqrt(arch.model_size * training.warmup_updates),
            "decay_method": "noam", "warmup_steps": training.warmup_updates,
            "max_grad_norm": training.clip_norm, "label_smoothing": training.label_smoothing,
            "dropout": [arch.dropout], "attention_dropout": [arch.attention_dropout], "dropout_steps": [0],
            "param_init_method": "xavier_uniform", "num_workers": args.eole_workers,
        },
        "model": {
            "architecture": "transformer", "hidden_size": arch.model_size, "layers": arch.layers,
            "heads": arch.heads, "transformer_ff": arch.ff_size, "share_decoder_embeddings": True,
            "share_embeddings": False, "layer_norm": "standard", "norm_eps": 1e-6, "add_qkvbias": True,
            "add_ffnbias": True, "add_final_linear_bias": True, "mlp_activation_fn": "relu",
            "embeddings": {"word_vec_size": arch.model_size, "position_encoding_type": "SinusoidalConcat"},
        },
    }
    path = work / "eole.yaml"
    path.write_text(json.dumps(config, indent=1))  # JSON is YAML
    return path


def parse_eole_log(text: str) -> list[dict]:
    """eole's report lines: step, learning rate, source and target tokens/s of the window, seconds since start."""
    return [{"step": int(m[1]), "lr": float(m[2]), "target_tokens_per_s": float(m[4]), "train_s": float(m[5])}
            for m in EOLE_LOG.finditer(text)]


def checkpoint_before(saved: dict[str, float], minute: float, save_steps: int | None) -> str | None:
    """Of eole's checkpoint folders (step_<update> -> wall seconds when first seen complete), the newest saved before
    the mark; None for a run that saves none (a speed run); SystemExit when a saving run has none before it."""
    if save_steps is None:
        return None
    before = [name for name, wall in saved.items() if wall <= minute * 60]
    if not before:
        raise SystemExit(f"eole saved no checkpoint before the {minute:g}-minute mark (interval {save_steps} "
                         f"updates): rerun the speed phase on this machine")
    return max(before, key=lambda name: int(name[5:]))


def run_eole(args: argparse.Namespace, data: TaskData, out: Path, minutes: list[float],
             save_steps: int | None = None) -> dict:
    """One eole run for max(minutes) of wall time, saving every `save_steps` updates (None: never, a speed run);
    at each mark the newest checkpoint saved before it is kept."""
    eole = ensure_peer(args.peer_venv)
    work = out / "eole-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    config = eole_config(args, data, work, save_steps or 10 ** 8)
    log_path = out / "eole.log"
    marks, kept = sorted(minutes), {}
    load = wait_for_quiet(args.max_load, args.quiet_timeout, f"eole in {out.name}")
    with open(log_path, "w") as log:
        started = time.monotonic()
        proc = subprocess.Popen([str(eole), "train", "-config", str(config)], stdout=log, stderr=subprocess.STDOUT,
                                env=thread_env(args.threads), start_new_session=True)
        saved: dict[str, float] = {}  # checkpoint folder -> wall seconds when first seen complete
        try:
            while marks:
                time.sleep(0.5)
                wall = time.monotonic() - started
                if proc.poll() is not None:
                    raise SystemExit(f"eole stopped (exit {proc.returncode}) after {wall:.0f} s; see {log_path}")
                for step_dir in (work / "model").glob("step_*"):
                    if step_dir.name not in saved and (step_dir / "optimizer.pt").exists():
                        saved[step_dir.name] = wall
                if wall >= marks[0] * 60:
                    minute = marks.pop(0)
                    name = checkpoint_before(saved, minute, save_steps)
                    if name is None:
                        continue
                    target = out / f"eole-{minute:g}min"
                    shutil.rmtree(target, ignore_errors=True)
                    time.sleep(2)  # a checkpoint seen with its optimizer state is complete
                    shutil.copytree(work / "model" / name, target)
                    kept[f"{minute:g}"] = {"path": str(target), "update": int(name[5:]),
                                           "wall_s": round(saved[name], 1)}
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    reports = parse_eole_log(log_path.read_text())
    # a window's tokens/s over its seconds: tokens; seconds since eole's training start
    points, tokens, last = [], 0.0, 0.0
    for r in reports:
        tokens += r["target_tokens_per_s"] * (r["train_s"] - last)
        last = r["train_s"]
        points.append((r["train_s"], tokens))
    wall = time.monotonic() - started
    return {"toolkit": f"eole {EOLE_VERSION}", "load_at_start": load,
            "log": keep_log(log_path, args.logs_dir, f"{out.name}-eole.log"), "save_checkpoint_steps": save_steps,
            "wall_s": round(wall, 1), "updates": reports[-1]["step"] if reports else 0,
            "target_tokens_per_update": tokens / reports[-1]["step"] if reports else None,
            "steady_target_tokens_per_s": steady_rate(points, args.speed_skip), "checkpoints": kept,
            "lr_at_last_report": reports[-1]["lr"] if reports else None}


def steady_rate(points: list[tuple[float, float]], skip: float) -> float | None:
    """Tokens per second between the first point after `skip` seconds and the last point."""
    after = [p for p in points if p[0] >= skip]
    if len(after) < 2:
        return None
    (t0, n0), (t1, n1) = after[0], after[-1]
    return (n1 - n0) / (t1 - t0)


# -- evaluation ----------------------------------------------------------------------------------------------------

def postprocessor(data: TaskData):
    from pipeline.text import TextProcessor, Truecaser, get_tokenizer

    truecaser = Truecaser.load(data.truecaser / f"truecase.{data.target}.json")
    processor = TextProcessor(tokenizer=get_tokenizer("moses", data.target, REPO / "cache" / "tokenizers"),
                              truecaser=truecaser, bpe=None)
    return processor


def bleu(hypotheses: list[str], references: list[str], lang: str) -> float:
    from pipeline.evaluation.bleu import corpus_bleu

    return round(corpus_bleu(hypotheses, references, lang).score, 2)


def decode_ours(args: argparse.Namespace, checkpoint: str, sources: list[str], processor) -> tuple[list[str], float]:
    import torch

    from pipeline.decode.beam_search import SearchSettings
    from pipeline.decode.translate import load_models, translate_lines

    torch.set_num_threads(args.threads)
    models = load_models([Path(checkpoint)], "cpu")
    started = time.monotonic()
    settings = SearchSettings(beam=args.beam, length_penalty=0.0, max_length_a=2.0, max_length_b=0)
    result = translate_lines(sources, models, settings, target=processor, batch_sentences=args.decode_batch)
    return result.text, time.monotonic() - started


def decode_eole(args: argparse.Namespace, model: str, sources: list[str], processor, work: Path) -> tuple[list[str],
                                                                                                         float]:
    src, hyp = work / "devtest.src", work / "devtest.hyp"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    started = time.monotonic()
    subprocess.run([str(args.peer_venv / "bin" / "eole"), "predict", "-model_path", model, "-src", str(src),
                    "-output", str(hyp), "-beam_size", str(args.beam), "-batch_size", str(args.decode_batch),
                    "-batch_type", "sents", "-length_penalty", "none", "-max_length_ratio", "2", "-max_length", "250"],
                   check=True, env=thread_env(args.threads), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    lines = hyp.read_text(encoding="utf-8").splitlines()
    return [processor.postprocess(line.split()) for line in lines], seconds


def evaluate(args: argparse.Namespace, data: TaskData, runs: dict[str, dict], out: Path) -> None:
    """Devtest BLEU of every kept checkpoint (beam --beam), written into its run's entry."""
    from common import first_lines

    sources = first_lines(data.devtest / f"bpe.{data.source}.gz", args.eval_sentences)
    references = first_lines(data.references / f"raw.{data.target}.gz", args.eval_sentences)
    processor = postprocessor(data)
    for name, run in runs.items():
        for minute, kept in run["checkpoints"].items():
            if name == "ours":
                hyps, seconds = decode_ours(args, kept["path"], sources, processor)
            else:
                hyps, seconds = decode_eole(args, kept["path"], sources, processor, out)
            (out / f"{name}-{minute}min.{data.target}").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
            kept.update(bleu=bleu(hyps, references, data.target), decode_s=round(seconds, 1))
            print(f"{name} at {minute} min (update {kept['update']}): BLEU {kept['bleu']}", file=sys.stderr)


def significance(data: TaskData, runs: dict[str, dict], out: Path, sentences: int) -> dict[str, dict]:
    """Per mark that both toolkits kept: ours against eole by paired bootstrap (BLEU and chrF2), from the devtest
    hypotheses `evaluate` wrote into `out`."""
    from common import first_lines

    from pipeline.evaluation.significance import paired_bootstrap

    references = first_lines(data.references / f"raw.{data.target}.gz", sentences)
    compared = {}
    marks = set(runs.get("ours", {}).get("checkpoints", {})) & set(runs.get("eole", {}).get("checkpoints", {}))
    for minute in sorted(marks, key=float):
        hyps = {name: (out / f"{name}-{minute}min.{data.target}").read_text(encoding="utf-8").splitlines()
                for name in ("eole", "ours")}
        records = paired_bootstrap(("eole", hyps["eole"]), [("ours", hyps["ours"])], references, data.target)
        compared[minute] = {r["metric"]: {key: r[key] for key in ("score", "baseline_score", "p_value", "ci")}
                            for r in records}
        bleu_record = compared[minute]["BLEU"]
        print(f"at {minute} min: ours {bleu_record['score']} against eole {bleu_record['baseline_score']} BLEU, "
              f"p {bleu_record['p_value']}", file=sys.stderr)
    return compared


def median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 1) if values else None


def kept_phases(previous: dict, here: dict) -> dict:
    """An earlier report to add phases to: `machine` becomes this run's, and `machines` keeps, per phase, the
    machine each earlier phase ran on (a report from before `machines` ran all its phases on its `machine`)."""
    ran = previous.get("machines") or {phase: previous["machine"] for phase in ("speed", "quality")
                                       if phase in previous}
    return {**previous, "machine": here, "machines": dict(ran)}


def main(args: argparse.Namespace) -> dict:
    from common import machine
    from pipeline.io import write_json
    from pipeline.machine import describe_cpu

    if "speed" in args.phases and args.speed_runs < 3:
        raise SystemExit("--speed-runs: at least 3 alternating runs per toolkit (the median of 3)")

    data = task_data(args.work_dir, args.profile, args.task, args.split)
    out = args.run_dir
    out.mkdir(parents=True, exist_ok=True)
    if "speed" in args.phases or "quality" in args.phases:  # significance alone reads kept hypotheses
        ensure_peer(args.peer_venv)
    here = {**machine(args.threads), "cpu_variant": describe_cpu().variant}
    report: dict = {"benchmark": "peer_nmt", "machine": here, "machines": {}, "profile": args.profile,
                    "task": args.task, "devtest": args.split, "eval_sentences": args.eval_sentences,
                    "beam": args.beam, "settings": dataclasses.asdict(training_settings(args.profile, args.task)[1]),
                    "speed_runs": {"ours": [], "eole": []}}
    if args.previous and args.previous.exists():
        report = kept_phases(json.loads(args.previous.read_text()), here)
    runners = {"ours": run_ours, "eole": run_eole}
    command = " ".join([Path(sys.executable).name, *sys.argv])
    report["command"] = command
    report.setdefault("commands", {})
    if "speed" in args.phases:
        report["machines"]["speed"] = here
        report["commands"]["speed"] = command
        report["speed_runs"] = {"ours": [], "eole": []}
        for i in range(args.speed_runs):
            for name, runner in runners.items():
                run = runner(args, data, out / f"speed-{name}-{i}", [args.speed_minutes])
                report["speed_runs"][name].append(run)
                print(f"speed run {i}: {name} {run['steady_target_tokens_per_s']:.0f} target tokens/s",
                      file=sys.stderr)
        report["speed"] = {name: median([r["steady_target_tokens_per_s"] for r in runs])
                           for name, runs in report["speed_runs"].items()}
    if "quality" in args.phases:
        report["machines"]["quality"] = here
        report["commands"]["quality"] = command
        rate = args.eole_updates_per_s or median(
            [r["updates"] / r["wall_s"] for r in report["speed_runs"].get("eole", []) if r.get("wall_s")])
        save_steps = args.eole_save_steps or eole_save_steps(args.minutes, rate)
        report["eole_save_checkpoint_steps"] = save_steps
        runners["eole"] = functools.partial(run_eole, save_steps=save_steps)
        runs = {name: runner(args, data, out / f"quality-{name}", sorted(args.minutes))
                for name, runner in runners.items()}
        evaluate(args, data, runs, out)
        report["quality"] = runs
    if "quality" in args.phases or "significance" in args.phases:
        report["commands"]["significance"] = command
        report["significance"] = significance(data, report.get("quality", {}), out, report["eval_sentences"])
    write_json(args.out, report)
    print(json.dumps({k: report.get(k) for k in ("speed",)}, indent=1))
    for name, run in report.get("quality", {}).items():
        print(name, {m: (c["update"], c.get("bleu")) for m, c in run["checkpoints"].items()})
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, default=REPO / "work")
    parser.add_argument("--profile", default="medium")
    parser.add_argument("--task", default="ger-eng")
    parser.add_argument("--split", default="newstest2016", help="the devtest split decoded for BLEU")
    parser.add_argument("--eval-sentences", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--minutes", type=float, nargs="+", default=[30.0, 60.0],
                        help="quality phase: wall-time marks whose models are decoded (the run lasts the largest)")
    parser.add_argument("--speed-runs", type=int, default=3)
    parser.add_argument("--speed-minutes", type=float, default=4.0)
    parser.add_argument("--speed-skip", type=float, default=60.0,
                        help="seconds of each run left out of its steady tokens/s (start-up, first batches)")
    parser.add_argument("--phases", default="speed,quality",
                        help="speed, quality (which ends with significance), or significance alone: ours against "
                             "eole at each mark by paired bootstrap, from a --previous quality phase's hypotheses "
                             "in --run-dir")
    parser.add_argument("--decode-batch", type=int, default=16, help="sentences per batch, both toolkits")
    parser.add_argument("--max-load", type=float, default=0.3,
                        help="each run starts once the 1-minute load average is below this")
    parser.add_argument("--quiet-timeout", type=float, default=30.0,
                        help="minutes to wait for a quiet machine before refusing to measure")
    parser.add_argument("--eole-updates-per-s", type=float, default=0.0,
                        help="eole's update rate for its checkpoint interval (0: from the speed phase)")
    parser.add_argument("--eole-save-steps", type=int, default=0,
                        help="a fixed checkpoint interval for eole instead of the derived one (0: derived)")
    parser.add_argument("--eole-batch-size", type=int, default=0,
                        help="eole's batch_size in tokens (0: the profile's max_tokens); eole counts a batch's size "
                             "a little differently, so the same target tokens per update may need another number")
    parser.add_argument("--eole-workers", type=int, default=1, help="eole's data-loading processes")
    parser.add_argument("--peer-venv", type=Path, default=REPO / ".venv-peer")
    parser.add_argument("--run-dir", type=Path, default=REPO / "work" / "peer_nmt")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks-local" / "peer_nmt.json")
    parser.add_argument("--logs-dir", type=Path, default=None,
                        help="where every run's log is kept (default: beside --out, <out stem>_logs/)")
    parser.add_argument("--previous", type=Path, default=None,
                        help="a report of an earlier run whose phases this one keeps (e.g. speed, then quality); "
                             "a phase run again replaces the earlier one")
    # a worker process (run_ours)
    parser.add_argument("--worker-ours", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.logs_dir = args.logs_dir or args.out.with_name(f"{args.out.stem}_logs")
    return args


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.worker_ours:
        ours_worker(arguments)
    else:
        main(arguments)
