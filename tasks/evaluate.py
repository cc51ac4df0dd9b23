"""Evaluation stages: cased BLEU and chrF2 with sacrebleu on detokenized text, and paired bootstrap resampling."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import luigi

from pipeline.evaluation import corpus_bleu
from pipeline.evaluation.significance import chrf2, paired_bootstrap
from pipeline.io import read_lines, write_json, write_lines
from pipeline.text import TextProcessor, get_tokenizer
from tasks.base import AtSnapshot, PipelineTask
from tasks.data import ApplyBPE, SplitTask, TokenizeSplit, TrainTruecaser, load_truecaser, token_lines
from tasks.systems import comparisons, translation_task
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


class EvaluateSystem(AtSnapshot, VariantTask):
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
        fallback = stats.get("unconstrained_lines", stats.get("pbmt_fallback_lines"))
        return {"bleu": bleu.to_dict(), "chrf2": round(chrf2(hypotheses, references), 4), "lines": len(references),
                "timings": stats.get("timings", {}), "source_words": stats.get("source_words"),
                **({"fallback_lines": fallback} if fallback is not None else {})}


class CompareSystems(SplitTask):
    """Paired bootstrap resampling of each hybrid against PBMT, its own NMT system and lattice MBR (BLEU and chrF2):
    significance.json, one record per (system, baseline, metric)."""

    stage = "significance"
    version = 2  # 2: a score equal to its baseline's gets p 1.0 (sacrebleu gave it 1/(samples + 1))
    systems = luigi.ListParameter(description="the systems of Table 1 that were built")

    def label(self) -> str:
        return self.split

    def pairs(self) -> dict[str, list[str]]:
        return comparisons(list(self.systems))

    def requires(self) -> dict[str, PipelineTask]:
        names = sorted({s for baseline, others in self.pairs().items() for s in [baseline, *others]})
        return {"raw": self.clone(TokenizeSplit),
                **{name: self.clone(translation_task(name)) for name in names}}

    def params(self) -> dict[str, Any]:
        return {"split": self.split, "pairs": self.pairs()}

    def build(self, out: Path) -> dict[str, Any]:
        target, inputs = self.config.target, self.requires()
        references = list(read_lines(inputs["raw"].artifact_dir() / f"raw.{target}.gz"))

        def translation(name: str) -> list[str]:
            return list(read_lines(inputs[name].artifact_dir() / f"translation.{target}"))

        records = [record for baseline, others in self.pairs().items()
                   for record in paired_bootstrap((baseline, translation(baseline)),
                                                  [(name, translation(name)) for name in others], references, target)]
        write_json(out / "significance.json", records)
        return {"comparisons": len(records), "lines": len(references)}
