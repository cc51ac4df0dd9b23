"""NMT decoding stages: FNMT (the GRU ensemble) and TNMT (the averaged Transformer) translate a split with the
batched beam decoder (pipeline/decode), with the settings of the profile's [decode] section; LNMT and LTNMT are the
same models with the L matrices of the split's PBMT lattices added at every step (LMBR, pipeline/decode/lmbr_hook.py),
the NMT log-probabilities scaled by the profile's [lmbr] nmt_lambda (or the tuned one). The -lat systems keep the
search inside the strings of each sentence's PBMT lattice (lattice rescoring, Stahlberg et al. 2016: the acceptor
hook of pipeline/decode/constraints.py over the evidence space of L), without L (FNMT-lat, TNMT-lat) or with it
(LNMT-lat, LTNMT-lat), each string also paying mu times its loss against the lattice's best (the PBMT's own score,
mu = [lmbr] lattice_weight or TuneRescoring's choice with lambda; p, r, alpha and the gain form are LNMT's and
LTNMT's)."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, ClassVar

import torch

from pipeline.decode.batching import position_limit
from pipeline.decode.beam_search import SearchSettings
from pipeline.decode.constraints import acceptor_hook_factory
from pipeline.decode.hooks import HookFactory, chain_factories
from pipeline.decode.scores import max_output_lengths
from pipeline.decode.translate import LoadedModels, Translation, load_models, source_lengths, translate_lines
from pipeline.io import read_json, read_lines, write_lines
from pipeline.nmt.precision import decoding_half
from pipeline.nmt.speedups import CpuSpeedups
from pipeline.nmt.system import system_members
from pipeline.nmt.train import default_device
from pipeline.text import TextProcessor, get_tokenizer
from tasks.base import AtSnapshot, PipelineTask, shard_bounds
from tasks.data import ApplyBPE, TokenizeSplit, TrainTruecaser, load_truecaser
from tasks.nmt import ShrinkEnsemble
from tasks.variants import VariantTask

_LOG = logging.getLogger(__name__)


class DecodeNMT(AtSnapshot, VariantTask):
    """An NMT system's translation of a split: translation.<target> (detokenized, one line per source line; an
    empty source line gives an empty line) and bpe.<target> (the output subwords)."""

    stage = "nmt-decode"
    batch = shardable = True
    parallel, memory_mb = True, 3000

    def uses_gpu(self) -> bool:
        return default_device().type == "cuda"
    system: ClassVar[str] = ""      # the row of the table
    models: ClassVar[str] = ""      # the NMTSystem whose models decode (FNMT or TNMT), or PNMT: the pretrained model
    lmbr: ClassVar[bool] = False    # add the split's L matrices (BuildLMatrix) at every step
    constrained: ClassVar[bool] = False  # keep the search in the strings of the PBMT lattices (BuildAcceptors)

    def label(self) -> str:
        return f"{self.system}-{super().label()}"

    def requires(self) -> dict[str, PipelineTask]:
        from tasks.pretrained import PRETRAINED, acceptor_stage, lmatrix_stage

        pretrained = self.models == PRETRAINED
        required = {"system": self.system_task(), "truecaser": self.clone(TrainTruecaser),
                    **({"raw": self.clone(TokenizeSplit)} if pretrained else {"subwords": self.clone(ApplyBPE)})}
        if self.tunes_length():
            from tasks.length_penalty import TuneLengthPenalty

            required["length"] = self.clone(TuneLengthPenalty, models=self.models)
        if self.constrained:
            required["acceptors"] = self.clone(acceptor_stage(self.models))
            if self.profile_config.lmbr.tune:
                from tasks.tuning import TuneRescoring

                required["rescoring"] = self.clone(TuneRescoring, models=self.models, lmbr=self.lmbr)
        if self.lmbr:
            required["lmatrix"] = self.clone(lmatrix_stage(self.models))
            if not self.constrained and not pretrained:  # the words of <unk> outputs from the lattice
                from tasks.lmatrix import restorer_inputs

                required["words"] = restorer_inputs(self)
            if self.anchoring():
                from tasks.tuning import TuneSearch

                required["acceptors"] = self.clone(acceptor_stage(self.models))
                if self.profile_config.lmbr.tune and len(self.profile_config.lmbr.search_forms()) > 1:
                    required["search"] = self.clone(TuneSearch, models=self.models)
            if self.profile_config.lmbr.tune:
                from tasks.lmatrix import lmatrix_for
                from tasks.tuning import TuneLMBR, nbest_choices

                required["tuning"] = self.clone(TuneLMBR, models=self.models)
                # the chosen evidence space is known only after tuning: the L of every alpha and n-best of the grid
                # (the -lat systems and Table 2's variants without tuned_choices keep their own evidence space)
                lmbr = self.profile_config.lmbr
                nbests = (-1,) if self.keeps_own_evidence() else nbest_choices(lmbr)
                others = {(alpha, nbest): lmatrix_for(self, alpha, self.tuned_nbest(nbest), lmatrix_stage(self.models))
                          for alpha in lmbr.alphas(self.profile_config.pbmt.alpha) for nbest in nbests}
                others = {key: task for key, task in others.items() if task != required["lmatrix"]}
                if others:
                    required["lmatrix_choices"] = others
        return required

    def tunes_length(self) -> bool:
        """Whether this is a plain NMT system (no L, no lattice, not a Table 2 variant) whose length penalty
        TuneLengthPenalty chooses: the profile's [decode] grid_length_penalty lists it."""
        return (not self.lmbr and not self.constrained and self.variant_config() is None
                and bool(self.profile_config.decode.grid_length_penalty))

    def length_penalty(self) -> float:
        """The length penalty of the search: TuneLengthPenalty's choice, else the profile's [decode] one."""
        if self.tunes_length():
            return self.requires()["length"].chosen()
        return self.profile_config.decode.length_penalty

    def chosen(self) -> dict[str, Any]:
        """The tuned point: TuneLMBR's nmt_lambda, p, r, alpha, gains and evidence space (the one TuneSearch chose
        with [lmbr] search_evidence); for the -lat systems TuneRescoring's, which adds lattice_weight."""
        required = self.requires()
        if self.constrained:
            return required["rescoring"].chosen()
        chosen = required["tuning"].chosen()
        nbest = required["search"].chosen_nbest() if "search" in required else None
        return chosen if nbest is None else {**chosen, "nbest": nbest}

    def lattice_weight(self) -> float:
        """mu, the weight of the lattice's own cost (-lat systems): tuned, else the profile's."""
        lmbr = self.profile_config.lmbr
        return float(self.chosen()["lattice_weight"]) if lmbr.tune else lmbr.lattice_weight

    def lmatrix(self) -> PipelineTask:
        """The split's BuildLMatrix of the evidence space LMBR decodes with: TuneLMBR's alpha and n-best when it
        tunes them."""
        required = self.requires()
        if not self.profile_config.lmbr.tune:
            return required["lmatrix"]
        chosen = self.chosen()
        key = (chosen.get("alpha"), -1 if self.keeps_own_evidence() else chosen.get("nbest", -1))
        return required.get("lmatrix_choices", {}).get(key, required["lmatrix"])

    def keeps_own_evidence(self) -> bool:
        """Whether LMBR decodes over this decoding's own evidence space, not TuneLMBR's choice: the -lat systems, and
        Table 2's variants without tuned_choices (the accelerated system's 200-best)."""
        variant = self.variant_config()
        return self.constrained or (variant is not None and not variant.tuned_choices)

    def tuned_nbest(self, nbest: int) -> int:
        """lmatrix_for's n-best of a tuning grid's n-best: the grid's -1 (the profile's own) is the profile's
        evidence space, which for a variant must be named (lmatrix_for's -1 is the variant's own)."""
        return self.profile_config.lmbr.nbest if nbest < 0 and self.variant and not self.keeps_own_evidence() else nbest

    def anchoring(self) -> bool:
        """Whether this unconstrained LMBR decoding may search anchored (the profile's searches include it; Table 2's
        variants only with tuned_choices or tuned_search, else the paper's free search)."""
        variant = self.variant_config()
        return (self.lmbr and not self.constrained and (variant is None or variant.searches_as_tuned())
                and "anchored" in self.profile_config.lmbr.search_forms())

    def search_form(self) -> str:
        """The search of an unconstrained LMBR decoding: TuneSearch's choice, else the profile's; "free" for every
        other system."""
        if not self.anchoring():
            return "free"
        required = self.requires()
        return required["search"].chosen() if "search" in required else self.profile_config.lmbr.search

    def nmt_lambda(self) -> float:
        """LMBR's lambda: TuneLMBR's choice when the profile tunes, else the profile's [lmbr] nmt_lambda."""
        if self.profile_config.lmbr.tune:
            return float(self.chosen()["nmt_lambda"])
        return self.profile_config.lmbr.nmt_lambda

    def params(self) -> dict[str, Any]:
        params = {"system": self.system, "split": self.split,
                  "decode": self.profile_config.decode.hashed()}
        if self.tunes_length():
            params["length_penalty"] = "tuned"
        if self.lmbr:
            lmbr = self.profile_config.lmbr
            params["nmt_lambda"] = "tuned" if lmbr.tune else lmbr.nmt_lambda
            params["gains"] = "tuned" if lmbr.tune else lmbr.gains
            params["patience"] = lmbr.patience
            if self.anchoring():  # profiles that never anchor keep the artifacts of before
                params["search"] = "tuned" if "search" in self.requires() else lmbr.search
        if self.constrained:
            lmbr = self.profile_config.lmbr
            params["lattice_weight"] = "tuned" if lmbr.tune else lmbr.lattice_weight
        variant = self.variant_config()
        chosen = {"beam": variant.beam, "threshold": variant.threshold, "single_model": variant.single_model,
                  **({"shrunken": True} if self.shrunken() else {})} if variant else {}
        return {**params, **self.variant_params(**chosen)}

    def shrunken(self) -> bool:
        """Whether the models are the FNMT ensemble shrunk into one (a variant's `shrunken`)."""
        variant = self.variant_config()
        return self.models == "FNMT" and variant is not None and variant.single_model and variant.shrunken

    def system_task(self) -> PipelineTask:
        """The NMT system that decodes: the profile's FNMT or TNMT, the shrunken FNMT ensemble, or the pretrained
        model (PNMT)."""
        from tasks.pretrained import nmt_system

        return self.clone(ShrinkEnsemble) if self.shrunken() else nmt_system(self, self.models)

    def search(self) -> tuple[int, float]:
        """(beam, early-pruning threshold): the variant's, else the profile's."""
        variant, decode = self.variant_config(), self.profile_config.decode
        return (variant.beam, variant.threshold) if variant else (decode.beam, decode.threshold)

    def lmatrix_store(self):
        """The split's L matrices; with LMBR tuning, its posteriors under the theta TuneLMBR chose (rebuilt per
        batch: the posteriors are the costly part and are computed once for all systems)."""
        from lattices.lmatrix_shards import LMatrixStore
        from lattices.theta import Theta
        from pipeline.decode.lmbr_tuning import ReweightedStore

        store = LMatrixStore(sorted(self.lmatrix().artifact_dir().glob("shard-*.npz")))
        lmbr = self.profile_config.lmbr
        if not lmbr.tune:
            return store
        chosen = self.chosen()
        return ReweightedStore(store, Theta.from_p_r(chosen["p"], chosen["r"], lmbr.theta_convention, lmbr.theta_t))

    def hook_factory(self, models: LoadedModels, lines: range, subwords: list[str], settings: SearchSettings,
                     unconstrained: list[int]) -> HookFactory | None:
        """Line i of the split uses the L (LMBR) and the acceptor (-lat systems) of sentence i, the PBMT lattice of
        line i; a shard's line j is the split's line lines[j], its BPE source subwords[j]. Lines decoded
        unconstrained (no usable acceptor) are appended to `unconstrained` and logged."""
        lmbr = None
        if self.lmbr:
            from pipeline.decode.lmbr_hook import lmbr_hook_factory

            lmbr = lmbr_hook_factory(self.lmatrix_store(), models.tgt_vocab.bos_id, sentence_ids=lines,
                                     vocab_size=len(models.tgt_vocab), gains=self.gains())
        constrain = None
        if self.constrained:
            acceptors = self.requires()["acceptors"].acceptors()
            lengths = torch.tensor(source_lengths(subwords, models))
            limits = max_output_lengths(lengths, settings.max_length_a, settings.max_length_b,
                                        position_limit(models.ensemble)).tolist()

            def warn(index: int, reason: str) -> None:
                unconstrained.append(lines[index] + 1)
                _LOG.warning("%s %s, line %d: %s", self.system, self.split, lines[index] + 1, reason)

            constrain = acceptor_hook_factory([acceptors.get(line) for line in lines], limits, models.tgt_vocab.eos_id,
                                              warn, self.lattice_weight())
        return chain_factories([lmbr, constrain])

    def translate_anchored(self, models: LoadedModels, lines: range, subwords: list[str], settings: SearchSettings,
                           processor: TextProcessor, unconstrained: list[int], batching: dict[str, Any]):
        """translate_anchored (pipeline/decode/anchored.py) of the split's lines `lines` (BPE `subwords`): line i
        with the L and the acceptor of sentence i. Lines whose acceptor is unusable are appended to `unconstrained`
        (their lattice copy decodes free) and logged."""
        from pipeline.decode.anchored import translate_anchored
        from pipeline.decode.lmbr_hook import lmbr_hook_factory

        store, acceptors = self.lmatrix_store(), self.requires()["acceptors"].acceptors()

        def lmbr(ids: list[int]) -> HookFactory:
            return lmbr_hook_factory(store, models.tgt_vocab.bos_id, sentence_ids=ids,
                                     vocab_size=len(models.tgt_vocab), gains=self.gains())

        def warn(index: int, reason: str) -> None:
            unconstrained.append(lines[index] + 1)
            _LOG.warning("%s %s, line %d (anchored): %s", self.system, self.split, lines[index] + 1, reason)

        return translate_anchored(subwords, models, settings, processor, lmbr, list(lines),
                                  [acceptors.get(line) for line in lines], warn, **batching)

    def early_exit(self, length_penalty: float) -> bool:
        """Whether the search ends a sentence once its n-best is certain: the profile's early_exit, for the plain
        systems searching by raw scores (length penalty 0)."""
        return (self.profile_config.decode.early_exit and not self.lmbr and not self.constrained
                and length_penalty == 0)

    def gains(self) -> str:
        """The gain form: the tuned one (lmbr.json of before bounded gains: the paper's per step), else the
        profile's."""
        lmbr = self.profile_config.lmbr
        return self.chosen().get("gains", "per_step") if lmbr.tune else lmbr.gains

    def build(self, out: Path) -> dict[str, Any]:
        return self.build_shard(out, 0, 1)

    def build_shard(self, out: Path, shard: int, shards: int) -> dict[str, Any]:
        """Translate lines [shard * N / shards, (shard + 1) * N / shards) of the split into `out`."""
        torch.set_num_threads(max(1, self.processes))
        target, device = self.config.target, default_device()
        begin = time.perf_counter()
        models, lines = self.loaded_models(device), self.source_lines()
        loaded = time.perf_counter()
        first, last = shard_bounds(len(lines), shard, shards)
        texts, result, stats = self.translate_with(models, lines, first, last)
        write_lines(out / f"translation.{target}", texts)
        write_lines(out / f"bpe.{target}", result.bpe)
        stats["timings"] = {**self.upstream_timings(), "nmt_load": round(loaded - begin, 3),
                            "nmt_decode": stats["timings"]["nmt_decode"],
                            "postprocess": stats["timings"]["postprocess"]}
        return stats

    def loaded_models(self, device: torch.device) -> LoadedModels:
        """The system's models on `device`: the pretrained model's folder, else the NMT system's members (a
        variant's first alone) with the profile's CPU speed-ups and precision."""
        inputs, decode = self.requires(), self.profile_config.decode
        if "raw" in inputs:  # the pretrained model: the raw lines through its own tokenizer
            from tasks.pretrained import model_dir

            return load_models([model_dir(inputs["system"])], device,
                               languages=(self.config.source, self.config.target))
        system_file = inputs["system"].artifact_dir() / "system.json"
        speedups = CpuSpeedups.of(decode) if device.type == "cpu" else CpuSpeedups()
        variant = self.variant_config()
        members = system_members(system_file)[:1] if variant and variant.single_model else [system_file]
        return load_models(members, device, speedups, half=decoding_half(decode.fp16, device))

    def source_lines(self) -> list[str]:
        """The split's source lines as the models read them: raw for the pretrained model, else BPE subwords."""
        inputs, source = self.requires(), self.config.source
        if "raw" in inputs:
            return list(read_lines(inputs["raw"].artifact_dir() / f"raw.{source}.gz"))
        return list(read_lines(inputs["subwords"].artifact_dir() / f"bpe.{source}.gz"))

    def translate_with(self, models: LoadedModels, lines: list[str], first: int,
                       last: int) -> tuple[list[str], Translation, dict[str, Any]]:
        """Lines [first, last) of the split's source `lines` translated by `models` as this system decodes them
        (its search settings, batching, hooks or anchored search, and the words of <unk> outputs restored): the
        texts, the Translation and the stats of the artifact (timings: the decoding's own)."""
        target, inputs, decode = self.config.target, self.requires(), self.profile_config.decode
        tokenizer = get_tokenizer(self.config.languages[target].tokenizer, target, Path(self.cache_dir) / "tokenizers")
        processor = TextProcessor(tokenizer=tokenizer, truecaser=load_truecaser(inputs["truecaser"].artifact_dir(),
                                                                                target), bpe=None)
        beam, threshold = self.search()
        length_penalty = self.length_penalty()
        settings = SearchSettings(beam=beam, threshold=threshold, length_penalty=length_penalty,
                                  max_length_a=decode.max_length_a, max_length_b=decode.max_length_b,
                                  weight=self.nmt_lambda() if self.lmbr else 1.0,
                                  patience=self.profile_config.lmbr.patience,
                                  early_exit=self.early_exit(length_penalty))
        unconstrained: list[int] = []
        batching = {"batch_sentences": decode.batch_sentences, "sort": decode.sort, "streaming": decode.streaming,
                    "refill": decode.refill}
        from_lattice: list[int] = []
        if self.search_form() == "anchored":
            result, from_lattice = self.translate_anchored(models, range(first, last), lines[first:last], settings,
                                                           processor, unconstrained, batching)
        else:
            hooks = self.hook_factory(models, range(first, last), lines[first:last], settings, unconstrained)
            result = translate_lines(lines[first:last], models, settings, processor, source=None,
                                     hook_factory=hooks, **batching)
        texts, restored = result.text, []
        if models.pretrained:  # text from the model's own tokenizer: no <unk> to restore
            pass
        elif self.constrained:  # outputs with <unk>: their words from the lattice path they follow
            texts, restored = inputs["acceptors"].word_restorer().restore(
                range(first, last), result.bpe, result.text, lambda words: processor.postprocess(words, subword=False))
        elif self.lmbr:  # the words L wrote as <unk>, from the lattice
            from tasks.lmatrix import word_restorer

            texts, restored = word_restorer(inputs["words"], target).restore(
                range(first, last), result.bpe, result.text, lambda words: processor.postprocess(words, subword=False),
                paths=set(from_lattice))
        stats = dict(result.stats)
        if self.lmbr:
            stats["lmbr"] = {"nmt_lambda": self.nmt_lambda(), "gains": self.gains()}
        if self.constrained:
            stats["lattice_weight"] = self.lattice_weight()
        if self.tunes_length():
            stats["length_penalty"] = length_penalty
        if self.anchoring():
            stats["lmbr"]["search"] = self.search_form()
            stats["lattice_lines"] = [first + k + 1 for k in from_lattice]  # outputs of the lattice copy
        if self.constrained or self.search_form() == "anchored":
            stats["unconstrained_lines"] = sorted(unconstrained)
        if self.constrained or self.lmbr:
            stats["restored_lines"] = [first + k + 1 for k in restored]
        return texts, result, stats

    def merge_shards(self, parts: list[Path], out: Path) -> dict[str, Any]:
        """The parts' translations in order; counts and decoding seconds summed (the work, not the wall time)."""
        target = self.config.target
        for name in (f"translation.{target}", f"bpe.{target}"):
            write_lines(out / name, (line for part in parts for line in read_lines(part / name)))
        stats = [read_json(part / "part.json")["stats"] for part in parts]
        merged = dict(stats[0])
        for key in ("sentences", "decoded_sentences", "source_words", "target_words", "backoff_sentences"):
            merged[key] = sum(s[key] for s in stats)
        for key in ("unconstrained_lines", "restored_lines", "lattice_lines"):
            if key in merged:
                merged[key] = sorted(line for s in stats for line in s.get(key, []))
        merged["seconds"] = round(sum(s["seconds"] for s in stats), 3)
        merged["words_per_minute"] = round(60 * merged["source_words"] / max(merged["seconds"], 1e-9), 1)
        merged["timings"] = {**stats[0]["timings"],
                             **{k: round(sum(s["timings"][k] for s in stats), 3)
                                for k in ("nmt_load", "nmt_decode", "postprocess")}}
        return merged

    def upstream_timings(self) -> dict[str, float]:
        """LMBR: the split's phrase-based decoding and posteriors + L, the first two phases of the hybrid pipeline
        (paper, Figure 1); wall seconds of their artifacts."""
        if not self.lmbr:
            return {}
        lmatrix = self.lmatrix()
        pbmt = lmatrix.requires()["lattices"].signature()["stats"]["timings"]
        return {"pbmt_decode": pbmt["pbmt_decode"],
                "posteriors_and_l": lmatrix.signature()["stats"]["timings"]["posteriors_and_l"]}


class DecodeFNMT(DecodeNMT):
    """FNMT: the ensemble of GRU models (one per seed) of NMTSystem(FNMT)."""

    system = models = "FNMT"


class DecodeTNMT(DecodeNMT):
    """TNMT: the averaged Transformer(s) of NMTSystem(TNMT)."""

    system = models = "TNMT"


class DecodeLNMT(DecodeNMT):
    """LNMT: the FNMT ensemble with LMBR (the L matrices of the split's PBMT lattices)."""

    system, models, lmbr = "LNMT", "FNMT", True
    version = 5  # 2: under bounded gains the search goes on while a live row can still beat the finished ones; 3:
    # or up to patience x B finished; 4: BOS is never an output (L paid the unigram <s>); 5: the words of <unk>
    # from the lattice


class DecodeLTNMT(DecodeNMT):
    """LTNMT: the TNMT model with LMBR."""

    system, models, lmbr = "LTNMT", "TNMT", True
    version = 5  # 2: under bounded gains the search goes on while a live row can still beat the finished ones; 3:
    # or up to patience x B finished; 4: BOS is never an output (L paid the unigram <s>); 5: the words of <unk>
    # from the lattice


class DecodeFNMTLattice(DecodeNMT):
    """FNMT-lat: the FNMT ensemble rescoring the PBMT lattice (the search kept in its strings)."""

    system, models, constrained = "FNMT-lat", "FNMT", True
    version = 2  # 2: mu x the lattice's score; words of <unk> outputs from the lattice


class DecodeLNMTLattice(DecodeNMT):
    """LNMT-lat: LNMT kept in the strings of the PBMT lattice."""

    system, models, lmbr, constrained = "LNMT-lat", "FNMT", True, True
    version = 4  # 2: mu x the lattice's score; words of <unk> outputs from the lattice; 3: bounded gains' stop;
    # 4: with patience


class DecodeTNMTLattice(DecodeNMT):
    """TNMT-lat: the TNMT model rescoring the PBMT lattice."""

    system, models, constrained = "TNMT-lat", "TNMT", True
    version = 2  # 2: mu x the lattice's score; words of <unk> outputs from the lattice


class DecodeLTNMTLattice(DecodeNMT):
    """LTNMT-lat: LTNMT kept in the strings of the PBMT lattice."""

    system, models, lmbr, constrained = "LTNMT-lat", "TNMT", True, True
    version = 4  # 2: mu x the lattice's score; words of <unk> outputs from the lattice; 3: bounded gains' stop;
    # 4: with patience


class DecodePNMT(DecodeNMT):
    """PNMT: the pretrained model ([pretrained] model) alone, through our batched beam search."""

    system, models = "PNMT", "PNMT"
    version = 2  # 2: the model's generation config followed (bad words and suppressed tokens never produced)


class DecodeLPNMT(DecodeNMT):
    """LPNMT: the pretrained model with LMBR (the L of the split's PBMT lattices in the model's units)."""

    system, models, lmbr = "LPNMT", "PNMT", True
    version = 2  # 2: the model's generation config followed (bad words and suppressed tokens never produced)


class DecodePNMTLattice(DecodeNMT):
    """PNMT-lat: the pretrained model rescoring the PBMT lattice (the search kept in its strings)."""

    system, models, constrained = "PNMT-lat", "PNMT", True
    version = 2  # 2: the model's generation config followed (bad words and suppressed tokens never produced)


class DecodeLPNMTLattice(DecodeNMT):
    """LPNMT-lat: LPNMT kept in the strings of the PBMT lattice."""

    system, models, lmbr, constrained = "LPNMT-lat", "PNMT", True, True
    version = 2  # 2: the model's generation config followed (bad words and suppressed tokens never produced)
