"""Training one NMT model: token-count batches (several accumulated into one update with `update_freq`), Adam
with a warm-up schedule, label smoothing, gradient clipping, validation loss and greedy BLEU on the tuning set,
checkpoints every N updates (the last K kept), a wall-clock budget, and exact resume after a kill.

Everything a run needs to continue lives in its state folder: `checkpoint-<update>.pt` files holding the weights
and the training state (optimizer, scheduler, the batch position, torch's random states, the update count, the
seconds spent) and `metrics.csv`. `train_model` resumes from the newest checkpoint there, so a killed
run continues to the same parameters as an uninterrupted one (same seed, same device and thread count): nothing
random happens between saving a checkpoint and the next update, and an epoch's batches depend only on
(seed, epoch). Time spent after the last checkpoint of a killed run is lost and not counted against the budget.

Data-parallel training (pipeline/nmt/distributed.py): with several ranks each trains on its slice of the same
global batch, rank 0 validates and writes the checkpoints (with every rank's random states) and the metrics, and a
run resumes from them under the same ranks exactly. Mixed precision (pipeline/nmt/precision.py): the forward pass
under autocast, and for fp16 a gradient scaler whose state is checkpointed.

Speed: no update waits for the device. The loss sums stay on it and are read every `log_every` updates, when the
ranks also agree on the elapsed time that decides the budget stop; on a GPU the next update's batches are collated,
pinned and copied on a worker thread. Adam is the fused kernel, and `compile` runs the model through torch.compile.
"""
from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tqdm import tqdm

from pipeline.config import NmtTrainingProfile
from pipeline.evaluation import corpus_bleu
from pipeline.nmt.token_batches import (BatchStream, TokenBatcher, UpdateBatches, UpdateStream, collate, length_batches,
                                   source_ids)
from pipeline.nmt.checkpoint import (checkpoint_name, checkpoint_update, is_snapshot, list_checkpoints, load_checkpoint,
                                     save_checkpoint, strip_training_state)
from pipeline.nmt.distributed import Ranks, all_sum, barrier, from_main, gather, shard
from pipeline.nmt.greedy import translate_ids
from pipeline.nmt.interface import NMTModel
from pipeline.nmt.loss import label_smoothed_loss
from pipeline.nmt.metrics import MetricsLog
from pipeline.nmt.models import ModelConfig, build_model
from pipeline.nmt.precision import autocast, grad_scaler
from pipeline.nmt.lr_schedule import make_scheduler
from pipeline.vocab import Vocabulary

_LOG = logging.getLogger(__name__)
ADAM_BETAS = (0.9, 0.98)  # Vaswani et al. 2017, also used for the GRU models
ADAM_EPS = 1e-9


def default_device() -> torch.device:
    """CUDA when there is a GPU, else the CPU: one code path for both."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class ParallelText:
    """Token sequences (BPE subwords, no specials) of a parallel corpus."""

    sources: list[list[str]]
    targets: list[list[str]]

    def __post_init__(self) -> None:
        if len(self.sources) != len(self.targets):
            raise ValueError(f"{len(self.sources)} sources but {len(self.targets)} targets")


@dataclass
class Validation:
    """The validation set: subword text for the loss, and raw references with the postprocessing for BLEU."""

    text: ParallelText
    references: Sequence[str] | None = None  # detokenized references; None skips BLEU
    postprocess: Callable[[list[str]], str] = " ".join  # output subwords -> detokenized text
    target_lang: str = "en"


@dataclass
class TrainingResult:
    updates: int
    epoch: int
    elapsed: float
    stop_reason: str  # "max_updates" or "budget"
    checkpoints: list[Path]
    resumed_from: int | None
    validation: dict[str, Any] = field(default_factory=dict)
    target_tokens: int = 0
    parameters: int = 0
    train_pairs: int = 0


def _rng_state() -> dict[str, Any]:
    """torch's random states (dropout); the batch order has its own generators, seeded by (seed, epoch)."""
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _rank_seed(seed: int, rank: int, update: int = 0) -> int:
    """The dropout seed of a rank other than 0 (rank 0 keeps the single-process stream)."""
    return int(np.random.SeedSequence([seed, rank, update]).generate_state(1)[0])


class _NoMetrics:
    """What ranks other than 0 write: nothing."""

    def write(self, *args: Any, **values: Any) -> None:
        pass

    def close(self) -> None:
        pass


class Trainer:
    """One training run of one model; see the module docstring. `run()` trains until max_updates or the budget."""

    def __init__(self, config: ModelConfig, training: NmtTrainingProfile, seed: int, src_vocab: Vocabulary,
                 tgt_vocab: Vocabulary, train: ParallelText, state_dir: Path, valid: Validation | None = None,
                 device: str | torch.device | None = None, vocab_paths: dict[str, str] | None = None,
                 log_every: int = 10, after_update: Callable[[int], None] | None = None,
                 ranks: Ranks = Ranks(), precision: str = "fp32") -> None:
        """`ranks`: this process's place in a data-parallel job (the process group already started);
        `precision`: as resolved for the device (pipeline/nmt/precision.training_precision)."""
        self.config, self.training, self.seed = config, training, seed
        self.src_vocab, self.tgt_vocab, self.valid = src_vocab, tgt_vocab, valid
        self.state_dir, self.vocab_paths = Path(state_dir), vocab_paths or {}
        self.device = torch.device(device) if device is not None else default_device()
        self.ranks, self.precision = ranks, precision
        self.log_every, self.after_update = max(1, log_every), after_update
        self.src_ids = [src_vocab.encode(s) for s in train.sources]
        self.tgt_ids = [tgt_vocab.encode(t) for t in train.targets]
        if not self.src_ids:
            raise ValueError("no training examples")
        self.tgt_lengths = np.array([len(t) + 1 for t in self.tgt_ids], dtype=np.int64)  # EOS included
        torch.manual_seed(seed)
        self.model: NMTModel = build_model(config).to(self.device)
        self.net: torch.nn.Module = self.model  # what the forward pass calls: the model, or its DDP wrapper
        if ranks.distributed:
            self.net = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                # LayerDrop leaves a skipped layer's parameters without a gradient in that rank's pass
                find_unused_parameters=getattr(config, "decoder_layerdrop", 0.0) > 0)
            if not ranks.main:
                torch.manual_seed(_rank_seed(seed, ranks.rank))
        if training.compile:
            self.net = torch.compile(self.net, dynamic=True)
        self.scaler = grad_scaler(precision, self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=training.lr, betas=ADAM_BETAS, eps=ADAM_EPS,
                                          fused=self.device.type in ("cpu", "cuda"))
        self.scheduler = make_scheduler(self.optimizer, training.lr_schedule, training.warmup_updates,
                                        training.max_updates)
        self.batcher = TokenBatcher([len(s) + 1 for s in self.src_ids], [len(t) + 1 for t in self.tgt_ids],
                                    training.max_tokens, seed)
        self.updates = self._update_stream(BatchStream(self.batcher))
        self.update, self.elapsed, self.target_tokens = 0, 0.0, 0
        self.resumed_from: int | None = None
        self.last_validation: dict[str, Any] = {}

    # -- batches --------------------------------------------------------------------------------------------
    def _update_stream(self, stream: BatchStream) -> UpdateStream:
        """The updates from `stream`'s position; on CUDA prepared a step ahead on a worker thread."""
        return UpdateStream(stream, self.training.update_freq, self.prepare,
                            prefetch=self.device.type == "cuda")

    def prepare(self, ids: list[np.ndarray]) -> UpdateBatches:
        """This rank's part of each global batch of an update, collated and on the device.

        A rank whose part is empty (fewer rows than ranks) gets one row with weight 0, since every rank must take
        part in DDP's gradient all-reduce."""
        cuda = self.device.type == "cuda"
        parts = []
        for global_ids in ids:
            local, weight = shard(global_ids, self.ranks), 1.0
            if not len(local):
                local, weight = global_ids[:1], 0.0
            batch = collate([self.src_ids[i] for i in local], [self.tgt_ids[i] for i in local], self.src_vocab,
                            self.tgt_vocab, local)
            parts.append(((batch.pin_memory() if cuda else batch).to(self.device, non_blocking=cuda), weight))
        return UpdateBatches(ids, parts, int(sum(self.tgt_lengths[i].sum() for i in ids)))

    # -- state ----------------------------------------------------------------------------------------------
    def _training_state(self, rank_rngs: list[dict[str, Any]]) -> dict[str, Any]:
        state = {"update": self.update, "elapsed": self.elapsed, "target_tokens": self.target_tokens,
                 "position": self.updates.position, "optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict(), "rng": rank_rngs[0], "seed": self.seed,
                 "validation": self.last_validation}
        if len(rank_rngs) > 1:
            state["rank_rngs"] = rank_rngs
        if self.scaler.is_enabled():
            state["scaler"] = self.scaler.state_dict()
        return state

    def _restore_rng(self, state: dict[str, Any]) -> None:
        """This rank's random states; a run resumed under another number of ranks reseeds ranks above 0."""
        saved = state.get("rank_rngs", [state["rng"]])
        if len(saved) == self.ranks.world_size:
            _set_rng_state(saved[self.ranks.rank])
        elif self.ranks.main:
            _set_rng_state(state["rng"])
        else:
            _LOG.warning("resuming %d ranks from a run of %d: rank %d's dropout stream restarts from its seed",
                         self.ranks.world_size, len(saved), self.ranks.rank)
            torch.manual_seed(_rank_seed(self.seed, self.ranks.rank, self.update))

    def resume(self) -> int | None:
        """Restore the newest checkpoint of the state folder, if any; returns its update number."""
        found = list_checkpoints(self.state_dir)
        if not found:
            return None
        ckpt = load_checkpoint(found[-1])
        if ckpt.config != self.config or ckpt.training is None:
            raise ValueError(f"{found[-1]}: belongs to another model or run (config {ckpt.config}); "
                             f"remove {self.state_dir} to start afresh")
        state = ckpt.training
        self.model.load_state_dict(ckpt.model)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.updates.close()
        self.updates = self._update_stream(BatchStream(self.batcher, **state["position"]))
        self.update, self.elapsed = state["update"], state["elapsed"]
        self.target_tokens, self.last_validation = state["target_tokens"], state["validation"]
        if "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])
        self._restore_rng(state)
        self.resumed_from = self.update
        return self.update

    def save(self) -> Path | None:
        """Rank 0 writes the checkpoint (every rank takes part: the random states are gathered); the path on
        rank 0, None elsewhere."""
        rank_rngs = gather(_rng_state(), self.ranks)
        path = None
        if self.ranks.main:
            path = save_checkpoint(self.state_dir / checkpoint_name(self.update), self.config,
                                   self.model.state_dict(), self.vocab_paths, training=self._training_state(rank_rngs),
                                   meta={"seed": self.seed})
            for old in list_checkpoints(self.state_dir)[: -self.training.keep_checkpoints]:
                if is_snapshot(checkpoint_update(old), self.training.snapshot_every):
                    strip_training_state(old)
                else:
                    old.unlink()
        barrier(self.ranks)  # no rank runs ahead of a checkpoint that a resume would start from
        return path

    # -- validation -----------------------------------------------------------------------------------------
    @torch.no_grad()
    def validate(self) -> dict[str, Any]:
        """Per-token NLL (no smoothing) of the validation targets and greedy BLEU against the references."""
        if self.valid is None:
            return {}
        was_training = self.model.training
        self.model.eval()
        text = self.valid.text
        srcs = [self.src_vocab.encode(s) for s in text.sources]
        tgts = [self.tgt_vocab.encode(t) for t in text.targets]
        order = sorted(range(len(srcs)), key=lambda i: (len(tgts[i]), len(srcs[i])))
        src_lengths, tgt_lengths = np.array([len(s) + 1 for s in srcs]), np.array([len(t) + 1 for t in tgts])
        nll, tokens = 0.0, 0
        for chunk in length_batches(src_lengths, tgt_lengths, np.array(order), self.training.max_tokens):
            batch = collate([srcs[i] for i in chunk], [tgts[i] for i in chunk], self.src_vocab,
                            self.tgt_vocab).to(self.device)
            logits = self.model(batch.src, batch.src_lengths, batch.tgt_in)
            nll += float(label_smoothed_loss(logits, batch.tgt_out, self.tgt_vocab.pad_id, 0.0)[1])
            tokens += batch.target_tokens
        loss = nll / max(tokens, 1)
        result: dict[str, Any] = {"valid_loss": loss, "valid_ppl": math.exp(min(loss, 50.0))}
        if self.valid.references is not None:
            sources = [source_ids(s, self.src_vocab) for s in text.sources]
            outputs = translate_ids(self.model, sources, self.src_vocab.pad_id, self.device)
            hyps = [self.valid.postprocess(self.tgt_vocab.decode(ids)) for ids in outputs]
            result["valid_bleu"] = corpus_bleu(hyps, list(self.valid.references), self.valid.target_lang).score
        self.model.train(was_training)
        return result

    # -- the loop -------------------------------------------------------------------------------------------
    def _stop_reason(self) -> str | None:
        t = self.training
        if t.max_updates > 0 and self.update >= t.max_updates:
            return "max_updates"
        if t.budget_seconds > 0 and self.elapsed >= t.budget_seconds:
            return "budget"
        return None

    def train_step(self, update: UpdateBatches) -> tuple[torch.Tensor, torch.Tensor, int]:
        """One update over its global batches: (this rank's summed smoothed loss, its summed NLL) as 0-dim tensors
        on the device, and the target tokens of all ranks. Nothing here waits for the device.

        The update's gradient is the sum over its batches and ranks divided by its target tokens, so accumulating
        k batches equals one update over their union (up to summation order)."""
        self.optimizer.zero_grad(set_to_none=True)
        # DDP averages the ranks' gradients: dividing by ntokens / ranks makes their sum the single-process one
        scale = update.target_tokens / self.ranks.world_size
        loss_sum = nll_sum = torch.zeros((), device=self.device)
        for i, (batch, weight) in enumerate(update.parts):
            last = i == len(update.parts) - 1
            with self.net.no_sync() if self.ranks.distributed and not last else contextlib.nullcontext():
                with autocast(self.precision, self.device):
                    logits = self.net(batch.src, batch.src_lengths, batch.tgt_in)
                loss, nll = label_smoothed_loss(logits, batch.tgt_out, self.tgt_vocab.pad_id,
                                                self.training.label_smoothing)
                if weight != 1.0:
                    loss, nll = loss * weight, nll * weight
                self.scaler.scale(loss / scale).backward()
            loss_sum, nll_sum = loss_sum + loss.detach(), nll_sum + nll
        if self.training.clip_norm > 0:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.training.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        return loss_sum, nll_sum, update.target_tokens

    def _synced_elapsed(self, base: float, started: float) -> float:
        """Rank 0's elapsed seconds on every rank (a collective: every rank calls it at the same update)."""
        return from_main(base + time.monotonic() - started, self.ranks)

    def run(self) -> TrainingResult:
        self.resume()
        main = self.ranks.main
        metrics = MetricsLog(self.state_dir / "metrics.csv", self.update, self.state_dir / "tensorboard") \
            if main else _NoMetrics()
        bar = tqdm(total=self.training.max_updates or None, initial=self.update, disable=None if main else True,
                   unit="upd", desc=f"{self.config.architecture} seed {self.seed}")
        self.model.train()
        started, base = time.monotonic(), self.elapsed
        # loss and nll since the last log row, on the device; read (and summed over the ranks) when logged
        sums, tokens = torch.zeros(2, dtype=torch.float64, device=self.device), 0
        last_log = time.monotonic()
        try:
            while (reason := self._stop_reason()) is None:
                loss, nll, ntokens = self.train_step(next(self.updates))
                self.update += 1
                self.target_tokens += ntokens
                sums += torch.stack([loss, nll]).double()
                tokens += ntokens
                bar.update(1)
                if not self.ranks.distributed:
                    self.elapsed = base + time.monotonic() - started
                if self.update % self.log_every == 0:
                    # the ranks agree on the elapsed time here only, so they take the budget stop at the same update
                    self.elapsed = self._synced_elapsed(base, started)
                    loss_sum, nll_sum = all_sum(sums.tolist(), self.ranks)
                    now = time.monotonic()
                    row = {"epoch": self.updates.position["epoch"], "elapsed_s": round(self.elapsed, 3),
                           "lr": self.scheduler.get_last_lr()[0], "train_loss": loss_sum / tokens,
                           "train_nll": nll_sum / tokens, "target_tokens_per_s": tokens / max(now - last_log, 1e-9)}
                    metrics.write("train", self.update, **row)
                    bar.set_postfix(loss=f"{row['train_loss']:.3f}", lr=f"{row['lr']:.2e}")
                    sums.zero_()
                    tokens, last_log = 0, now
                if self.update % self.training.checkpoint_every == 0 or self._stop_reason() is not None:
                    self.last_validation = self.validate() if main else {}
                    self.elapsed = self._synced_elapsed(base, started)
                    metrics.write("valid", self.update, epoch=self.updates.position["epoch"],
                                  elapsed_s=round(self.elapsed, 3), **self.last_validation)
                    self.save()
                    if main:
                        _LOG.info("update %d: %s", self.update, self.last_validation)
                    # a log window never spans a checkpoint, so a resumed run logs the same averages
                    sums.zero_()
                    tokens, last_log = 0, time.monotonic()
                if self.after_update is not None:
                    self.after_update(self.update)
        finally:
            self.updates.close()
            bar.close()
            metrics.close()
        return TrainingResult(self.update, self.updates.position["epoch"], self.elapsed, reason,
                              list_checkpoints(self.state_dir), self.resumed_from, self.last_validation,
                              self.target_tokens, self.model.num_parameters(), len(self.src_ids))


def train_model(config: ModelConfig, training: NmtTrainingProfile, seed: int, src_vocab: Vocabulary,
                tgt_vocab: Vocabulary, train: ParallelText, state_dir: Path, **options: Any) -> TrainingResult:
    """Train (or resume) one model in `state_dir`; options are Trainer's (valid, device, vocab_paths, ...)."""
    return Trainer(config, training, seed, src_vocab, tgt_vocab, train, state_dir, **options).run()
