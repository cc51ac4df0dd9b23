"""TuneLMBR: lambda, p, r and alpha of LMBR decoding chosen on the tuning set by the profile's grid (pipeline/decode/
lmbr_tuning.py). DecodeLNMT / DecodeLTNMT then use the chosen lambda and theta, and the L of the chosen alpha."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import luigi
import torch

from lattices.lmatrix import LMatrixStore
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.lmbr import lmbr_hook_factory
from pipeline.decode.lmbr_tuning import ReweightedStore, lmbr_grid, tune_lmbr
from pipeline.decode.translate import load_models, translate_lines
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_json, read_lines, write_json
from pipeline.nmt.train import default_device
from pipeline.text import TextProcessor, get_tokenizer
from tasks.base import PipelineTask
from tasks.data import ApplyBPE, TokenizeSplit, TrainTruecaser, load_truecaser
from tasks.lattices import lmatrix_for
from tasks.nmt import NMTSystem


#: TuneLMBR's record of the chosen point, its theta and every grid point's BLEU.
CHOICE_FILE = "lmbr.json"


class TuneLMBR(PipelineTask):
    """lmbr.json: the chosen {nmt_lambda, p, r, alpha}, its theta, and the BLEU of every grid point on the tuning
    set. Each alpha of the grid needs the tuning sentences' posteriors under it (one BuildLMatrix per alpha)."""

    stage = "lmbr-tuning"
    parallel, memory_mb = True, 3000
    models = luigi.Parameter(description="FNMT or TNMT: the NMT system that LMBR decoding uses")

    def label(self) -> str:
        return self.models

    def requires(self) -> dict[str, PipelineTask]:
        tune, lmbr = self.config.splits.tune, self.profile_config.lmbr
        return {"system": self.clone(NMTSystem, system=self.models),
                "lmatrix": {alpha: lmatrix_for(self, alpha, split=tune, sentences=lmbr.tune_sentences)
                            for alpha in lmbr.alphas(self.profile_config.pbmt.alpha)},
                "subwords": self.clone(ApplyBPE, split=tune), "raw": self.clone(TokenizeSplit, split=tune),
                "truecaser": self.clone(TrainTruecaser)}

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        alphas = {"grid_alpha": lmbr.grid_alpha} if lmbr.grid_alpha else {}  # none: the artifacts of before
        return {"models": self.models, "sentences": lmbr.tune_sentences, "grid_lambda": lmbr.grid_lambda,
                "grid_p": lmbr.grid_p, "grid_r": lmbr.grid_r, **alphas, "gains": lmbr.gain_forms(),
                "decode": dataclasses.asdict(self.profile_config.decode)}

    def chosen(self) -> dict[str, Any]:
        """The chosen point of the built artifact: nmt_lambda, p, r, alpha and gains."""
        return read_json(self.artifact_dir() / CHOICE_FILE)["chosen"]

    def build(self, out: Path) -> dict[str, Any]:
        torch.set_num_threads(max(1, self.processes))
        lmbr, decode, target = self.profile_config.lmbr, self.profile_config.decode, self.config.target
        inputs = self.requires()
        n = lmbr.tune_sentences
        lines = list(read_lines(inputs["subwords"].artifact_dir() / f"bpe.{self.config.source}.gz"))[:n]
        references = list(read_lines(inputs["raw"].artifact_dir() / f"raw.{target}.gz"))[:n]
        models = load_models([inputs["system"].artifact_dir() / "system.json"], default_device())
        tokenizer = get_tokenizer(self.config.languages[target].tokenizer, target, Path(self.cache_dir) / "tokenizers")
        processor = TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(inputs["truecaser"].artifact_dir(),
                                                                                target), bpe=None)
        stores = {alpha: LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz")))
                  for alpha, task in inputs["lmatrix"].items()}
        start = next(iter(inputs["lmatrix"].values())).theta()  # theta does not depend on alpha
        grid = lmbr_grid(start.p, start.r, lmbr.grid_lambda, lmbr.grid_p, lmbr.grid_r, tuple(stores),
                         lmbr.gain_forms())

        def translate(point) -> list[str]:
            theta = point.theta(lmbr.theta_convention, lmbr.theta_t)
            factory = lmbr_hook_factory(ReweightedStore(stores[point.alpha], theta), models.tgt_vocab.bos_id,
                                        vocab_size=len(models.tgt_vocab), gains=point.gains)
            settings = SearchSettings(beam=decode.beam, threshold=decode.threshold,
                                      length_penalty=decode.length_penalty, max_length_a=decode.max_length_a,
                                      max_length_b=decode.max_length_b, weight=point.nmt_lambda)
            return translate_lines(lines, models, settings, processor, source=None,
                                   batch_sentences=decode.batch_sentences, sort=decode.sort,
                                   hook_factory=factory).text

        best, results = tune_lmbr(grid, translate, lambda hyps: corpus_bleu(hyps, references, target).score)
        theta = best.theta(lmbr.theta_convention, lmbr.theta_t)
        write_json(out / CHOICE_FILE, {"chosen": dataclasses.asdict(best), "theta": theta.signature(),
                                       "start": {"p": start.p, "r": start.r}, "sentences": len(lines),
                                       "grid": results})
        return {"chosen": dataclasses.asdict(best), "bleu": max(r["bleu"] for r in results),
                "points": len(results), "sentences": len(lines)}
