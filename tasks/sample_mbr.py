"""MBR over the NMT's own samples, and the lattice's evidence beside them: the stages of the rows TNMT-MBR,
MBR-union, LTNMT-smp and LTNMT-mix.

- SampleNMT: the Transformer's epsilon samples of a split ([mbr] samples, epsilon, seed; pipeline/decode/sampling.py).
- TNMT-MBR: per sentence, the sample of highest expected utility against all the samples (Eikema and Aziz 2020);
  the utility (chrF or BLEU) chosen on the tuning window (TuneSampleMBR).
- MBR-union: the same selection over the PBMT's n-best and the samples together, the samples as pseudo-references.
- LTNMT-smp: LMBR decoding of TNMT whose n-gram posteriors are the samples' (the sample set as an evidence space)
  instead of the lattice's; LTNMT-mix: the posteriors w x the lattice's + (1 - w) x the samples' (lattices/mixture.py),
  w chosen on the tuning window (TuneEvidenceMixture). Both take TuneLMBR's p, r, gain form and evidence space of
  LTNMT and search free; lambda is tuned with them (the samples alone over [lmbr] grid_lambda, the mixtures at
  LTNMT's lambda).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

import luigi
import torch

from lattices.lmatrix_shards import LMatrixStore
from lattices.mixture import MixedEvidenceStore
from lattices.posteriors import NgramPosteriors, sample_posteriors
from lattices.theta import Theta
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.sampling import SamplingSettings
from pipeline.decode.translate import load_models, translate_lines
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_json, read_lines, write_json, write_lines
from pipeline.mbr.sample_sets import SampleSet, select_by_mbr
from pipeline.nmt.train import default_device
from pipeline.smt.lattice import parse_nbest
from pipeline.vocab import Vocabulary
from tasks.base import PipelineTask
from tasks.data import ApplyBPE, BuildVocab, TokenizeSplit, TrainTruecaser
from tasks.decode import DecodeNMT
from tasks.lmatrix import lmatrix_for
from tasks.mbr import target_processor
from tasks.pretrained import nmt_system
from tasks.smt import DecodePBMT
from tasks.tuning import (TuneLMBR, nbest_choices, restored, restorer_of, source_inputs, tuning_end, tuning_inputs,
                          window_lines)
from tasks.variants import VariantTask

#: TuneSampleMBR's and TuneEvidenceMixture's records of their choice and of every grid point's BLEU.
SELECTION_FILE, MIXTURE_FILE = "sample_mbr.json", "mixture.json"
SAMPLES_FILE = "samples.jsonl.gz"


class SampleNMT(VariantTask):
    """samples.jsonl.gz: the NMT's epsilon samples of a split's first `sentences` lines (0: all), seeded."""

    stage = "nmt-samples"
    parallel, memory_mb = True, 3000
    models = luigi.Parameter(default="TNMT", description="the NMT system that samples (FNMT or TNMT)")
    sentences = luigi.IntParameter(default=0, description="the first N sentences of the split (0: all)")

    def label(self) -> str:
        return f"{self.models}-{self.split}" + (f"-{self.sentences}" if self.sentences else "")

    def requires(self) -> dict[str, PipelineTask]:
        return {"system": nmt_system(self, self.models), "subwords": self.clone(ApplyBPE),
                "truecaser": self.clone(TrainTruecaser)}

    def params(self) -> dict[str, Any]:
        mbr, decode = self.profile_config.mbr, self.profile_config.decode
        first = {"sentences": self.sentences} if self.sentences else {}
        return {"split": self.split, "models": self.models, "samples": mbr.samples, "epsilon": mbr.epsilon,
                "seed": mbr.seed, "max_length_a": decode.max_length_a, "max_length_b": decode.max_length_b,
                "batch_sentences": decode.batch_sentences, **first}

    def samples(self) -> SampleSet:
        return SampleSet.load(self.artifact_dir() / SAMPLES_FILE)

    def build(self, out: Path) -> dict[str, Any]:
        torch.set_num_threads(max(1, self.processes))
        mbr, decode, inputs = self.profile_config.mbr, self.profile_config.decode, self.requires()
        lines = list(read_lines(inputs["subwords"].artifact_dir() / f"bpe.{self.config.source}.gz"))
        lines = lines[:self.sentences] if self.sentences else lines
        models = load_models([inputs["system"].artifact_dir() / "system.json"], default_device())
        settings = SamplingSettings(samples=mbr.samples, epsilon=mbr.epsilon, max_length_a=decode.max_length_a,
                                    max_length_b=decode.max_length_b)
        result = translate_lines(lines, models, settings, target_processor(self, inputs["truecaser"]), source=None,
                                 batch_sentences=decode.batch_sentences, sort=decode.sort, seed=mbr.seed)
        SampleSet.from_translation(result).save(out / SAMPLES_FILE)
        stats = result.stats
        return {key: stats[key] for key in ("sentences", "source_words", "samples", "epsilon", "seed",
                                            "words_per_minute", "threads")} | {
            "distinct_per_sentence": round(sum(len(set(t)) for t in result.nbest_text) / max(len(lines), 1), 2),
            "timings": {"nmt_sample": stats["timings"]["nmt_decode"]}}


def samples_of(task: PipelineTask, tuning: bool = False) -> SampleNMT:
    """The TNMT samples a stage reads: of its split, or of the tuning split's first sentences up to the window's
    end."""
    if tuning:
        return task.clone(SampleNMT, split=task.config.splits.tune, sentences=tuning_end(task.profile_config.lmbr),
                          variant="")
    return task.clone(SampleNMT, variant="")


def union_candidates(samples: SampleSet, nbest_file: Path, processor, lines: range) -> list[list[str]]:
    """Per line of `lines`, the PBMT's n-best (detokenized, from its nbest.txt) and then the line's samples."""
    nbest = parse_nbest(read_lines(nbest_file))
    return [[processor.postprocess(list(h.words), subword=False) for h in nbest.get(line, [])] + samples.text[line]
            for line in lines]


class TuneSampleMBR(PipelineTask):
    """sample_mbr.json: the utility of MBR selection ([mbr] utilities) with the higher BLEU on the tuning window,
    for the samples alone (TNMT-MBR) or the union with the PBMT's n-best (MBR-union); ties: the first listed."""

    stage = "sample-mbr-tuning"
    candidates = luigi.Parameter(description="samples (TNMT-MBR) or union (MBR-union)")

    def label(self) -> str:
        return self.candidates

    def requires(self) -> dict[str, PipelineTask]:
        tune = self.config.splits.tune
        required = {"samples": samples_of(self, tuning=True), "raw": self.clone(TokenizeSplit, split=tune)}
        if self.candidates == "union":
            required |= {"pbmt": self.clone(DecodePBMT, split=tune), "truecaser": self.clone(TrainTruecaser)}
        return required

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        return {"candidates": self.candidates, "utilities": self.profile_config.mbr.utilities,
                "window": [lmbr.tune_window().start, lmbr.tune_window().stop]}

    def chosen(self) -> str:
        return read_json(self.artifact_dir() / SELECTION_FILE)["chosen"]["utility"]

    def build(self, out: Path) -> dict[str, Any]:
        inputs, target = self.requires(), self.config.target
        window = self.profile_config.lmbr.tune_window()
        (references,) = window_lines(self, inputs["raw"].artifact_dir() / f"raw.{target}.gz")
        samples = inputs["samples"].samples()
        candidates = (union_candidates(samples, inputs["pbmt"].artifact_dir() / "nbest.txt",
                                       target_processor(self, inputs["truecaser"]), window)
                      if self.candidates == "union" else [samples.text[line] for line in window])
        pseudo = [samples.text[line] for line in window]
        grid = []
        for utility in self.profile_config.mbr.utilities:
            texts, _ = select_by_mbr(candidates, pseudo, utility)
            grid.append({"utility": utility, "bleu": round(corpus_bleu(texts, references, target).score, 4)})
        best = max(grid, key=lambda point: point["bleu"])  # max keeps the first of equals
        write_json(out / SELECTION_FILE, {"chosen": {"utility": best["utility"]}, "sentences": len(references),
                                          "grid": grid})
        return {"chosen": best["utility"], "bleu": best["bleu"], "points": len(grid)}


class DecodeSampleMBR(VariantTask):
    """TNMT-MBR: translation.<target>, each line the sample of highest expected utility against the line's samples."""

    stage = "sample-mbr"
    system: ClassVar[str] = "TNMT-MBR"
    candidates: ClassVar[str] = "samples"

    def label(self) -> str:
        return f"{self.system}-{super().label()}"

    def requires(self) -> dict[str, PipelineTask]:
        required = {"samples": samples_of(self), "tuning": self.clone(TuneSampleMBR, candidates=self.candidates)}
        if self.candidates == "union":
            required |= {"pbmt": self.clone(DecodePBMT), "truecaser": self.clone(TrainTruecaser)}
        return required

    def params(self) -> dict[str, Any]:
        return {"system": self.system, "split": self.split, "utility": "tuned", **self.variant_params()}

    def build(self, out: Path) -> dict[str, Any]:
        inputs, target = self.requires(), self.config.target
        started = time.perf_counter()
        samples = inputs["samples"].samples()
        lines = range(len(samples))
        candidates = (union_candidates(samples, inputs["pbmt"].artifact_dir() / "nbest.txt",
                                       target_processor(self, inputs["truecaser"]), lines)
                      if self.candidates == "union" else samples.text)
        utility = inputs["tuning"].chosen()
        texts, expected = select_by_mbr(candidates, samples.text, utility)
        write_lines(out / f"translation.{target}", texts)
        selection = time.perf_counter() - started
        sampled = inputs["samples"].signature()["stats"]
        timings = {"nmt_sample": sampled["timings"]["nmt_sample"], "mbr_selection": round(selection, 3)}
        if self.candidates == "union":
            timings["pbmt_decode"] = inputs["pbmt"].signature()["stats"]["timings"]["pbmt_decode"]
        return {"sentences": len(texts), "utility": utility, "source_words": sampled["source_words"],
                "candidates_per_sentence": round(sum(len(set(c)) for c in candidates) / max(len(texts), 1), 2),
                "mean_expected_utility": round(sum(expected) / max(len(expected), 1), 4),
                "words_per_minute": round(60 * sampled["source_words"] / max(sum(timings.values()), 1e-9), 1),
                "timings": timings}


class DecodeUnionMBR(DecodeSampleMBR):
    """MBR-union: MBR selection over the PBMT's n-best and the TNMT samples, against the samples."""

    system, candidates = "MBR-union", "union"


def sample_evidence(samples: SampleSet, vocab: Vocabulary, order: int) -> dict[int, NgramPosteriors]:
    """{line: the n-gram posteriors of its samples as an evidence space}, each sample read as <s> ids </s> (the
    lattices' unit convention), for the lines with samples."""
    return {line: sample_posteriors([[vocab.bos_id, *ids, vocab.eos_id] for ids in drawn], order)
            for line, drawn in enumerate(samples.ids) if drawn}


def mixed_store(lattices: LMatrixStore, samples: SampleSet, vocab: Vocabulary, weight: float, theta: Theta,
                order: int) -> MixedEvidenceStore:
    return MixedEvidenceStore(lattices, sample_evidence(samples, vocab, order), weight, theta, len(vocab))


def mixture_grid(weights: tuple[float, ...], lambdas: tuple[float, ...], own: float) -> list[tuple[float, float]]:
    """(w, lambda) points of TuneEvidenceMixture: every w at LTNMT's own lambda, and the samples alone (w = 0) at
    every lambda of the grid (their evidence is not the lattice's, so neither is their best lambda), each once."""
    return list(dict.fromkeys([(float(w), own) for w in weights] + [(0.0, float(lam)) for lam in lambdas]))


class TuneEvidenceMixture(PipelineTask):
    """mixture.json: the (w, lambda) of LTNMT-mix with the higher BLEU on the tuning window, w the lattice's weight in
    the posteriors ([mbr] grid_lattice_share, at LTNMT's lambda), and LTNMT-smp's lambda (the samples alone, over
    [lmbr] grid_lambda); at TuneLMBR's p, r, evidence and gain form of LTNMT; ties: the first point; every point's
    BLEU."""

    stage = "mixture-tuning"
    version = 2  # 2: the samples alone tune their own lambda
    parallel, memory_mb = True, 3000

    def requires(self) -> dict[str, PipelineTask]:
        tune, lmbr = self.config.splits.tune, self.profile_config.lmbr
        return {"lmbr": self.clone(TuneLMBR, models="TNMT"), "samples": samples_of(self, tuning=True),
                "lmatrix": {(alpha, nbest): lmatrix_for(self, alpha, nbest, split=tune, sentences=tuning_end(lmbr))
                            for alpha in lmbr.alphas(self.profile_config.pbmt.alpha) for nbest in nbest_choices(lmbr)},
                "system": nmt_system(self, "TNMT"), "raw": self.clone(TokenizeSplit, split=tune),
                "truecaser": self.clone(TrainTruecaser), "vocab": self.clone(BuildVocab),
                **source_inputs(self, "TNMT", split=tune)}

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        return {"grid_lattice_share": self.profile_config.mbr.grid_lattice_share, "grid_lambda": lmbr.grid_lambda,
                "window": [lmbr.tune_window().start, lmbr.tune_window().stop],
                "decode": self.profile_config.decode.hashed()}

    def chosen(self, samples_only: bool = False) -> dict[str, float]:
        """{lattice_weight, nmt_lambda} of LTNMT-mix, or with `samples_only` of LTNMT-smp (w = 0)."""
        record = read_json(self.artifact_dir() / MIXTURE_FILE)
        return record["samples_only"] if samples_only else record["chosen"]

    def build(self, out: Path) -> dict[str, Any]:
        torch.set_num_threads(max(1, self.processes))
        lmbr, decode, target, inputs = self.profile_config.lmbr, self.profile_config.decode, self.config.target, \
            self.requires()
        lines, references, models, processor = tuning_inputs(self, inputs)
        point = inputs["lmbr"].chosen()
        lattice = inputs["lmatrix"].get((point.get("alpha"), point.get("nbest", -1)),
                                        next(iter(inputs["lmatrix"].values())))
        theta = Theta.from_p_r(point["p"], point["r"], lmbr.theta_convention, lmbr.theta_t)
        vocab = Vocabulary.load(inputs["vocab"].artifact_dir() / f"vocab.{target}.json")
        samples, store = inputs["samples"].samples(), LMatrixStore(sorted(lattice.artifact_dir().glob("shard-*.npz")))
        restorer, ids = restorer_of(inputs), lmbr.tune_window()
        weights = self.profile_config.mbr.grid_lattice_share
        grid = []
        for weight, nmt_lambda in mixture_grid(weights, lmbr.grid_lambda, float(point["nmt_lambda"])):
            settings = SearchSettings(beam=decode.beam, threshold=decode.threshold,
                                      length_penalty=decode.length_penalty, max_length_a=decode.max_length_a,
                                      max_length_b=decode.max_length_b, weight=nmt_lambda, patience=lmbr.patience)
            factory = lmbr_hook_factory(mixed_store(store, samples, vocab, weight, theta, lmbr.order),
                                        models.tgt_vocab.bos_id, sentence_ids=ids, vocab_size=len(models.tgt_vocab),
                                        gains=point.get("gains", "per_step"))
            result = translate_lines(lines, models, settings, processor, source=None,
                                     batch_sentences=decode.batch_sentences, sort=decode.sort, hook_factory=factory)
            texts = restored(restorer, ids, result, processor, paths=False)
            grid.append({"lattice_weight": weight, "nmt_lambda": nmt_lambda,
                         "bleu": round(corpus_bleu(texts, references, target).score, 4)})
        best = max((p for p in grid if p["lattice_weight"] in weights), key=lambda p: p["bleu"])
        alone = max((p for p in grid if p["lattice_weight"] == 0.0), key=lambda p: p["bleu"])
        choice = {key: best[key] for key in ("lattice_weight", "nmt_lambda")}
        write_json(out / MIXTURE_FILE, {"chosen": choice, "samples_only": {"lattice_weight": 0.0,
                                                                          "nmt_lambda": alone["nmt_lambda"]},
                                        "lmbr": point, "sentences": len(lines), "grid": grid})
        return {"chosen": choice, "samples_only_lambda": alone["nmt_lambda"], "bleu": best["bleu"],
                "points": len(grid)}


class DecodeLTNMTSamples(DecodeNMT):
    """LTNMT-smp: TNMT with LMBR whose posteriors are the split's TNMT samples' (LTNMT's tuned p, r, evidence and
    gain form; its own lambda, TuneEvidenceMixture's for the samples alone; free search)."""

    system, models, lmbr = "LTNMT-smp", "TNMT", True
    version = 2  # 2: its own tuned lambda
    mixture: ClassVar[bool] = False  # LTNMT-mix: the lattice's and the samples' posteriors, mixed by the tuned w
    UNTUNED_WEIGHT: ClassVar[float] = 0.5  # LTNMT-mix's w in a profile without [lmbr] tune

    def requires(self) -> dict[str, PipelineTask]:
        required = {**super().requires(), "samples": samples_of(self), "vocab": self.clone(BuildVocab)}
        if self.profile_config.lmbr.tune:
            required["mixture"] = self.clone(TuneEvidenceMixture)
        return required

    def anchoring(self) -> bool:
        return False

    def mixture_choice(self) -> dict[str, float] | None:
        """TuneEvidenceMixture's {lattice_weight, nmt_lambda} of this row (None in a profile that does not tune)."""
        required = self.requires()
        return required["mixture"].chosen(samples_only=not self.mixture) if "mixture" in required else None

    def lattice_weight_of_evidence(self) -> float:
        """w, the lattice's share of the posteriors: 0 (LTNMT-smp), TuneEvidenceMixture's choice (LTNMT-mix)."""
        if not self.mixture:
            return 0.0
        choice = self.mixture_choice()
        return float(choice["lattice_weight"]) if choice else self.UNTUNED_WEIGHT

    def nmt_lambda(self) -> float:
        choice = self.mixture_choice()
        return float(choice["nmt_lambda"]) if choice else super().nmt_lambda()

    def params(self) -> dict[str, Any]:
        mbr = self.profile_config.mbr
        return {**super().params(), "samples": mbr.samples, "epsilon": mbr.epsilon, "seed": mbr.seed,
                "evidence": "mixture-tuned" if self.mixture else "samples"}

    def lmatrix_store(self):
        """The L of each sentence from its samples' posteriors (mixed with its lattice's for LTNMT-mix), under the
        theta LTNMT was tuned to (else the PBMT's)."""
        lmbr, target, required = self.profile_config.lmbr, self.config.target, self.requires()
        lattice = self.lmatrix()
        if lmbr.tune:
            chosen = self.chosen()
            theta = Theta.from_p_r(chosen["p"], chosen["r"], lmbr.theta_convention, lmbr.theta_t)
        else:
            theta = lattice.theta()
        vocab = Vocabulary.load(required["vocab"].artifact_dir() / f"vocab.{target}.json")
        return mixed_store(LMatrixStore(sorted(lattice.artifact_dir().glob("shard-*.npz"))),
                           required["samples"].samples(), vocab, self.lattice_weight_of_evidence(), theta, lmbr.order)

    def translate_with(self, models, lines, first, last):
        texts, result, stats = super().translate_with(models, lines, first, last)
        stats["evidence"] = {"lattice_weight": self.lattice_weight_of_evidence(),
                             "samples": self.profile_config.mbr.samples}
        return texts, result, stats

    def upstream_timings(self) -> dict[str, float]:
        """The samples' seconds, and for a mixture the lattice's phases too (LMBR's upstream_timings)."""
        sampled = {"nmt_sample": self.requires()["samples"].signature()["stats"]["timings"]["nmt_sample"]}
        return {**super().upstream_timings(), **sampled} if self.lattice_weight_of_evidence() > 0 else sampled


class DecodeLTNMTMixture(DecodeLTNMTSamples):
    """LTNMT-mix: TNMT with LMBR over the mixture of the lattice's and the samples' posteriors (w and lambda tuned)."""

    system, mixture = "LTNMT-mix", True
    version = 2  # 2: lambda tuned with w
