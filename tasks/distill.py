"""The teacher's translations of the training source, for sequence-level distillation (pipeline/nmt/distillation.py)."""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pipeline.io import write_lines
from pipeline.smt.mert import bleu_stats, corpus_bleu
from pipeline.smt.parallel import Job, decode_all
from pipeline.smt.weights import load_weights
from pipeline.text import BpeSegmenter
from tasks.base import PipelineTask
from tasks.data import LearnBPE, TruecaseSplit
from tasks.smt import PbmtModelTask, TunePBMT, decoder_settings, split_words
from tasks.variants import VariantTask


class DistillPBMT(VariantTask, PbmtModelTask):
    """words.<target>.gz and bpe.<target>.gz: the tuned PBMT's 1-best of every training source sentence (truecased
    words, and their BPE units for the NMT), line-aligned with the training split; no lattices, no n-best. The
    variant (nmt.<arch>.training.distillation_variant) sets the decoder's limits, as for Table 2."""

    stage = "distill"
    batch = True
    parallel, memory_mb = True, 3000

    def requires(self) -> dict[str, PipelineTask]:
        return {**self.model_inputs(), "weights": self.clone(TunePBMT), "words": self.clone(TruecaseSplit),
                "codes": self.clone(LearnBPE)}

    def params(self) -> dict[str, Any]:
        return {"split": self.split, "decoder": asdict(decoder_settings(self)), "teacher": "pbmt 1-best"}

    def build(self, out: Path) -> dict[str, Any]:
        source, target = self.config.source, self.config.target
        inputs = self.requires()
        started = time.perf_counter()
        sentences = split_words(inputs["words"].artifact_dir(), source)
        weights = load_weights(inputs["weights"].artifact_dir() / "weights.json")
        decoder = self.decoder(sentences, weights.weights)
        loaded = time.perf_counter()
        results = decode_all(Job(decoder, sentences), self.decoding_processes(), desc=f"distill {self.split}")
        decoded = time.perf_counter()
        translations = [list(r.best.words) for r in results]
        write_lines(out / f"words.{target}.gz", (" ".join(words) for words in translations))
        segmenter = BpeSegmenter(inputs["codes"].artifact_dir() / f"codes.{target}")
        write_lines(out / f"bpe.{target}.gz", (" ".join(segmenter.segment(words)) for words in translations))
        references = split_words(inputs["words"].artifact_dir(), target)
        stats = sum(bleu_stats(hyp, ref) for hyp, ref in zip(translations, references))
        words = sum(len(s) for s in sentences)
        return {"sentences": len(translations), "source_words": words,
                "identical_to_reference": sum(h == r for h, r in zip(translations, references)),
                "empty": sum(not h for h in translations),
                "tokenized_bleu_against_references": round(100 * corpus_bleu(stats), 2),
                "words_per_minute": round(60 * words / max(decoded - loaded, 1e-9), 1),
                "weights_signature": weights.signature,
                "timings": {"pbmt_load": round(loaded - started, 3), "pbmt_decode": round(decoded - loaded, 3),
                            "postprocess": round(time.perf_counter() - decoded, 3)}}


def teacher_targets(task: PipelineTask) -> Path:
    """The BPE file of a built DistillPBMT task's translations."""
    return task.artifact_dir() / f"bpe.{task.config.target}.gz"

