"""TuneLengthPenalty: the length penalty of a plain NMT system (FNMT, TNMT or PNMT: no L, no lattice), chosen by
BLEU on the tuning window from the profile's `[decode] grid_length_penalty`.

A finished hypothesis ranks by score / length^alpha (pipeline/decode/finalize.py); alpha 0 ranks by the raw score,
which favours short outputs, the more so the weaker the model. Each system gets its own alpha, since how far a
model's outputs fall short depends on the model. Every alpha other than 0 decodes without early exit (the n-best of
normalised scores is not certain when the raw scores say so). Points within `[lmbr] tie_bleu` of the best tie and
the smaller alpha wins.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import luigi
import torch

from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.translate import translate_lines
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_json, write_json
from tasks.base import AtSnapshot, PipelineTask
from tasks.data import ApplyBPE, TokenizeSplit, TrainTruecaser
from tasks.pretrained import PRETRAINED, nmt_system
from tasks.tuning import tuning_inputs, window_params, window_record

#: TuneLengthPenalty's record of the chosen alpha and each alpha's BLEU.
LENGTH_FILE = "length_penalty.json"


class TuneLengthPenalty(AtSnapshot, PipelineTask):
    """length_penalty.json: the alpha of `[decode] grid_length_penalty` whose decoding of the tuning window scores
    the highest BLEU, and each alpha's BLEU."""

    stage = "length-tuning"
    version = 1
    parallel, memory_mb = True, 3000
    models = luigi.Parameter(description="FNMT, TNMT or PNMT: the NMT system decoded alone")

    def label(self) -> str:
        return self.models

    def requires(self) -> dict[str, PipelineTask]:
        tune = self.config.splits.tune
        subwords = {} if self.models == PRETRAINED else {"subwords": self.clone(ApplyBPE, split=tune)}
        return {"system": nmt_system(self, self.models), "raw": self.clone(TokenizeSplit, split=tune),
                "truecaser": self.clone(TrainTruecaser), **subwords}

    def params(self) -> dict[str, Any]:
        decode, lmbr = self.profile_config.decode, self.profile_config.lmbr
        return {"models": self.models, "sentences": lmbr.tune_sentences, "decode": decode.hashed(),
                "grid_length_penalty": decode.length_penalties(), **window_params(lmbr)}

    def chosen(self) -> float:
        """The chosen alpha of the built artifact."""
        return float(read_json(self.artifact_dir() / LENGTH_FILE)["chosen"]["length_penalty"])

    def build(self, out: Path) -> dict[str, Any]:
        torch.set_num_threads(max(1, self.processes))
        decode, lmbr, target = self.profile_config.decode, self.profile_config.lmbr, self.config.target
        inputs = self.requires()
        lines, references, models, processor = tuning_inputs(self, inputs)
        bleu: dict[float, float] = {}
        for alpha in decode.length_penalties():
            settings = SearchSettings(beam=decode.beam, threshold=decode.threshold, length_penalty=alpha,
                                      max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                                      early_exit=decode.early_exit and alpha == 0)
            result = translate_lines(lines, models, settings, processor, source=None,
                                     batch_sentences=decode.batch_sentences, sort=decode.sort)
            bleu[alpha] = corpus_bleu(result.text, references, target).score  # DecodeNMT's text: no word restored
        best = choose_length_penalty(bleu, lmbr.tie_bleu)
        record = {"chosen": {"length_penalty": best}, "bleu": [{"length_penalty": a, "bleu": b}
                                                               for a, b in bleu.items()],
                  "sentences": len(lines), **window_record(lmbr)}
        write_json(out / LENGTH_FILE, record)
        return {"chosen": best, "bleu": bleu[best], "points": len(bleu), "sentences": len(lines)}


def choose_length_penalty(bleu: dict[float, float], tie: float) -> float:
    """The alpha of the highest BLEU; of those within `tie` of it, the smallest (the nearest to raw scores)."""
    top = max(bleu.values())
    return min(alpha for alpha, value in bleu.items() if value >= top - max(tie, 0.0) - 1e-9)
