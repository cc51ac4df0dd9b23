"""Tuning on the tuning set by the profile's grids (pipeline/decode/lmbr_tuning.py).

- TuneLMBR: lambda, alpha and the gain form of LMBR decoding, then p and r at their best (tune_lmbr_in_stages).
  DecodeLNMT / DecodeLTNMT then use the chosen lambda and theta, and the L of the chosen alpha.
- TuneSearch: at TuneLMBR's point, the search of LNMT/LTNMT: free, or anchored in the PBMT lattice
  (pipeline/decode/anchored.py), when the profile's [lmbr] grid_search lists both. With `[lmbr] search_sentences`
  it decodes a window of its own, the tuning split's first sentences (two decodings at one point: cheap enough for
  the whole tuning set).
- TuneRescoring: mu, the weight of the PBMT lattice's own cost, for the -lat systems (those with L keep TuneLMBR's
  lambda, p, r, alpha and gain form: a joint grid with lambda would cost len(grid_lambda) times the decodings). With
  `[lmbr] rescoring_sentences` it decodes a window of its own, the tuning split's first sentences, every mu on all of
  them (each point is a search kept in the lattice's strings, cheap enough for the whole tuning set).

With `[lmbr] race_sentences`, both grids are races (pipeline/decode/lmbr_tuning.py: race_grid): each point decodes
growing prefixes of the tuning sentences, and only the best `race_keep` of them go on at each prefix.

Every tuning stage (and TuneMBR, tasks/mbr.py) decodes the same window of the tuning split, `[lmbr] tune_start` ..
tune_start + tune_sentences (window_params, tuning_window); its L matrices and acceptors are those of the split's
first tune_start + tune_sentences sentences. With `[lmbr] tie_bleu`, ties within it go to the simpler point.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

import luigi
import torch

from lattices.lmatrix_shards import LMatrixStore
from pipeline.config import LmbrProfile
from pipeline.decode.batching import position_limit
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.lmbr_tuning import (GridPoint, RescoringPoint, ReweightedStore, best_bleu, race_grid,
                                         rescoring_grid, simplicity, tune_lmbr_in_stages)
from pipeline.errors import ConfigError
from pipeline.decode.translate import LoadedModels, load_models, source_lengths, translate_lines
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import gzip_writer, read_json, read_lines, write_json
from pipeline.nmt.train import default_device
from pipeline.text import TextProcessor, get_tokenizer
from tasks.base import AtSnapshot, PipelineTask
from tasks.data import ApplyBPE, TokenizeSplit, TrainTruecaser, load_truecaser
from tasks.lmatrix import lmatrix_for, restorer_inputs, word_restorer
from tasks.pretrained import PRETRAINED, acceptor_stage, lmatrix_stage, model_dir, nmt_system


#: TuneLMBR's record of the chosen point, its theta and every grid point's BLEU.
CHOICE_FILE = "lmbr.json"
#: TuneSearch's record of the chosen search and the BLEU of each.
SEARCH_FILE = "search.json"
#: TuneSearch's outputs: every search with the tuning outputs it decoded, in window order (gzipped JSON).
SEARCH_OUTPUTS_FILE = "outputs.json.gz"
#: TuneRescoring's record of the chosen point and every grid point's BLEU.
RESCORING_FILE = "rescoring.json"
#: TuneRescoring's outputs: every grid point with the tuning outputs it decoded, in window order (gzipped JSON).
RESCORING_OUTPUTS_FILE = "outputs.json.gz"


class TuneLMBR(AtSnapshot, PipelineTask):
    """lmbr.json: the chosen {nmt_lambda, p, r, alpha}, its theta, and the BLEU of every grid point on the tuning
    set. Each alpha of the grid needs the tuning sentences' posteriors under it (one BuildLMatrix per alpha)."""

    stage = "lmbr-tuning"
    version = 5  # 2: p and r tuned after lambda (two stages); bounded gains search on while a live row can win;
    # 3: ... up to patience x B finished; 4: BOS is never an output of LMBR decoding; 5: outputs scored with the
    # words of <unk> from the lattice
    parallel, memory_mb = True, 3000
    models = luigi.Parameter(description="FNMT, TNMT or PNMT (the pretrained model): the NMT that LMBR decoding "
                                         "uses")

    def label(self) -> str:
        return self.models

    def requires(self) -> dict[str, PipelineTask]:
        tune, lmbr = self.config.splits.tune, self.profile_config.lmbr
        stage = lmatrix_stage(self.models)
        return {"system": nmt_system(self, self.models),
                "lmatrix": {(alpha, nbest): lmatrix_for(self, alpha, nbest, stage, split=tune,
                                                        sentences=tuning_end(lmbr))
                            for alpha in lmbr.alphas(self.profile_config.pbmt.alpha) for nbest in nbest_choices(lmbr)},
                "raw": self.clone(TokenizeSplit, split=tune), "truecaser": self.clone(TrainTruecaser),
                **source_inputs(self, self.models, split=tune)}

    def lambdas(self) -> tuple[float, ...]:
        """The lambda grid: [lmbr] grid_pretrained_lambda for the pretrained model, else grid_lambda."""
        lmbr = self.profile_config.lmbr
        return lmbr.grid_pretrained_lambda if self.models == PRETRAINED else lmbr.grid_lambda

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        alphas = {"grid_alpha": lmbr.grid_alpha} if lmbr.grid_alpha else {}  # none: the artifacts of before
        nbests = {"grid_nbest": lmbr.grid_nbest} if lmbr.grid_nbest else {}
        return {"models": self.models, "sentences": lmbr.tune_sentences, "grid_lambda": self.lambdas(),
                "grid_p": lmbr.grid_p, "grid_r": lmbr.grid_r, **alphas, **nbests, "gains": lmbr.gain_forms(),
                "patience": lmbr.patience, "decode": self.profile_config.decode.hashed(), **race_params(lmbr),
                **window_params(lmbr)}

    def chosen(self) -> dict[str, Any]:
        """The chosen point of the built artifact: nmt_lambda, p, r, alpha, gains and nbest (-1, or absent in the
        lmbr.json of earlier runs: the profile's evidence space)."""
        return read_json(self.artifact_dir() / CHOICE_FILE)["chosen"]

    def build(self, out: Path) -> dict[str, Any]:
        torch.set_num_threads(max(1, self.processes))
        lmbr, decode, target = self.profile_config.lmbr, self.profile_config.decode, self.config.target
        inputs = self.requires()
        lines, references, models, processor = tuning_inputs(self, inputs)
        stores = {evidence: LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz")))
                  for evidence, task in inputs["lmatrix"].items()}
        start = next(iter(inputs["lmatrix"].values())).theta()  # theta does not depend on alpha
        restorer = restorer_of(inputs)  # DecodeLNMT's words of <unk>, as in its outputs
        first = lmbr.tune_window().start

        def translate(point: GridPoint, span: range) -> list[str]:
            theta = point.theta(lmbr.theta_convention, lmbr.theta_t)
            ids = range(first + span.start, first + span.stop)  # the split's sentence numbers
            factory = lmbr_hook_factory(ReweightedStore(stores[point.alpha, point.nbest], theta),
                                        models.tgt_vocab.bos_id, sentence_ids=ids, vocab_size=len(models.tgt_vocab),
                                        gains=point.gains)
            settings = SearchSettings(beam=decode.beam, threshold=decode.threshold,
                                      length_penalty=decode.length_penalty, max_length_a=decode.max_length_a,
                                      max_length_b=decode.max_length_b, weight=point.nmt_lambda,
                                      patience=lmbr.patience)
            result = translate_lines(lines[span.start:span.stop], models, settings, processor, source=None,
                                     batch_sentences=decode.batch_sentences, sort=decode.sort, hook_factory=factory)
            return restored(restorer, ids, result, processor, paths=False)

        best, results = tune_lmbr_in_stages(start.p, start.r, self.lambdas(), lmbr.grid_p, lmbr.grid_r,
                                            lmbr.alphas(self.profile_config.pbmt.alpha), lmbr.gain_forms(),
                                            translate, prefix_bleu(references, target), len(lines),
                                            nbests=nbest_choices(lmbr), checkpoints=lmbr.race_sentences,
                                            keep=lmbr.race_keep, tie=lmbr.tie_bleu,
                                            alpha0=self.profile_config.pbmt.alpha, finalists=lmbr.race_finalists)
        theta = best.theta(lmbr.theta_convention, lmbr.theta_t)
        write_json(out / CHOICE_FILE, {"chosen": dataclasses.asdict(best), "theta": theta.signature(),
                                       "start": {"p": start.p, "r": start.r}, "sentences": len(lines),
                                       **window_record(lmbr), "grid": results})
        return {"chosen": dataclasses.asdict(best), "bleu": best_bleu(results),
                "points": len(results), "sentences": len(lines)}


class TuneSearch(PipelineTask):
    """search.json: the search of LNMT/LTNMT ([lmbr] grid_search: free or anchored) that scores the higher BLEU on
    the tuning sentences at TuneLMBR's chosen point (ties: the grid's first; within [lmbr] search_tie_bleu the
    grid's first too, or within tie_bleu the free search), and each one's BLEU; outputs.json.gz, each search's tuning
    outputs. Its window: the tuning split's first [lmbr] search_sentences (with the L matrices of every evidence
    space TuneLMBR may choose, over all of them); without it, the tuning window."""

    stage = "search-tuning"
    version = 1
    parallel, memory_mb = True, 3000
    models = luigi.Parameter(description="FNMT, TNMT or PNMT: the NMT that LMBR decoding uses")

    def label(self) -> str:
        return self.models

    def requires(self) -> dict[str, PipelineTask]:
        tune, lmbr = self.config.splits.tune, self.profile_config.lmbr
        lmbr_tuning = self.clone(TuneLMBR, models=self.models)  # and what it decodes with
        end = lmbr.search_window().stop
        required = {**lmbr_tuning.requires(), "tuning": lmbr_tuning,
                    "acceptors": self.clone(acceptor_stage(self.models), split=tune, sentences=end)}
        if lmbr.search_sentences:  # a window of its own: every evidence space TuneLMBR may choose, over all of it
            stage = lmatrix_stage(self.models)
            required["lmatrix"] = {(alpha, nbest): lmatrix_for(self, alpha, nbest, stage, split=tune, sentences=end)
                                   for alpha in lmbr.alphas(self.profile_config.pbmt.alpha)
                                   for nbest in nbest_choices(lmbr)}
        return required

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        own = {"search_sentences": lmbr.search_sentences} if lmbr.search_sentences else {}
        evidence = {"search_evidence": True} if lmbr.search_evidence else {}
        return {"models": self.models, "grid_search": lmbr.search_forms(), **window_params(lmbr),
                **search_tie_params(lmbr), **own, **evidence}

    def chosen(self) -> str:
        """The chosen search of the built artifact: "free" or "anchored"."""
        return read_json(self.artifact_dir() / SEARCH_FILE)["chosen"]["search"]

    def chosen_nbest(self) -> int | None:
        """The evidence space the built artifact chose ([lmbr] search_evidence), else None: TuneLMBR's stands."""
        return read_json(self.artifact_dir() / SEARCH_FILE)["chosen"].get("nbest")

    def build(self, out: Path) -> dict[str, Any]:
        from pipeline.decode.anchored import translate_anchored

        torch.set_num_threads(max(1, self.processes))
        lmbr, decode, target = self.profile_config.lmbr, self.profile_config.decode, self.config.target
        inputs = self.requires()
        span = lmbr.search_window()  # the split's sentence numbers of the lines
        lines, references, models, processor = tuning_inputs(self, inputs, span)
        point = GridPoint(**inputs["tuning"].chosen())
        theta = point.theta(lmbr.theta_convention, lmbr.theta_t)
        settings = SearchSettings(beam=decode.beam, threshold=decode.threshold, length_penalty=decode.length_penalty,
                                  max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                                  weight=point.nmt_lambda, patience=lmbr.patience)
        acceptors, restorer = inputs["acceptors"].acceptors(), restorer_of(inputs)
        batching = {"batch_sentences": decode.batch_sentences, "sort": decode.sort}
        # TuneLMBR's evidence space first: a tie keeps it
        nbests = [point.nbest] + ([n for n in nbest_choices(lmbr) if n != point.nbest] if lmbr.search_evidence else [])
        grid, outputs, from_lattice = [], [], {}
        for nbest in nbests:
            evidence = inputs["lmatrix"][point.alpha, nbest]
            store = ReweightedStore(LMatrixStore(sorted(evidence.artifact_dir().glob("shard-*.npz"))), theta)

            def lmbr_factory(ids: list[int], store: ReweightedStore = store):
                return lmbr_hook_factory(store, models.tgt_vocab.bos_id, sentence_ids=ids,
                                         vocab_size=len(models.tgt_vocab), gains=point.gains)

            for search in lmbr.search_forms():
                if search == "anchored":
                    result, lattice_lines = translate_anchored(lines, models, settings, processor, lmbr_factory,
                                                               list(span), [acceptors.get(k) for k in span],
                                                               **batching)
                    from_lattice[nbest] = len(lattice_lines)
                else:
                    result, lattice_lines = translate_lines(lines, models, settings, processor, source=None,
                                                            hook_factory=lmbr_factory(list(span)), **batching), []
                texts = restored(restorer, span, result, processor, paths=set(lattice_lines))
                grid.append({"search": search, "nbest": nbest, "bleu": corpus_bleu(texts, references, target).score})
                outputs.append({"search": search, "nbest": nbest, "outputs": texts})
        nbest = max(nbests, key=lambda n: (max(row["bleu"] for row in grid if row["nbest"] == n), -nbests.index(n)))
        bleu = {row["search"]: row["bleu"] for row in grid if row["nbest"] == nbest}
        tie, preferred = lmbr.search_ties()
        best = choose_search(bleu, tie, preferred) if tie > 0 else max(
            bleu, key=lambda search: (bleu[search], -lmbr.search_forms().index(search)))
        evidence = {"evidence": grid} if lmbr.search_evidence else {}
        chosen = {"search": best, **({"nbest": nbest} if lmbr.search_evidence else {})}
        with gzip_writer(out / SEARCH_OUTPUTS_FILE, text=True) as stream:  # a bootstrap of the choice reads them
            json.dump([entry if lmbr.search_evidence else {k: v for k, v in entry.items() if k != "nbest"}
                       for entry in outputs], stream, ensure_ascii=False)
        own = {"window": [span.start, span.stop]} if lmbr.search_sentences else {}
        write_json(out / SEARCH_FILE, {"chosen": chosen, "bleu": bleu, "sentences": len(lines),
                                       **window_record(lmbr), **own, **search_tie_params(lmbr), **evidence,
                                       "point": dataclasses.asdict(point),
                                       "anchored_lines_from_lattice": from_lattice.get(nbest, 0)})
        return {"chosen": chosen, "bleu": bleu, "sentences": len(lines)}


def choose_search(bleu: dict[str, float], tie: float, preferred: tuple[str, ...] = ("free", "anchored")) -> str:
    """Of the searches within `tie` BLEU of the best, the first in the order of `preferred` (by default the
    simplest: free before anchored)."""
    top = max(bleu.values())
    return min((search for search, value in bleu.items() if value >= top - tie - 1e-9),
               key=lambda search: preferred.index(search) if search in preferred else len(preferred))


def search_tie_params(lmbr: LmbrProfile) -> dict[str, Any]:
    """TuneSearch's own tie tolerance for its hash and record, only when it is on (the artifacts of before keep
    their ids)."""
    return {"search_tie_bleu": lmbr.search_tie_bleu} if lmbr.search_tie_bleu else {}


def window_params(lmbr: LmbrProfile) -> dict[str, Any]:
    """The tuning window's start and the tie tolerance for a tuning artifact's hash, each only when it is on (the
    artifacts of before keep their ids)."""
    return {**({"tune_start": lmbr.tune_start} if lmbr.tune_start else {}),
            **({"tie_bleu": lmbr.tie_bleu} if lmbr.tie_bleu else {})}


def window_record(lmbr: LmbrProfile) -> dict[str, Any]:
    """What a tuning artifact's choice file records of its window and tie rule, when they are on."""
    window = lmbr.tune_window()
    return ({"window": [window.start, window.stop]} if lmbr.tune_start else {}) | (
        {"tie_bleu": lmbr.tie_bleu} if lmbr.tie_bleu else {})


def tuning_end(lmbr: LmbrProfile) -> int:
    """How many of the tuning split's first sentences the tuning stages' L matrices and acceptors cover: up to the
    window's end (the sentences before tune_start are built too, unread)."""
    return lmbr.tune_window().stop


def race_params(lmbr: LmbrProfile) -> dict[str, Any]:
    """The race's settings for a tuning artifact's hash: none without one (the artifacts of before keep their ids)."""
    if not lmbr.race_sentences:
        return {}
    return {"race_sentences": lmbr.race_sentences, "race_keep": lmbr.race_keep} | (
        {"race_finalists": lmbr.race_finalists} if lmbr.race_finalists > 1 else {})


def prefix_bleu(references: list[str], target: str) -> Callable[[list[str]], float]:
    """score(outputs): the corpus BLEU of the outputs of the first len(outputs) tuning sentences."""
    return lambda hyps: corpus_bleu(hyps, references[:len(hyps)], target).score


def nbest_choices(lmbr: LmbrProfile) -> tuple[int, ...]:
    """The evidence spaces TuneLMBR tries: the grid's sizes, or (-1,), the profile's own."""
    return tuple(lmbr.grid_nbest) or (-1,)


def tuning_inputs(task: PipelineTask, inputs: dict, window: range | None = None
                  ) -> tuple[list[str], list[str], LoadedModels, TextProcessor]:
    """The window's sentences of the tuning set (BPE source lines and raw references; by default the tuning
    window, [lmbr] tune_start .. + tune_sentences), the NMT system's models and the target postprocessing, from a
    tuning task's inputs (system, subwords, raw, truecaser)."""
    source, target = task.config.source, task.config.target
    pretrained = "subwords" not in inputs  # the pretrained model reads the raw lines
    lines, references = window_lines(task, inputs["raw" if pretrained else "subwords"].artifact_dir() /
                                     (f"raw.{source}.gz" if pretrained else f"bpe.{source}.gz"),
                                     inputs["raw"].artifact_dir() / f"raw.{target}.gz", window=window)
    if pretrained:
        models = load_models([model_dir(inputs["system"])], default_device(), languages=(source, target))
    else:
        models = load_models([inputs["system"].artifact_dir() / "system.json"], default_device())
    tokenizer = get_tokenizer(task.config.languages[target].tokenizer, target, Path(task.cache_dir) / "tokenizers")
    processor = TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(inputs["truecaser"].artifact_dir(),
                                                                            target), bpe=None)
    return lines, references, models, processor


def source_inputs(task: PipelineTask, models: str, **overrides: Any) -> dict[str, PipelineTask]:
    """The source lines a tuning or decoding stage reads beside TokenizeSplit ("raw"): BPE subwords ("subwords")
    and what restores the words of <unk> outputs ("words") for our models; none for the pretrained model, which
    reads the raw lines and writes text."""
    if models == PRETRAINED:
        return {}
    return {"subwords": task.clone(ApplyBPE, **overrides), "words": restorer_inputs(task, **overrides)}


def restorer_of(inputs: dict) -> Any:
    """The WordRestorer of a stage's inputs (restorer_inputs under "words"); None without them (pretrained)."""
    return word_restorer(inputs["words"], inputs["truecaser"].config.target) if "words" in inputs else None


def restored(restorer: Any, ids: Any, result: Any, processor: TextProcessor, **options: Any) -> list[str]:
    """The outputs' texts, with the words of <unk> outputs from the lattice when there is a restorer."""
    if restorer is None:
        return result.text
    return restorer.restore(ids, result.bpe, result.text, lambda words: processor.postprocess(words, subword=False),
                            **options)[0]


def window_lines(task: PipelineTask, *paths: Path, window: range | None = None) -> list[list[str]]:
    """The window's lines of each file, by default the tuning window's (ConfigError when a file has fewer lines
    than the window needs)."""
    window, found = window or task.profile_config.lmbr.tune_window(), []
    for path in paths:
        lines = list(read_lines(path))
        if len(lines) < window.stop:
            raise ConfigError(f"{task.profile_config.path}: [lmbr] the tuning sentences {window.start} .. "
                              f"{window.stop} are tuned on, but {path} has {len(lines)} lines")
        found.append(lines[window.start:window.stop])
    return found


class TuneRescoring(AtSnapshot, PipelineTask):
    """rescoring.json: the chosen {nmt_lambda, p, r, alpha, gains, lattice_weight} of lattice rescoring (a -lat
    system) and the BLEU of every grid point on the tuning set: mu over [lmbr] grid_lattice_weight, with TuneLMBR's
    lambda, p, r, alpha and gain form when L is added, and lambda 1 without. Its window: the tuning split's first
    [lmbr] rescoring_sentences, every point on all of them; without it, the tuning window and TuneLMBR's race."""

    stage = "rescoring-tuning"
    version = 4  # 2: outputs with <unk> take their words from the lattice before they are scored; 3: bounded stop;
    # 4: bounded stop with patience
    parallel, memory_mb = True, 3000
    models = luigi.Parameter(description="FNMT, TNMT or PNMT: the NMT that rescores the lattices")
    lmbr = luigi.BoolParameter(default=False, description="add L (LNMT-lat, LTNMT-lat, LPNMT-lat)")

    def label(self) -> str:
        return f"{self.models}-lmbr" if self.lmbr else self.models

    def requires(self) -> dict[str, PipelineTask]:
        tune, lmbr = self.config.splits.tune, self.profile_config.lmbr
        end = lmbr.rescoring_window().stop
        required = {"system": nmt_system(self, self.models),
                    "acceptors": self.clone(acceptor_stage(self.models), split=tune, sentences=end),
                    "raw": self.clone(TokenizeSplit, split=tune), "truecaser": self.clone(TrainTruecaser)}
        if self.models != PRETRAINED:
            required["subwords"] = self.clone(ApplyBPE, split=tune)
        if self.lmbr:
            required["lmbr"] = self.clone(TuneLMBR, models=self.models)
            required["lmatrix"] = {alpha: lmatrix_for(self, alpha, -1, lmatrix_stage(self.models), split=tune,
                                                      sentences=end)
                                   for alpha in lmbr.alphas(self.profile_config.pbmt.alpha)}
        return required

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        if lmbr.rescoring_sentences:  # a window of its own, the whole grid on it
            window = {"rescoring_sentences": lmbr.rescoring_sentences,
                      **({"tie_bleu": lmbr.tie_bleu} if lmbr.tie_bleu else {})}
        else:
            window = {"sentences": lmbr.tune_sentences, **race_params(lmbr), **window_params(lmbr)}
        return {"models": self.models, "lmbr": self.lmbr, "grid_lattice_weight": lmbr.lattice_weights(),
                "patience": lmbr.patience, "decode": self.profile_config.decode.hashed(), **window}

    def chosen(self) -> dict[str, Any]:
        """The chosen point of the built artifact: nmt_lambda, p, r, alpha, gains and lattice_weight."""
        return read_json(self.artifact_dir() / RESCORING_FILE)["chosen"]

    def build(self, out: Path) -> dict[str, Any]:
        from pipeline.decode.constraints import acceptor_hook_factory
        from pipeline.decode.hooks import chain_factories
        from pipeline.decode.scores import max_output_lengths

        torch.set_num_threads(max(1, self.processes))
        lmbr, decode, target = self.profile_config.lmbr, self.profile_config.decode, self.config.target
        inputs = self.requires()
        window = lmbr.rescoring_window()
        lines, references, models, processor = tuning_inputs(self, inputs, window)
        acceptors, restorer = inputs["acceptors"].acceptors(), inputs["acceptors"].word_restorer()
        settings = SearchSettings(beam=decode.beam, threshold=decode.threshold, length_penalty=decode.length_penalty,
                                  max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                                  patience=lmbr.patience)
        first = window.start
        limits = max_output_lengths(torch.tensor(source_lengths(lines, models)), settings.max_length_a,
                                    settings.max_length_b, position_limit(models.ensemble)).tolist()
        if "lmbr" in inputs:
            # the -lat systems search the profile's evidence space (their acceptors'), with L of the same space
            start = dataclasses.replace(GridPoint(**inputs["lmbr"].chosen()), nbest=-1)
            stores = {alpha: LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz")))
                      for alpha, task in inputs["lmatrix"].items()}
        else:
            start, stores = GridPoint(1.0, 0.0, 0.0), {}
        grid = rescoring_grid(start, lmbr.lattice_weights())

        decoded: dict[RescoringPoint, list[str]] = {point: [] for point in grid}

        def translate(point: RescoringPoint, span: range) -> list[str]:
            ids = range(first + span.start, first + span.stop)  # the split's sentence numbers
            constrain = acceptor_hook_factory([acceptors.get(k) for k in ids], limits[span.start:span.stop],
                                              models.tgt_vocab.eos_id, weight=point.lattice_weight)
            scorer = None
            if stores:
                theta = point.theta(lmbr.theta_convention, lmbr.theta_t)
                scorer = lmbr_hook_factory(ReweightedStore(stores[point.alpha], theta), models.tgt_vocab.bos_id,
                                           sentence_ids=ids, vocab_size=len(models.tgt_vocab), gains=point.gains)
            result = translate_lines(lines[span.start:span.stop], models,
                                     dataclasses.replace(settings, weight=point.nmt_lambda), processor, source=None,
                                     batch_sentences=decode.batch_sentences, sort=decode.sort,
                                     hook_factory=chain_factories([scorer, constrain]))
            decoded[point] += restored(restorer, ids, result, processor)
            return decoded[point][span.start:]

        p0, r0 = start.p, start.r
        checkpoints = () if lmbr.rescoring_sentences else lmbr.race_sentences  # its own window: the whole grid
        best, results = race_grid(grid, translate, prefix_bleu(references, target), len(lines),
                                  checkpoints, lmbr.race_keep, tie=lmbr.tie_bleu,
                                  simpler=lambda point: simplicity(point, p0, r0, start.alpha),
                                  finalists=lmbr.race_finalists)
        own = {"window": [window.start, window.stop]} if lmbr.rescoring_sentences else {}
        with gzip_writer(out / RESCORING_OUTPUTS_FILE, text=True) as stream:  # a bootstrap of the choice reads them
            json.dump([{"point": dataclasses.asdict(point), "outputs": texts} for point, texts in decoded.items()],
                      stream, ensure_ascii=False)
        write_json(out / RESCORING_FILE, {"chosen": dataclasses.asdict(best), "sentences": len(lines),
                                          **window_record(lmbr), **own, "grid": results})
        return {"chosen": dataclasses.asdict(best), "bleu": best_bleu(results),
                "points": len(results), "sentences": len(lines)}
