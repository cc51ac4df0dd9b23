"""Training batches by token count, from length-sorted buckets; deterministic per seed and resumable.

Each epoch: shuffle the examples with a generator seeded by (seed, epoch), sort them stably by (target length, source
length) so that ties stay shuffled, cut the sorted run into batches whose padded size (rows x longest side, BOS/EOS
included) stays within `max_tokens`, then shuffle the batch order. An epoch's batches depend only on (seed, epoch),
so the position (epoch, index of the next batch) is all a resumed run needs to continue exactly where it stopped.

An update may accumulate several batches (`update_freq`); UpdateStream groups them and, on a GPU, prepares the
next update on a worker thread (pinned memory, non-blocking copies) while the current one trains.

Sequences: a source is its token ids followed by EOS; a target is fed as BOS + ids (decoder input) and predicted as
ids + EOS (decoder output). Ids and specials come from the Vocabulary.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import Tensor

from pipeline.vocab import Vocabulary


@dataclass
class Batch:
    """src [N, S], src_lengths [N]; tgt_in, tgt_out [N, T] padded with the target pad id; tgt_lengths [N] (EOS
    included); ids [N] the examples' positions in their data set."""

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    tgt_lengths: Tensor
    ids: Tensor

    @property
    def target_tokens(self) -> int:
        """Real (unpadded) target tokens predicted, EOS included."""
        return int(self.tgt_lengths.sum())

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "Batch":
        return Batch(*(t.to(device, non_blocking=non_blocking) for t in (self.src, self.src_lengths, self.tgt_in,
                                                                          self.tgt_out, self.tgt_lengths, self.ids)))

    def pin_memory(self) -> "Batch":
        """The batch in page-locked memory, so that a copy to a GPU can overlap computation."""
        return Batch(*(t.pin_memory() for t in (self.src, self.src_lengths, self.tgt_in, self.tgt_out,
                                                self.tgt_lengths, self.ids)))


def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    """int64 [N, max length] padded with pad_id, and the lengths [N]."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lengths.max()) if len(seqs) else 0), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out, lengths


def source_ids(tokens: Sequence[str], vocab: Vocabulary) -> list[int]:
    """A source sentence as the encoder reads it: ids then EOS."""
    return vocab.encode(tokens) + [vocab.eos_id]


def collate(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], src_vocab: Vocabulary,
            tgt_vocab: Vocabulary, ids: Sequence[int] | None = None) -> Batch:
    """A batch from token ids without specials: sources get EOS, targets BOS (input) and EOS (output)."""
    src, src_lengths = pad_sequences([list(s) + [src_vocab.eos_id] for s in sources], src_vocab.pad_id)
    tgt_in, _ = pad_sequences([[tgt_vocab.bos_id] + list(t) for t in targets], tgt_vocab.pad_id)
    tgt_out, tgt_lengths = pad_sequences([list(t) + [tgt_vocab.eos_id] for t in targets], tgt_vocab.pad_id)
    ids = torch.as_tensor(list(ids) if ids is not None else range(len(sources)), dtype=torch.long)
    return Batch(src, src_lengths, tgt_in, tgt_out, tgt_lengths, ids)


def length_batches(src_lengths: np.ndarray, tgt_lengths: np.ndarray, order: np.ndarray,
                   max_tokens: int) -> list[np.ndarray]:
    """Cut `order` (example ids, already sorted) into runs whose rows x (longest side + 1) <= max_tokens.

    An example longer than max_tokens on its own still gets a batch of one.
    """
    batches, start, longest = [], 0, 0
    for pos, i in enumerate(order):
        size = max(src_lengths[i], tgt_lengths[i]) + 1
        if pos > start and (pos - start + 1) * max(longest, size) > max_tokens:
            batches.append(order[start:pos])
            start, longest = pos, 0
        longest = max(longest, size)
    if start < len(order):
        batches.append(order[start:])
    return batches


class TokenBatcher:
    """The batches of every epoch (lists of example ids), a pure function of (seed, epoch)."""

    def __init__(self, src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int, seed: int) -> None:
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(f"{len(src_lengths)} source lengths but {len(tgt_lengths)} target lengths")
        if not len(src_lengths):
            raise ValueError("no training examples to batch")
        self.src_lengths = np.asarray(src_lengths, dtype=np.int64)
        self.tgt_lengths = np.asarray(tgt_lengths, dtype=np.int64)
        self.max_tokens, self.seed = max_tokens, seed

    def epoch(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, epoch])
        shuffled = rng.permutation(len(self.src_lengths))
        order = shuffled[np.lexsort((self.src_lengths[shuffled], self.tgt_lengths[shuffled]))]
        batches = length_batches(self.src_lengths, self.tgt_lengths, order, self.max_tokens)
        return [batches[i] for i in rng.permutation(len(batches))]


class BatchStream:
    """Endless iteration over the batcher's epochs from a position; `position` is what a checkpoint saves."""

    def __init__(self, batcher: TokenBatcher, epoch: int = 0, index: int = 0) -> None:
        self.batcher, self.epoch, self.index = batcher, epoch, index
        self._batches: list[np.ndarray] | None = None

    @property
    def position(self) -> dict[str, int]:
        """{"epoch": e, "index": i}: the next batch is batch i of epoch e."""
        return {"epoch": self.epoch, "index": self.index}

    def __iter__(self) -> Iterator[np.ndarray]:
        return self

    def __next__(self) -> np.ndarray:
        if self._batches is None:
            self._batches = self.batcher.epoch(self.epoch)
        if self.index >= len(self._batches):
            self.epoch, self.index = self.epoch + 1, 0
            self._batches = self.batcher.epoch(self.epoch)
        batch = self._batches[self.index]
        self.index += 1
        return batch


@dataclass
class UpdateBatches:
    """The batches of one update: the global batches' example ids, this rank's part of each (collated, on the
    device, with its weight: 0 for a stand-in row when the rank's part was empty) and the global target tokens."""

    ids: list[np.ndarray]
    parts: list[tuple[Batch, float]]
    target_tokens: int


class UpdateStream:
    """The updates of a BatchStream: `update_freq` batches each, prepared by `prepare` (collation and the copy to
    the device). With `prefetch` the next update is prepared on a worker thread while the current one trains.

    `position` is the stream's position after the updates handed out so far, not after the one prepared ahead:
    that is what a checkpoint saves, so a resumed run sees the same batches.
    """

    def __init__(self, stream: BatchStream, update_freq: int,
                 prepare: Callable[[list[np.ndarray]], UpdateBatches], prefetch: bool = False) -> None:
        if update_freq < 1:
            raise ValueError(f"update_freq {update_freq}: must be at least 1")
        self.stream, self.update_freq, self.prepare = stream, update_freq, prepare
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="batches") if prefetch else None
        self._ahead: tuple[dict[str, int], Future | UpdateBatches] | None = None
        self.position = stream.position

    def _draw(self) -> tuple[dict[str, int], Future | UpdateBatches]:
        position = self.stream.position
        ids = [next(self.stream) for _ in range(self.update_freq)]
        return position, self._pool.submit(self.prepare, ids) if self._pool else self.prepare(ids)

    def __iter__(self) -> Iterator[UpdateBatches]:
        return self

    def __next__(self) -> UpdateBatches:
        _, current = self._ahead or self._draw()
        self._ahead = self._draw() if self._pool else None
        self.position = self._ahead[0] if self._ahead else self.stream.position
        return current.result() if isinstance(current, Future) else current

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
