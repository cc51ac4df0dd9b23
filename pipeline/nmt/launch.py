"""Launching a data-parallel training run with torchrun: on one machine, or across the nodes of a Slurm job.

The run is described by a `TrainingJob` (a JSON file in the run's state folder: the model, the training settings,
the data files, the validation set), which every rank reads: `python -m pipeline.nmt.launch JOB.json` is what
torchrun starts on each rank. Rank 0 writes `result.json` beside it when the run ends. The command:

- one node: ``python -m torch.distributed.run --standalone --nproc-per-node P -m pipeline.nmt.launch JOB``;
- N nodes of a Slurm job: ``srun --nodes N --ntasks-per-node 1 python -m torch.distributed.run --nnodes N
  --nproc-per-node P --rdzv-backend c10d --rdzv-endpoint HEAD:PORT --rdzv-id JOB_ID -m pipeline.nmt.launch JOB``,
  one torchrun per node meeting at the job's first node (``scontrol show hostnames``).

A killed launch resumes from the checkpoints of the state folder when it is started again (Trainer.resume).
"""
from __future__ import annotations

import dataclasses
import gc
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import torch

from pipeline.config import NmtTrainingProfile
from pipeline.errors import PipelineError
from pipeline.io import read_json, read_lines, write_json
from pipeline.nmt.distillation import distilled_corpus
from pipeline.nmt.distributed import Ranks, barrier, rank_device, start, stop
from pipeline.nmt.models import config_from_dict
from pipeline.nmt.precision import training_precision
from pipeline.nmt.train import ParallelText, TrainingResult, Validation, Trainer
from pipeline.vocab import Vocabulary

_LOG = logging.getLogger(__name__)
RENDEZVOUS_PORT = 29500  # torchrun's default port, on the job's first node


class LaunchError(PipelineError):
    """A distributed training run did not finish; the message names the command and its exit status."""


@dataclass
class TrainingJob:
    """Everything a rank needs to train one model; paths are absolute."""

    model: dict[str, Any]  # ModelConfig.to_dict()
    training: dict[str, Any]  # NmtTrainingProfile as a dict
    seed: int
    state_dir: str
    vocabularies: dict[str, str]  # {"source": file, "target": file}, written into state_dir
    train: dict[str, str]  # {"source": bpe gz, "target": bpe gz}, one segment a line; with distillation also
    #                        "teacher": the teacher's translations of the source (bpe gz, line-aligned)
    valid: dict[str, Any] | None = None  # source, target (bpe gz), references (raw gz), sentences, target_lang,
    #                                      tokenizer, truecaser (json or ""), tokenizer_cache
    threads: int = 1  # torch threads per rank
    log_every: int = 10  # updates per row of metrics.csv

    def save(self, path: Path) -> Path:
        write_json(path, dataclasses.asdict(self))
        return path

    @classmethod
    def load(cls, path: Path) -> "TrainingJob":
        return cls(**read_json(path))


def _token_lines(path: str, limit: int | None = None) -> list[list[str]]:
    return [line.split() for line in islice(read_lines(Path(path)), limit)]


def _validation(spec: dict[str, Any]) -> Validation:
    from pipeline.text import TextProcessor, Truecaser, get_tokenizer

    n = spec["sentences"] or None
    text = ParallelText(_token_lines(spec["source"], n), _token_lines(spec["target"], n))
    references = list(islice(read_lines(Path(spec["references"])), n))
    lang = spec["target_lang"]
    truecaser = Truecaser.load(Path(spec["truecaser"])) if spec["truecaser"] else None
    processor = TextProcessor(tokenizer=get_tokenizer(spec["tokenizer"], lang, Path(spec["tokenizer_cache"])),
                              truecaser=truecaser, bpe=None)
    return Validation(text, references, processor.postprocess, lang)


def run_job(job: TrainingJob, ranks: Ranks, **trainer_options: Any) -> TrainingResult:
    """Train as one rank of the job (the process group is joined and left here); options go to the Trainer
    (after_update, ...)."""
    torch.set_num_threads(max(1, job.threads))
    device = rank_device(ranks)
    start(ranks, device)
    try:
        result = _train(job, ranks, device, **trainer_options)
        # The trainer and its DDP reducer are gone (and collected) before the group is torn down, and every rank is
        # done before any tears it down: a reducer outliving its gloo group, or a rank leaving early, aborts a rank
        # ("terminate called without an active exception").
        gc.collect()
        barrier(ranks)
        return result
    finally:
        stop(ranks)


def _train(job: TrainingJob, ranks: Ranks, device: torch.device, **trainer_options: Any) -> TrainingResult:
    training = NmtTrainingProfile(**{**job.training, "seeds": tuple(job.training["seeds"])})
    vocabs = [Vocabulary.load(Path(job.state_dir) / job.vocabularies[side]) for side in ("source", "target")]
    teacher = _token_lines(job.train["teacher"]) if training.distillation != "none" else []
    corpus = distilled_corpus(_token_lines(job.train["source"]), _token_lines(job.train["target"]), teacher,
                              training.distillation)
    if training.distillation != "none":
        _LOG.info("distillation %s: %s", training.distillation, corpus.stats)
    train = ParallelText(corpus.sources, corpus.targets)
    trainer = Trainer(config_from_dict(job.model), training, job.seed, vocabs[0], vocabs[1], train,
                      Path(job.state_dir), valid=_validation(job.valid) if job.valid else None, device=device,
                      vocab_paths=job.vocabularies, log_every=job.log_every, ranks=ranks,
                      precision=training_precision(training.precision, device), **trainer_options)
    return trainer.run()


def result_to_json(result: TrainingResult, ranks: int) -> dict[str, Any]:
    data = dataclasses.asdict(result)
    data["checkpoints"] = [str(p) for p in result.checkpoints]
    data["ranks"] = ranks
    return data


def result_from_json(data: dict[str, Any]) -> TrainingResult:
    fields = {f.name for f in dataclasses.fields(TrainingResult)}
    values = {k: v for k, v in data.items() if k in fields}
    values["checkpoints"] = [Path(p) for p in values["checkpoints"]]
    return TrainingResult(**values)


def launch_command(job_file: Path, per_node: int, nodes: int = 1, head: str = "", job_id: str = "",
                   port: int = RENDEZVOUS_PORT) -> list[str]:
    """The command that starts `per_node` ranks on each of `nodes` nodes (see the module docstring)."""
    worker = ["-m", "pipeline.nmt.launch", str(job_file)]
    if nodes == 1:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                f"--nproc-per-node={per_node}", *worker]
    if not head or not job_id:
        raise LaunchError(f"training on {nodes} nodes needs the job's first node and id (run it in a Slurm job)")
    return ["srun", f"--nodes={nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
            sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--nproc-per-node={per_node}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint={head}:{port}", f"--rdzv-id={job_id}", *worker]


def slurm_nodes() -> tuple[int, str, str]:
    """(nodes, first node, job id) of the Slurm job this process runs in; (1, "", "") outside one."""
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES", "1") or 1)
    if nodes == 1:
        return 1, "", os.environ.get("SLURM_JOB_ID", "")
    listed = subprocess.run(["scontrol", "show", "hostnames", os.environ["SLURM_JOB_NODELIST"]],
                            capture_output=True, text=True, check=True).stdout.split()
    return nodes, listed[0], os.environ["SLURM_JOB_ID"]


def ranks_per_node(requested: int) -> int:
    """A profile's `ranks`: itself, or (0) one per visible GPU, at least one."""
    return requested if requested > 0 else max(1, torch.cuda.device_count())


def launch(job: TrainingJob, per_node: int, nodes: int = 1, head: str = "", job_id: str = "") -> TrainingResult:
    """Run the job under torchrun and return rank 0's result; a failed run raises LaunchError."""
    state = Path(job.state_dir)
    job_file = job.save(state / "job.json")
    (state / "result.json").unlink(missing_ok=True)
    command = launch_command(job_file, per_node, nodes, head, job_id)
    _LOG.info("training on %d x %d ranks: %s", nodes, per_node, " ".join(command))
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, job.threads))}
    done = subprocess.run(command, env=env)
    if done.returncode != 0 or not (state / "result.json").is_file():
        raise LaunchError(f"distributed training in {state} ended with exit status {done.returncode} "
                          f"({' '.join(command[:6])} ...); start it again to resume from its last checkpoint")
    return result_from_json(read_json(state / "result.json"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pipeline.nmt.launch JOB.json (started by torchrun on every rank)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    job, ranks = TrainingJob.load(Path(args[0])), Ranks.from_env()
    result = run_job(job, ranks)
    if ranks.main:
        write_json(Path(job.state_dir) / "result.json", result_to_json(result, ranks.world_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
