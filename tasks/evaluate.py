"""Evaluation stages: cased BLEU with sacrebleu on detokenized text."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import luigi

from pipeline.evaluation import corpus_bleu
from pipeline.io import read_lines, write_lines
from pipeline.text import TextProcessor, get_tokenizer
from tasks.base import PipelineTask
from tasks.data import ApplyBPE, SplitTask, TokenizeSplit, TrainTruecaser, load_truecaser, token_lines
from tasks.systems import translation_task
from tasks.variants import VariantTask


class RoundTripBLEU(SplitTask):
    """BLEU of the target side passed through the whole preprocessing and back, against the original.

    The ceiling that any system's output can reach through our postprocessing: BPE merging, detruecasing and
    detokenization must lose almost nothing (target: under 0.5 BLEU).
    """

    stage = "roundtrip"

    def requires(self) -> dict[str, PipelineTask]:
        return {"raw": self.clone(TokenizeSplit), "subwords": self.clone(ApplyBPE),
                "truecaser": self.clone(TrainTruecaser)}

    def params(self) -> dict[str, Any]:
        return {"split": self.split}

    def build(self, out: Path) -> dict[str, Any]:
        target = self.config.target
        inputs = self.requires()
        processor = TextProcessor(
            tokenizer=get_tokenizer(self.config.languages[target].tokenizer, target,
                                    Path(self.cache_dir) / "tokenizers"),
            truecaser=load_truecaser(inputs["truecaser"].artifact_dir(), target),
            bpe=None,
        )
        hypotheses = [processor.postprocess(tokens)
                      for tokens in token_lines(inputs["subwords"].artifact_dir() / f"bpe.{target}.gz")]
        references = list(read_lines(inputs["raw"].artifact_dir() / f"raw.{target}.gz"))
        write_lines(out / f"roundtrip.{target}", hypotheses)
        bleu = corpus_bleu(hypotheses, references, target)
        differing = sum(h != r for h, r in zip(hypotheses, references))
        return {"bleu": bleu.to_dict(), "lines": len(references), "differing_lines": differing}


class EvaluateSystem(VariantTask):
    """Cased BLEU of one system's translation of a split against the raw reference."""

    stage = "bleu"
    system = luigi.Parameter(description="PBMT, FNMT, LNMT, TNMT or LTNMT")

    def label(self) -> str:
        return f"{self.system}-{super().label() if self.variant_specific() else self.split}"

    def variant_specific(self) -> bool:
        """PBMT's artifacts depend on a variant only through its decoder limits, which the translation's artifact
        (an input) already tells apart: its score is shared by the variants that keep them."""
        return self.system != "PBMT"

    def requires(self) -> dict[str, PipelineTask]:
        return {"translation": self.clone(translation_task(self.system)), "raw": self.clone(TokenizeSplit)}

    def params(self) -> dict[str, Any]:
        variant = self.variant_params() if self.variant_specific() else {}
        return {"system": self.system, "split": self.split, **variant}

    def build(self, out: Path) -> dict[str, Any]:
        target = self.config.target
        translation = self.requires()["translation"]
        hypotheses = list(read_lines(translation.artifact_dir() / f"translation.{target}"))
        references = list(read_lines(self.requires()["raw"].artifact_dir() / f"raw.{target}.gz"))
        bleu = corpus_bleu(hypotheses, references, target)
        stats = translation.signature()["stats"]
        return {"bleu": bleu.to_dict(), "lines": len(references), "timings": stats.get("timings", {}),
                "source_words": stats.get("source_words")}
