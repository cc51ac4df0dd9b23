"""L and acceptors of PBMT word lattices in a pretrained model's units: the BPE path's shard builders
(lmatrix_shards.build_lmatrix_shard, acceptor.build_acceptor_shard) with the mapping of lattices/model_units.py.

    mapper = model_unit_mapper(vocab, lambda words: target.postprocess(words, subword=False))
    build_model_lmatrix_shard(paths, mapper, len(vocab), theta, alpha, "tropical", 0, out / "shard-0.npz")
    store = LMatrixStore([out / "shard-0.npz"])          # lmbr_hook_factory(store, vocab.bos_id, len(vocab), ...)
    build_model_acceptor_shard(paths, mapper, 0, out / "acceptors-0.npz")   # load_acceptors: the -lat searches

`vocab` is a loaded model's PretrainedVocabulary (pipeline/nmt/pretrained.py) with its target ids shifted by
LABEL_OFFSET, so that the mapped lattices' labels (the model's ids + LABEL_OFFSET) are the decoder's target ids and
L's columns index its scores [R, V] directly. `target` is the target language's TextProcessor of the PBMT's words
(detruecaser, Moses detokenizer): the mapping asks it how each word is written in its left context.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from lattices.acceptor import write_acceptor_shard
from lattices.lmatrix_shards import write_lmatrix_shard
from lattices.model_units import (LABEL_OFFSET, ModelUnitMapper, map_lattice_to_model, mapping_mismatches,
                                  sentencepiece_pieces)
from lattices.posteriors import MAX_ORDER
from lattices.theta import Theta

__all__ = ["MODEL_UNIT_CONVENTION", "build_model_acceptor_shard", "build_model_lmatrix_shard", "mapping_statistics",
           "model_unit_mapper"]

MODEL_UNIT_CONVENTION = ("word arcs -> the pretrained model's SentencePiece ids of each word in its left context of "
                         "the detokenized, detruecased text, + 1 (weight on the first piece); <s> -> the search's "
                         "first token, </s> -> EOS; epsilon kept")


def model_unit_mapper(vocab: Any, postprocess: Callable[[list[str]], str]) -> ModelUnitMapper:
    """The ModelUnitMapper of a loaded PretrainedVocabulary (offset LABEL_OFFSET): the model's own SentencePiece
    model of the target side (Marian's target.spm, M2M100's sentencepiece.bpe.model) and its ids; for a fast
    tokenizer without one (NLLB's tokenizer.json), the fast tokenizer's own pieces (`tokenize`, which follows
    SentencePiece: a "▁" for a leading space and the dummy prefix). Either way mapping_mismatches checks the result
    against the tokenizer itself.

    Raises ValueError for a vocabulary with another offset, or a tokenizer with neither.
    """
    if vocab.offset != LABEL_OFFSET:
        raise ValueError(f"the model's target ids must be shifted by {LABEL_OFFSET} (load_pretrained(..., "
                         f"offset={LABEL_OFFSET})) for its lattices' labels to be its ids, not by {vocab.offset}")
    tokenizer = vocab.tokenizer
    processor = getattr(tokenizer, "spm_target", None) or getattr(tokenizer, "sp_model", None)
    if processor is None and callable(getattr(tokenizer, "tokenize", None)):
        processor = _FastPieces(tokenizer)
    if processor is None:
        raise ValueError(f"{type(tokenizer).__name__}: no SentencePiece processor or tokenize() to map lattices "
                         "with")
    return ModelUnitMapper(postprocess, sentencepiece_pieces(processor), tokenizer.convert_tokens_to_ids,
                           bos_id=vocab.bos_id - vocab.offset, eos_id=vocab.eos_id - vocab.offset,
                           unk_id=vocab.unk_id - vocab.offset)


class _FastPieces:
    """A fast tokenizer as the part of a SentencePieceProcessor that sentencepiece_pieces uses."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, text: str, out_type: type = str) -> list[str]:
        return list(self.tokenizer.tokenize(text))


def build_model_lmatrix_shard(lattice_paths: Sequence[Path], mapper: ModelUnitMapper, vocab_size: int, theta: Theta,
                              alpha: float | None, semiring: str, nbest: int, out_path: Path,
                              order: int = MAX_ORDER, engine: str = "exact", max_states: int = 0,
                              model: str = "", encode: Callable[[str], list[int]] | None = None) -> dict[str, Any]:
    """Posteriors and L of the word lattice files (``<i>.fst``) in the model's units into one shard ``out_path``
    (read back with lmatrix_shards.load_shard or LMatrixStore); returns the statistics of build_lmatrix_shard and
    the mapping's own (mapping_statistics).

    vocab_size: the decoder's target vocabulary (the model's output size + LABEL_OFFSET); the other arguments as
    for build_lmatrix_shard; `model` names the model in the shard's signature; `encode`: the model's tokenizer
    (text -> ids without specials), to check the mapping on some paths of each lattice.
    """
    stats = write_lmatrix_shard(lattice_paths, lambda lattice: map_lattice_to_model(lattice, mapper), vocab_size,
                                theta, alpha, semiring, nbest, out_path, order, engine, max_states,
                                {"units": MODEL_UNIT_CONVENTION, "model": model})
    return {**stats, **mapping_statistics(lattice_paths, mapper, encode)}


def mapping_statistics(lattice_paths: Sequence[Path], mapper: ModelUnitMapper,
                       encode: Callable[[str], list[int]] | None) -> dict[str, Any]:
    """What the mapping met in these lattices: the words mapped and those with an <unk> piece (the model cannot
    spell them, and the L of their <unk> would reward a word the model's output then drops), and with `encode`, the
    paths checked against the tokenizer (mapping_mismatches: a few per lattice) and those that differ."""
    found: dict[str, Any] = {"mapped_words": len(mapper.words), "unknown_words": sorted(mapper.unknown)}
    if encode is not None:
        from lattices.fst_io import read_lattice

        check = mapping_mismatches([read_lattice(Path(p)) for p in lattice_paths], mapper, encode,
                                   paths_per_lattice=3, all_paths_below=4)
        found.update({"checked_paths": check.paths, "mismatched_paths": check.mismatches,
                      "mismatch_examples": [text for text, _, _ in check.examples[:3]]})
    return found


def build_model_acceptor_shard(lattice_paths: Sequence[Path], mapper: ModelUnitMapper, nbest: int, out_path: Path,
                               engine: str = "openfst", max_states: int = 0) -> dict:
    """The acceptors of the word lattice files in the model's units (labels: the decoder's target ids) into one
    shard ``out_path`` (read back with acceptor.load_acceptors); the statistics of build_acceptor_shard."""
    return write_acceptor_shard(lattice_paths, lambda lattice: map_lattice_to_model(lattice, mapper),
                                mapper.bos_id + LABEL_OFFSET, mapper.eos_id + LABEL_OFFSET, nbest, out_path, engine,
                                max_states)
