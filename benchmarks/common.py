"""What the benchmarks share, and the only module they import from one another: the machine they ran on (reported
beside every number), the artifacts of a work folder they read, the model and sources of the decoding benchmarks,
where the PBMT's inputs are, and output statistics."""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import re
import shutil
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from pipeline.nmt.launch import TrainingJob
    from tasks.nmt import TrainNMT

REPO = Path(__file__).resolve().parents[1]
# a benchmark writes to the user's own folder unless told otherwise (--out): results/benchmarks/ holds the
# published measurements, which a run on another machine must not replace by accident
OWN_RESULTS = REPO / "results" / "benchmarks-local"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# The environment that holds torch (ATen's kernels, MKL, oneDNN, FBGEMM's int8 GEMMs) and CTranslate2 to AVX2 on a
# CPU with AVX-512: the AVX2 variant's kernels, not its clock, caches or memory system
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2", "CT2_FORCE_CPU_ISA": "AVX2"}


def machine(threads: int, device: str = "cpu") -> dict:
    """The date (UTC), CPU model and vector variant (pipeline/machine.py), cores, platform, torch version and threads,
    the load average at the start, OMP_WAIT_POLICY, and the device the benchmark ran on (with the GPU's name for a
    CUDA device)."""
    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    from pipeline.machine import describe_cpu

    return {"date": datetime.now(timezone.utc).date().isoformat(), "cpu": cpu, "cpu_variant": describe_cpu().variant,
            "cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "torch_threads": threads, "load_average_at_start": os.getloadavg(), "device": device,
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", ""),
            **({"gpu": torch.cuda.get_device_name(device), "cuda": torch.version.cuda}
               if device.startswith("cuda") else {})}


def add_model_task_arguments(parser: argparse.ArgumentParser) -> None:
    """The options naming one TrainNMT model of a run: profile, task, architecture, seed and its folders."""
    parser.add_argument("--profile", default="medium")
    parser.add_argument("--task", required=True)
    parser.add_argument("--architecture", choices=("gru", "transformer"), required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", default="work")
    parser.add_argument("--data-dir", help="the data folder (default: the project's setting)")
    parser.add_argument("--config-dir", help="a folder of tasks/*.toml and profiles/*.toml (default: the checkout's "
                        "configs/): a recipe tried on a copy of the profile")


def built_job(args: argparse.Namespace, threads: int, vocab_dir: Path | None = None) -> tuple["TrainNMT", "TrainingJob"]:
    """The TrainNMT task of args (task, profile, architecture, seed, work_dir, data_dir, config_dir) and its
    TrainingJob, the model's vocabularies written into `vocab_dir` (default: the task's state folder); SystemExit
    naming what is missing when the task's inputs are not built. Imports the workflow (luigi) only when called."""
    from pipeline.nmt.models import model_config
    from tasks.nmt import TrainNMT

    extra = {"data_dir": args.data_dir} if args.data_dir else {}
    if args.config_dir:
        extra["config_dir"] = args.config_dir
    task = TrainNMT(task_name=args.task, profile=args.profile, work_dir=args.work_dir, architecture=args.architecture,
                    seed=args.seed, **extra)
    missing = [name for name, needed in task.requires().items() if not needed.complete()]
    if missing:
        raise SystemExit(f"{task}: inputs not built yet ({', '.join(missing)}); run e.g. `luigi --module tasks "
                         f"TrainNMT ...` once, or build them with luigi first")
    vocab_dir = vocab_dir or task.state_dir()
    vocab_dir.mkdir(parents=True, exist_ok=True)
    vocabs = task._vocabularies(vocab_dir)
    config = model_config(args.architecture, task.arch_profile(), vocabs[task.config.source],
                          vocabs[task.config.target])
    return task, task._job(config, threads)


def newest_artifact(root: Path, stage: str, label: str) -> Path | None:
    """The newest complete artifact `<root>/<stage>/<label>-<hash>/` (one with its signature.json), or None."""
    found = sorted(root.glob(f"{stage}/{label}-*/signature.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def artifact(root: Path, stage: str, label: str) -> Path:
    """`newest_artifact`, or an exit that says which stage to build first."""
    found = newest_artifact(root, stage, label)
    if found is None:
        raise SystemExit(f"no {stage}/{label}-*/signature.json under {root}: run the data stages first, e.g. "
                         f"`luigi --module tasks BuildVocab ...` and `ApplyBPE ... --split SPLIT` for the profile and "
                         f"task")
    return found


def first_lines(path: Path, n: int) -> list[str]:
    """The first `n` lines of a (gzipped) text file, without their newlines."""
    from pipeline.io import read_lines

    return list(itertools.islice(read_lines(path), n))


# -- decoding benchmarks: a model and its sources ---------------------------------------------------------------------

def log(line: str) -> None:
    """A progress line on stderr (stdout holds the tables)."""
    print(line, file=sys.stderr)


def load_model(args: argparse.Namespace) -> tuple[Any, Any, dict]:
    """The model (an Ensemble), its source vocabulary and a description: the checkpoints of `args.model`, else random
    weights at `args.profile`'s sizes of `args.architecture` over `args.random_vocab` synthetic words."""
    from pipeline.config import load_profile
    from pipeline.decode.translate import load_models
    from pipeline.nmt.interface import Ensemble
    from pipeline.nmt.models import build_model, model_config
    from pipeline.vocab import Vocabulary

    if args.model:
        loaded = load_models(args.model, getattr(args, "device", "cpu"))
        members = loaded.ensemble.models
        return loaded.ensemble, loaded.src_vocab, {
            "kind": "trained", "files": [str(p) for p in loaded.members],
            "architectures": [m.config.architecture for m in members],
            "parameters": sum(m.num_parameters() for m in members), "vocab_sizes": [len(loaded.src_vocab),
                                                                                     len(loaded.tgt_vocab)]}
    words = [f"w{i}" for i in range(args.random_vocab - 4)]
    vocab = Vocabulary.build([words])
    profile = load_profile(args.profile)
    torch.manual_seed(1)
    model = build_model(model_config(args.architecture, getattr(profile.nmt, args.architecture), vocab, vocab))
    model = model.to(getattr(args, "device", "cpu")).eval()
    return Ensemble([model]), vocab, {"kind": f"random weights at the {args.profile} profile's sizes",
                                      "architectures": [args.architecture], "parameters": model.num_parameters(),
                                      "vocab_sizes": [len(vocab), len(vocab)]}


def source_ids(args: argparse.Namespace, vocab: Any, count: int) -> tuple[list[list[int]], list[int], dict]:
    """`count` sources (ids + EOS) and their word counts: the first lines of `args.source` (BPE), or synthetic
    ones."""
    from pipeline.io import read_lines
    from pipeline.text.bpe import merge_bpe

    if args.source:
        lines = [line.split() for _, line in zip(range(count), read_lines(Path(args.source))) if line.strip()]
        info = {"kind": "real", "file": str(args.source)}
    else:
        rng = random.Random(0)
        tokens = list(vocab.tokens[4:])
        lines = [rng.choices(tokens, k=min(60, max(3, int(rng.lognormvariate(3.1, 0.5))))) for _ in range(count)]
        info = {"kind": "synthetic"}
    ids = [vocab.encode(line) + [vocab.eos_id] for line in lines]
    return ids, [len(merge_bpe(line)) for line in lines], {**info, "sentences": len(ids),
                                                           "source_words": sum(len(merge_bpe(x)) for x in lines)}


# -- PBMT benchmarks: where the phrase-based system's artifacts are ---------------------------------------------------

def artifact_arguments(p: argparse.ArgumentParser, task: str) -> None:
    """--task, --profile, --work-dir, --config-dir: where a benchmark finds the pipeline's Luigi artifacts."""
    from pipeline.config import CONFIG_DIR

    p.add_argument("--task", default=task)
    p.add_argument("--profile", default="medium")
    p.add_argument("--work-dir", type=Path, default=REPO / "work")
    p.add_argument("--config-dir", type=Path, default=CONFIG_DIR)


def pbmt_inputs(args: argparse.Namespace) -> dict[str, Path | None]:
    """Paths of the phrase table, LM, weights and source words: explicit ones (`args.table`, `args.lm`,
    `args.weights`, `args.input`), else the profile's Luigi artifacts (built first with `args.build`)."""
    if args.table and args.lm and args.input:
        return {"table": args.table, "lm": args.lm, "weights": args.weights, "input": args.input}
    import luigi

    from tasks.data import TruecaseSplit
    from tasks.lm import TrainLM
    from tasks.smt import TABLE_FAST, BuildPhraseTable, TunePBMT

    where = {"task_name": args.task, "profile": args.profile, "work_dir": str(args.work_dir),
             "config_dir": str(args.config_dir)}
    table, lm, tune = BuildPhraseTable(**where), TrainLM(**where), TunePBMT(**where)
    split = args.split or table.config.splits.tune
    words = TruecaseSplit(split=split, **where)
    needed = [table, lm, words] + ([tune] if args.build_weights else [])
    if args.build and not all(t.complete() for t in needed):
        luigi.build(needed, local_scheduler=True, log_level="WARNING")
    missing = [str(t) for t in needed if not t.complete()]
    if missing:
        raise SystemExit(f"not built yet: {', '.join(missing)} (pass --build, or explicit paths)")
    return {"table": args.table or table.artifact_dir() / TABLE_FAST, "lm": args.lm or lm.artifact_dir() / "lm.bin",
            "weights": args.weights or (tune.artifact_dir() / "weights.json" if tune.complete() else None),
            "input": args.input or words.artifact_dir() / f"words.{table.config.source}.gz"}


def redecode_seconds(folder: Path, indices: list[int], work_dir: Path) -> float:
    """Wall seconds to decode again, in this process, the sentences `indices` of the split whose lattices are in
    `folder` (a DecodePBMT artifact): same phrase table, LM, MERT weights and decoder settings as that run (its
    signature.json), writing lattices and n-best lists as it did, to a temporary folder. Loading is not timed."""
    import json
    import tempfile

    import kenlm

    from pipeline.config import load_task
    from pipeline.io import read_lines
    from pipeline.smt.decoder import Decoder, DecoderSettings
    from pipeline.smt.parallel import Job, decode_all
    from pipeline.smt.phrase_table import FastPhraseTable
    from pipeline.smt.weights import load_weights

    params = json.loads((folder / "signature.json").read_text(encoding="utf-8"))["params"]
    inputs = {Path(p).parts[2]: work_dir / p for p in params["inputs"]}  # <profile>/<task>/<stage>/<name>
    source = load_task(params["task"]).source
    words = [line.split() for line in read_lines(inputs["truecased"] / f"words.{source}.gz")]
    sentences = [words[i] for i in indices]
    table = FastPhraseTable.load(inputs["phrases"] / "phrase-table.npz").filter(sentences)
    decoder = Decoder(table, kenlm.Model(str(inputs["lm"] / "lm.bin")),
                      load_weights(inputs["mert"] / "weights.json").weights, DecoderSettings(**params["decoder"]))
    with tempfile.TemporaryDirectory(prefix="pbmt-redecode-") as tmp:
        started = time.perf_counter()
        decode_all(Job(decoder, sentences, nbest=params["nbest"], lattice_dir=Path(tmp) / "lattices"), 1,
                   desc="pbmt (side by side)")
        return time.perf_counter() - started


# -- output statistics ------------------------------------------------------------------------------------------------

def repeated_4grams(lines: list[str]) -> tuple[int, int]:
    """(4-grams that repeat one earlier in the same line, all 4-grams) over the tokenized lines."""
    repeats = total = 0
    for line in lines:
        words = line.split()
        grams = Counter(tuple(words[i:i + 4]) for i in range(len(words) - 3))
        total += sum(grams.values())
        repeats += sum(c - 1 for c in grams.values())
    return repeats, total


def output_scores(hypotheses: list[str], references: list[str], lang: str) -> dict:
    """Cased BLEU, its 1-gram precision, the length ratio and the repeated 4-grams of detokenized outputs."""
    from pipeline.evaluation.bleu import corpus_bleu

    bleu = corpus_bleu(hypotheses, references, lang)
    repeats, total = repeated_4grams(hypotheses)
    return {"bleu": round(bleu.score, 2), "precision_1": round(bleu.precisions[0], 1),
            "length_ratio": round(bleu.sys_len / max(bleu.ref_len, 1), 2), "repeated_4grams": repeats,
            "4grams": total, "repeated_share": round(repeats / total, 3) if total else 0.0}


# -- measuring on a quiet machine, keeping the logs -----------------------------------------------------------------

def work_folder_arguments(p: argparse.ArgumentParser, config_note: str = "") -> None:
    """--profile, --task, --work-dir, --data-dir, --cache-dir and --config-dir: a built work folder that a benchmark
    builds more stages in with the pipeline's own tasks (pipeline_params)."""
    p.add_argument("--profile", default="medium")
    p.add_argument("--task", required=True)
    p.add_argument("--work-dir", type=Path, default=Path("work"))
    p.add_argument("--data-dir", help="the data folder the systems were built from (default: the project's setting)")
    p.add_argument("--cache-dir", help="the cache folder (default: the project's setting)")
    p.add_argument("--config-dir", type=Path, help="the configs the systems were built with (default: the "
                   f"checkout's configs/){config_note}")


def pipeline_params(args: argparse.Namespace) -> dict[str, Any]:
    """The Luigi tasks' shared parameters of work_folder_arguments (and --processes), less config_dir."""
    return {"task_name": args.task, "profile": args.profile, "work_dir": str(args.work_dir),
            "processes": args.processes, **({"data_dir": args.data_dir} if args.data_dir else {}),
            **({"cache_dir": args.cache_dir} if args.cache_dir else {})}


def set_profile_keys(profile: Path, section: str, settings: dict[str, str]) -> None:
    """Set keys of a profile file's [section] (TOML values as written), replacing a key's line or adding it."""
    text = profile.read_text(encoding="utf-8")
    head, found, rest = text.partition(f"\n[{section}]\n")
    if not found:
        raise SystemExit(f"{profile}: no [{section}] section")
    body, nxt, tail = rest.partition("\n[")
    for key, value in settings.items():
        line = f"{key} = {value}"
        body, replaced = re.subn(rf"^{re.escape(key)} = .*$", line, body, count=1, flags=re.M)
        if not replaced:
            body = f"{line}\n{body}"
    profile.write_text(head + found + body + nxt + tail, encoding="utf-8")


def wait_for_load(max_load: float, timeout_seconds: float, poll: float = 10.0) -> dict[str, Any]:
    """Wait until the 1-minute load average is below `max_load`, at most `timeout_seconds`; what the start saw
    (load_at_start, waited_s, quiet: whether the load was below max_load)."""
    started = time.monotonic()
    while True:
        load = os.getloadavg()[0]
        waited = time.monotonic() - started
        if load < max_load or waited >= timeout_seconds:
            return {"load_at_start": round(load, 2), "waited_s": round(waited, 1), "quiet": load < max_load}
        time.sleep(min(poll, max(0.0, timeout_seconds - waited)))


def steal_seconds(proc_stat: str | None = None) -> float | None:
    """The CPU time the hypervisor has given to other guests since boot (the `steal` column of /proc/stat's `cpu`
    line, in seconds); None where the kernel does not count it. A timed run's growth of it says that the host, not
    the work, slowed the run."""
    if proc_stat is None:
        try:
            proc_stat = Path("/proc/stat").read_text(encoding="ascii")
        except OSError:
            return None
    fields = next((line.split() for line in proc_stat.splitlines() if line.startswith("cpu ")), [])
    if len(fields) < 9:
        return None
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


class RunClock:
    """Wall time, this process's CPU time (all its threads) and the host's steal across one timed run."""

    def __enter__(self) -> "RunClock":
        self._wall, self._cpu, self._steal = time.perf_counter(), time.process_time(), steal_seconds()
        return self

    def __exit__(self, *exc) -> None:
        steal = steal_seconds()
        self.seconds = time.perf_counter() - self._wall
        self.cpu_seconds = time.process_time() - self._cpu
        self.steal_seconds = None if steal is None or self._steal is None else steal - self._steal

    def record(self) -> dict[str, Any]:
        """seconds, cpu_seconds and steal_s (null where not counted), rounded."""
        return {"seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                "steal_s": None if self.steal_seconds is None else round(self.steal_seconds, 2)}


def wait_for_quiet(max_load: float, timeout_minutes: float, what: str) -> list[float]:
    """Wait until the 1-minute load average is below `max_load`; the load averages then (recorded with the run).
    SystemExit after `timeout_minutes`: a figure measured beside other work is not reported."""
    seen = wait_for_load(max_load, 60 * timeout_minutes)
    if not seen["quiet"]:
        raise SystemExit(f"{what}: the 1-minute load stayed at or above {max_load} for {timeout_minutes:g} "
                         f"minutes (now {seen['load_at_start']:.2f}); not measured on a busy machine")
    return [round(x, 2) for x in os.getloadavg()]


def keep_log(source: Path, logs_dir: Path, name: str) -> str:
    """A copy of a run's log in the folder committed with the report; its path."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, logs_dir / name)
    return str(logs_dir / name)
