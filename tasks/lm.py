"""The target-side KenLM n-gram model, trained with the real lmplz; its tuning-set perplexity is signed."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.io import read_lines
from pipeline.lm import KenlmTools, perplexity, train_lm
from tasks.base import PipelineTask
from tasks.data import TruecaseSplit


class TrainLM(PipelineTask):
    """KenLM model (ARPA + binary) on the truecased target words of the training data."""

    stage = "lm"
    batch = True
    memory_mb = 2500  # lmplz -S (the profile's lm.memory) and build_binary

    def requires(self) -> dict[str, TruecaseSplit]:
        splits = self.config.splits
        return {"train": self.clone(TruecaseSplit, split=splits.train),
                "tune": self.clone(TruecaseSplit, split=splits.tune)}

    def params(self) -> dict[str, Any]:
        lm = self.profile_config.lm
        return {"order": self.config.lm.order, "discount_fallback": lm.discount_fallback,
                "binary_type": lm.binary_type}

    def build(self, out: Path) -> dict[str, Any]:
        target = self.config.target
        lm = self.profile_config.lm
        tmp_dir = Path(self.cache_dir) / "lmplz-tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        result = train_lm(read_lines(self.requires()["train"].artifact_dir() / f"words.{target}.gz"), out,
                          self.config.lm.order, KenlmTools.locate(Path(self.tools_dir)), memory=lm.memory,
                          tmp_dir=tmp_dir, discount_fallback=lm.discount_fallback, binary_type=lm.binary_type)
        tune_words = self.requires()["tune"].artifact_dir() / f"words.{target}.gz"
        return {
            "ngram_counts": {str(k): v for k, v in result.ngram_counts.items()},
            "tune_perplexity": round(perplexity(result.binary, read_lines(tune_words)), 4),
            "train_seconds": round(result.seconds, 3),
        }
