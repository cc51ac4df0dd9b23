"""Translate text with a trained NMT model or ensemble: preprocessing, batched beam decoding, postprocessing, timings.

    models = load_models([path, ...], device)        checkpoint files, system.json files or NMT artifact folders
    result = translate_lines(lines, models, settings, source=processor or None, target=processor)

    models = load_models([folder], languages=("de", "en"))        a pretrained `transformers` model folder
    result = translate_lines(raw_lines, models, settings)

`source` is the source language's TextProcessor (tokenizer, truecaser, BPE); None means the lines are already BPE
subwords. `target` turns the output subwords back into text (BPE merge, detruecase, detokenize). A pretrained model
(pipeline/nmt/pretrained.py) reads the raw lines through its own tokenizer and writes text through it: `source`,
if given, only counts the source words, and `target` is not used. An empty source line is not decoded and gives an
empty translation. Timings: seconds per phase, source and target words (words
before BPE, after tokenization), words per minute of source words over the decoding time, and the peak memory:
torch.cuda.max_memory_allocated on CUDA, the process's peak resident set size (resource.getrusage) on the CPU.
"""
from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from pipeline.decode.batching import decode_sources, position_limit
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.finalize import Hypothesis
from pipeline.decode.hooks import HookFactory
from pipeline.decode.sampling import SamplingSettings, sample_batches
from pipeline.errors import DataError
from pipeline.nmt.checkpoint import (CheckpointError, list_checkpoints, load_checkpoint, load_vocabularies,
                                     model_from_checkpoint)
from pipeline.nmt.interface import Ensemble
from pipeline.nmt.pretrained import PretrainedVocabulary, is_pretrained_folder, load_pretrained
from pipeline.nmt.speedups import CpuSpeedups, apply_speedups
from pipeline.nmt.system import system_members
from pipeline.text import TextProcessor
from pipeline.text.bpe import merge_bpe
from pipeline.vocab import Vocabulary

__all__ = ["LoadedModels", "Translation", "format_nbest", "load_models", "model_files", "peak_memory",
           "source_lengths", "translate_lines"]


@dataclass
class LoadedModels:
    """An Ensemble (of one model or more, in eval mode on `device`), its vocabularies and its member files.

    For a pretrained model both vocabularies are its PretrainedVocabulary (encode_line: raw text -> the encoder's
    ids; target ids shifted by one, id 0 free for the FST epsilon) and `members` is its folder.
    """

    ensemble: Ensemble
    src_vocab: Vocabulary | PretrainedVocabulary
    tgt_vocab: Vocabulary | PretrainedVocabulary
    members: list[Path]
    device: torch.device

    @property
    def pretrained(self) -> bool:
        """Whether the model is a pretrained `transformers` model (its own tokenizer: no BPE)."""
        return isinstance(self.tgt_vocab, PretrainedVocabulary)


def model_files(path: Path) -> list[Path]:
    """The checkpoint files that `path` names: a checkpoint file; a system.json (NMTSystem); or a folder holding a
    system.json, a model.pt (AverageCheckpoints) or checkpoints (TrainNMT: the last one)."""
    path = Path(path)
    if path.is_file():
        return system_members(path) if path.suffix == ".json" else [path]
    if path.is_dir():
        if (path / "system.json").is_file():
            return system_members(path / "system.json")
        if (path / "model.pt").is_file():
            return [path / "model.pt"]
        for folder in (path / "checkpoints", path):
            found = list_checkpoints(folder) if folder.is_dir() else []
            if found:
                return [found[-1]]
        raise CheckpointError(f"{path}: holds no system.json, model.pt or checkpoint-*.pt")
    raise CheckpointError(f"{path}: no such model file or folder")


def load_models(paths: Sequence[Path], device: str | torch.device = "cpu",
                speedups: CpuSpeedups = CpuSpeedups(), half: bool = False,
                languages: tuple[str, str] | None = None) -> LoadedModels:
    """Every model that `paths` name (see :func:`model_files`), as one Ensemble; all must share the vocabularies.

    `speedups`: CPU decoding speed-ups (pipeline/nmt/speedups.py) applied to every member; CPU only.
    `half`: fp16 weights and activations (the ensemble's scores stay fp32); CUDA only.
    A pretrained `transformers` model folder (config.json, weights, tokenizer) decodes alone, checked against
    `languages` (source, target), with target ids shifted by one (lattices/model_units.LABEL_OFFSET).
    """
    device = torch.device(device)
    if any(is_pretrained_folder(Path(p)) for p in paths):
        return _load_pretrained(paths, device, speedups, half, languages)
    if speedups.names() and device.type != "cpu":
        raise CheckpointError(f"the CPU speed-ups {', '.join(speedups.names())} need device cpu, not {device}")
    if half and device.type != "cuda":
        raise CheckpointError(f"fp16 decoding needs a CUDA device, not {device} (decode.fp16 is for GPUs)")
    members = [m for p in paths for m in model_files(Path(p))]
    if not members:
        raise CheckpointError("no model given")
    models, vocabs = [], None
    for member in members:
        ckpt = load_checkpoint(member)
        pair = load_vocabularies(ckpt)
        if vocabs is not None and (pair[0].tokens, pair[1].tokens) != (vocabs[0].tokens, vocabs[1].tokens):
            raise CheckpointError(f"{member}: its vocabularies differ from those of {members[0]}")
        vocabs = vocabs or pair
        model = apply_speedups(model_from_checkpoint(ckpt, device), speedups)
        models.append(model.half() if half else model)
    return LoadedModels(Ensemble(models), vocabs[0], vocabs[1], members, device)


def _load_pretrained(paths: Sequence[Path], device: torch.device, speedups: CpuSpeedups, half: bool,
                     languages: tuple[str, str] | None) -> LoadedModels:
    from lattices.model_units import LABEL_OFFSET

    if len(paths) != 1:
        raise CheckpointError(f"{paths[0]}: a pretrained model decodes alone, not in an ensemble of {len(paths)}")
    if languages is None:
        raise CheckpointError(f"{paths[0]}: a pretrained model is loaded for a task's languages; none given")
    if speedups.names() or half:
        raise CheckpointError(f"{paths[0]}: the CPU speed-ups and fp16 decoding are for this project's own models")
    system = load_pretrained(paths[0], languages[0], languages[1], device, local_files_only=True,
                             offset=LABEL_OFFSET)
    return LoadedModels(Ensemble([system.model]), system.vocab, system.vocab, [Path(paths[0])], device)


def source_lengths(lines: Sequence[str], models: LoadedModels) -> list[int]:
    """The source length (with EOS) of each input line of translate_lines without `source`, as the search's length
    limits read it: a pretrained model's ids of the raw line, else the BPE line's subwords + 1 (1 for an empty
    line, which is never decoded)."""
    if models.pretrained:
        return [len(models.src_vocab.encode_line(line)) if line.strip() else 1 for line in lines]
    return [len(line.split()) + 1 for line in lines]


def peak_memory(device: torch.device) -> dict[str, Any]:
    """{"peak_memory_bytes": n, "peak_memory_kind": how it was measured}."""
    if device.type == "cuda":
        return {"peak_memory_bytes": int(torch.cuda.max_memory_allocated(device)),
                "peak_memory_kind": "torch.cuda.max_memory_allocated"}
    return {"peak_memory_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
            "peak_memory_kind": "peak RSS of the process (resource.getrusage)"}


@dataclass
class Translation:
    """Per input line: the detokenized 1-best, its BPE subwords (one string; a pretrained model's pieces), and the
    n-best list (hypotheses, their detokenized texts and their BPE strings); `stats`: timings and counts."""

    text: list[str]
    bpe: list[str]
    nbest: list[list[Hypothesis]]
    nbest_text: list[list[str]]
    nbest_bpe: list[list[str]]
    stats: dict[str, Any] = field(default_factory=dict)


def _subwords(line: str, source: TextProcessor | None) -> tuple[list[str], int]:
    """The BPE subwords of a line and its number of (tokenized) words."""
    if source is None:
        tokens = line.split()
        return tokens, len(merge_bpe(tokens))
    words = source.words(line)
    return source.subwords(words), len(words)


def translate_lines(lines: Sequence[str], models: LoadedModels, settings: SearchSettings | SamplingSettings,
                    target: TextProcessor | None = None, source: TextProcessor | None = None,
                    batch_sentences: int = 1, sort: bool = True, hook_factory: HookFactory | None = None,
                    streaming: bool = False, refill: float = 1 / 6, seed: int = 1) -> Translation:
    """Translate raw lines (or BPE lines when `source` is None; raw lines for a pretrained model); stats hold the
    timings (see the module docstring). `target` is required but for a pretrained model.

    `hook_factory` gets the indices of the input lines of a batch (empty lines are never decoded); `streaming` and
    `refill`: see pipeline/decode/batching.py. With SamplingSettings the n-best lists are each line's K samples in
    the order drawn (pipeline/decode/sampling.py, seeded by `seed` and the line's index), the first one the "1-best".
    """
    device, pretrained = models.device, models.pretrained
    if target is None and not pretrained:
        raise ValueError("translate_lines needs the target language's TextProcessor to postprocess the outputs")
    started = time.perf_counter()
    encoded, source_words = [], 0
    for line in lines:
        if pretrained:  # the model's own tokenizer on the raw line; the words only counted
            encoded.append(models.src_vocab.encode_line(line) if line.strip() else [])
            source_words += len(source.words(line) if source is not None else line.split())
            continue
        tokens, words = _subwords(line, source)
        encoded.append(models.src_vocab.encode(tokens) + [models.src_vocab.eos_id] if tokens else [])
        source_words += words
    decoded_lines = [i for i, ids in enumerate(encoded) if ids]
    sources = [encoded[i] for i in decoded_lines]
    limit = position_limit(models.ensemble)
    for i, ids in zip(decoded_lines, sources):
        if limit is not None and len(ids) > limit:
            raise DataError(f"line {i + 1}: {len(ids)} source subwords (with </s>), more than the model's {limit} "
                            "positions (max_positions): split the line, or use a model with more positions")
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    preprocessed = time.perf_counter()
    factory = None
    if hook_factory is not None:
        factory = lambda batch, dev: hook_factory([decoded_lines[i] for i in batch], dev)  # noqa: E731
    if isinstance(settings, SamplingSettings):  # a line's samples follow from the seed and its input index
        results = sample_batches(models.ensemble, sources, settings, seed, batch_sentences, sort, device, factory,
                                 ids=decoded_lines)
    else:
        results = decode_sources(models.ensemble, sources, settings, batch_sentences, sort, device, factory,
                                 streaming=streaming, refill=refill)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    decoded = time.perf_counter()
    nbest: list[list[Hypothesis]] = [[] for _ in lines]
    for i, hyps in zip(decoded_lines, results):
        nbest[i] = hyps
    nbest_pieces = [[models.tgt_vocab.decode(h.tokens) for h in hyps] for hyps in nbest]
    if pretrained:
        nbest_text = [[models.tgt_vocab.decode_line(h.tokens) for h in hyps] for hyps in nbest]
    else:
        nbest_text = [[target.postprocess(list(pieces)) for pieces in hyps] for hyps in nbest_pieces]
    nbest_bpe = [[" ".join(pieces) for pieces in hyps] for hyps in nbest_pieces]
    text = [hyps[0] if hyps else "" for hyps in nbest_text]
    bpe = [hyps[0] if hyps else "" for hyps in nbest_bpe]
    if pretrained:
        target_words = sum(len(hyps[0].split()) for hyps in nbest_text if hyps)
    else:
        target_words = sum(len(merge_bpe(hyps[0])) for hyps in nbest_pieces if hyps)
    finished = time.perf_counter()
    seconds = decoded - preprocessed
    stats = {
        "sentences": len(lines), "decoded_sentences": len(sources), "source_words": source_words,
        "target_words": target_words, "seconds": round(seconds, 3),
        "words_per_minute": round(60 * source_words / max(seconds, 1e-9), 1),
        "timings": {"preprocess": round(preprocessed - started, 3), "nmt_decode": round(seconds, 3),
                    "postprocess": round(finished - decoded, 3)},
        "device": str(device), "threads": torch.get_num_threads(), "models": len(models.ensemble),
        **({"samples": settings.samples, "epsilon": settings.epsilon, "seed": seed}
           if isinstance(settings, SamplingSettings) else
           {"beam": settings.beam, "nbest": settings.nbest, "threshold": settings.threshold,
            "length_penalty": settings.length_penalty}),
        "batch_sentences": batch_sentences, "sort": sort, "streaming": streaming,
        "refill": refill if streaming else None,
        "max_length_a": settings.max_length_a, "max_length_b": settings.max_length_b,
        "backoff_sentences": sum(1 for hyps in nbest if hyps and hyps[0].backoff),
        **peak_memory(device),
    }
    return Translation(text, bpe, nbest, nbest_text, nbest_bpe, stats)


def format_nbest(translation: Translation, bpe: bool = False) -> list[str]:
    """Moses-style n-best lines `index ||| text ||| ranking score` (BPE subwords if `bpe`), best first per line."""
    shown = translation.nbest_bpe if bpe else translation.nbest_text
    return [f"{i} ||| {text} ||| {hyp.ranking_score:.6f}"
            for i, (hyps, texts) in enumerate(zip(translation.nbest, shown)) for hyp, text in zip(hyps, texts)]
