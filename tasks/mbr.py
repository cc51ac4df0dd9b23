"""Lattice MBR (Tromble et al. 2008) of a split: the reference for what L alone can do, with no NMT model.

Each sentence's translation is the string of its evidence space with the highest expected linear gain under L
(lattices/mbr.py, exact over the acceptor of BuildAcceptors and the L of BuildLMatrix). Theta comes from the PBMT's
tune-set precisions p and r, or, with the profile's `[lmbr] tune`, from the p and r that TuneMBR chooses by BLEU on
the tuning set (offsets `grid_mbr_p` x `grid_mbr_r`: Tromble et al.'s theta from corpus precisions sets how much a
token must earn to pay for its length, and the best balance depends on the lattices), together with the path scale
alpha of the posteriors (`grid_mbr_alpha`: how far the posteriors trust the PBMT's ranking; each alpha is a posterior
pass of its own over the tuning sentences and the decoded split). A sentence whose lattice accepts nothing keeps the
PBMT 1-best; the count is in the stats.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from lattices.acceptor import Acceptor
from lattices.lmatrix_shards import LMatrixStore
from lattices.mbr import lattice_mbr
from lattices.restore import WordRestorer
from lattices.theta import Theta
from pipeline.decode.lmbr_tuning import ReweightedStore, lmbr_grid, simplicity, tune_lmbr
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_json, read_lines, write_json, write_lines
from pipeline.text import TextProcessor, get_tokenizer
from pipeline.vocab import Vocabulary
from tasks.base import PipelineTask
from tasks.data import BuildVocab, TokenizeSplit, TrainTruecaser, load_truecaser
from tasks.lmatrix import BuildAcceptors, BuildLMatrix, lmatrix_for
from tasks.smt import DecodePBMT
from tasks.tuning import tuning_end, window_lines, window_params, window_record
from tasks.variants import VariantTask

#: TuneMBR's record of the chosen p and r and every grid point's BLEU.
MBR_CHOICE_FILE = "mbr.json"


def mbr_translations(acceptors: dict[int, Acceptor], store, fallback: Sequence[str], vocab: Vocabulary,
                     processor: TextProcessor, restorer: WordRestorer) -> tuple[list[str], list[str], list[int]]:
    """(detokenized texts, subwords, 1-based lines that kept `fallback`) of the MBR strings of sentences
    0..len(fallback)-1 under the L matrices of `store`; a string with <unk> takes its words from the lattice."""
    texts, subwords, kept = [], [], []
    for line in range(len(fallback)):
        acceptor = acceptors.get(line)
        result = None
        if acceptor is not None and line in store:
            result = lattice_mbr(acceptor, store.get([line])[0], vocab.bos_id, vocab.eos_id)
        if result is None:
            kept.append(line + 1)
            texts.append(fallback[line])
            subwords.append("")
            continue
        pieces = vocab.decode(list(result.tokens))
        subwords.append(" ".join(pieces))
        texts.append(processor.postprocess(pieces))
    texts = restorer.restore(range(len(texts)), subwords, texts,
                             lambda words: processor.postprocess(words, subword=False))[0]
    return texts, subwords, kept


def alpha_lmatrices(task: PipelineTask, **overrides: Any) -> dict[float, PipelineTask]:
    """The BuildLMatrix of every alpha of `grid_mbr_alpha` but the lattices' own (the task's default artifact), of
    the task's split or the one `overrides` names."""
    own = task.profile_config.pbmt.alpha
    return {alpha: lmatrix_for(task, alpha, **overrides)
            for alpha in task.profile_config.lmbr.mbr_alphas(own) if alpha != own}


def target_processor(task: PipelineTask, truecaser: PipelineTask) -> TextProcessor:
    """Detruecasing and detokenization of the task's target side."""
    target = task.config.target
    tokenizer = get_tokenizer(task.config.languages[target].tokenizer, target, Path(task.cache_dir) / "tokenizers")
    return TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(truecaser.artifact_dir(), target), bpe=None)


class TuneMBR(PipelineTask):
    """mbr.json: the p and r of theta chosen for lattice MBR by BLEU on the tuning window ([lmbr] tune_start and
    tune_sentences; the PBMT's p and r moved by the offsets of `[lmbr] grid_mbr_p` x `grid_mbr_r`), and every grid
    point's BLEU."""

    stage = "mbr-tuning"
    version = 2  # 2: outputs with <unk> take their words from the lattice before they are scored

    def requires(self) -> dict[str, PipelineTask]:
        tune, n = self.config.splits.tune, tuning_end(self.profile_config.lmbr)
        required = {"acceptors": self.clone(BuildAcceptors, split=tune, sentences=n),
                    "lmatrix": self.clone(BuildLMatrix, split=tune, sentences=n),
                    "pbmt": self.clone(DecodePBMT, split=tune), "raw": self.clone(TokenizeSplit, split=tune),
                    "vocab": self.clone(BuildVocab), "truecaser": self.clone(TrainTruecaser)}
        others = alpha_lmatrices(self, split=tune, sentences=n)
        if others:
            required["lmatrix_alphas"] = others
        return required

    def params(self) -> dict[str, Any]:
        lmbr = self.profile_config.lmbr
        alphas = {"grid_mbr_alpha": lmbr.grid_mbr_alpha} if lmbr.grid_mbr_alpha else {}  # none: as before
        return {"sentences": lmbr.tune_sentences, "grid_mbr_p": lmbr.mbr_p_offsets(),
                "grid_mbr_r": lmbr.mbr_r_offsets(), **alphas, **window_params(lmbr)}

    def chosen(self) -> dict[str, Any]:
        """The chosen point of the built artifact: p and r (and the rest of a grid point)."""
        return read_json(self.artifact_dir() / MBR_CHOICE_FILE)["chosen"]

    def tuning_mbr(self) -> tuple[list[str], list[str], Callable[[Any], list[str]]]:
        """(references, PBMT 1-best, translate) of the tuning window's sentences: translate(store) gives the
        detokenized MBR strings of those sentences under the L matrices of `store` (the sentences before the window
        are decoded too, and dropped: MBR costs little next to the posteriors)."""
        target, inputs = self.config.target, self.requires()
        window = self.profile_config.lmbr.tune_window()
        references, fallback = window_lines(self, inputs["raw"].artifact_dir() / f"raw.{target}.gz",
                                            inputs["pbmt"].artifact_dir() / f"translation.{target}")
        prefix = list(read_lines(inputs["pbmt"].artifact_dir() / f"translation.{target}"))[:window.stop]
        vocab = Vocabulary.load(inputs["vocab"].artifact_dir() / f"vocab.{target}.json")
        acceptors, processor = inputs["acceptors"].acceptors(), target_processor(self, inputs["truecaser"])
        restorer = inputs["acceptors"].word_restorer()
        return references, fallback, lambda store: mbr_translations(acceptors, store, prefix, vocab, processor,
                                                                    restorer)[0][window.start:]

    def build(self, out: Path) -> dict[str, Any]:
        lmbr, target, inputs = self.profile_config.lmbr, self.config.target, self.requires()
        references, _, translate_store = self.tuning_mbr()
        own = self.profile_config.pbmt.alpha
        tasks = {own: inputs["lmatrix"], **inputs.get("lmatrix_alphas", {})}
        stores = {alpha: LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz"))) for alpha, task in tasks.items()}
        start = inputs["lmatrix"].theta()
        grid = lmbr_grid(start.p, start.r, (0.0,), lmbr.mbr_p_offsets(), lmbr.mbr_r_offsets(), lmbr.mbr_alphas(own))

        def translate(point) -> list[str]:
            return translate_store(ReweightedStore(stores[point.alpha],
                                                   point.theta(lmbr.theta_convention, lmbr.theta_t)))

        best, results = tune_lmbr(grid, translate, lambda hyps: corpus_bleu(hyps, references, target).score,
                                  tie=lmbr.tie_bleu, simpler=lambda point: simplicity(point, start.p, start.r, own))
        write_json(out / MBR_CHOICE_FILE, {"chosen": dataclasses.asdict(best), "start": {"p": start.p, "r": start.r},
                                           "sentences": len(references), **window_record(lmbr), "grid": results})
        return {"chosen": dataclasses.asdict(best), "bleu": max(r["bleu"] for r in results), "points": len(results)}


class DecodeLatticeMBR(VariantTask):
    """MBR: translation.<target> (detokenized) and bpe.<target> of the lattice MBR strings of a split."""

    stage = "lattice-mbr"
    version = 2  # 2: words of <unk> outputs from the lattice
    system = "MBR"

    def label(self) -> str:
        return f"{self.system}-{super().label()}"

    def requires(self) -> dict[str, PipelineTask]:
        required = {"acceptors": self.clone(BuildAcceptors), "lmatrix": self.clone(BuildLMatrix),
                    "pbmt": self.clone(DecodePBMT), "vocab": self.clone(BuildVocab),
                    "truecaser": self.clone(TrainTruecaser)}
        if self.profile_config.lmbr.tune:
            required["tuning"] = self.clone(TuneMBR)
            others = alpha_lmatrices(self)  # the chosen alpha is known only after tuning: the L of every alpha
            if others:
                required["lmatrix_alphas"] = others
        return required

    def params(self) -> dict[str, Any]:
        theta = {"theta": "tuned"} if self.profile_config.lmbr.tune else {}
        return {"system": self.system, "split": self.split, **theta, **self.variant_params()}

    def store(self):
        """The split's L matrices, under TuneMBR's theta and alpha when the profile tunes."""
        required, lmbr = self.requires(), self.profile_config.lmbr
        if not lmbr.tune:
            return LMatrixStore(sorted(required["lmatrix"].artifact_dir().glob("shard-*.npz")))
        chosen = required["tuning"].chosen()
        task = required.get("lmatrix_alphas", {}).get(chosen.get("alpha"), required["lmatrix"])
        store = LMatrixStore(sorted(task.artifact_dir().glob("shard-*.npz")))
        return ReweightedStore(store, Theta.from_p_r(chosen["p"], chosen["r"], lmbr.theta_convention, lmbr.theta_t))

    def build(self, out: Path) -> dict[str, Any]:
        target, inputs = self.config.target, self.requires()
        started = time.perf_counter()
        vocab = Vocabulary.load(inputs["vocab"].artifact_dir() / f"vocab.{target}.json")
        pbmt = list(read_lines(inputs["pbmt"].artifact_dir() / f"translation.{target}"))
        texts, subwords, fallback = mbr_translations(inputs["acceptors"].acceptors(), self.store(), pbmt, vocab,
                                                     target_processor(self, inputs["truecaser"]),
                                                     inputs["acceptors"].word_restorer())
        write_lines(out / f"translation.{target}", texts)
        write_lines(out / f"bpe.{target}", subwords)
        theta = {}
        if self.profile_config.lmbr.tune:
            chosen = inputs["tuning"].chosen()
            theta = {"theta": {"p": chosen["p"], "r": chosen["r"]}, "alpha": chosen.get("alpha")}
        return {"sentences": len(texts), "pbmt_fallback_lines": fallback, **theta,
                "timings": {"lattice_mbr": round(time.perf_counter() - started, 3)}}
