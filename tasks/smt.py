"""The phrase-based system (PBMT): word alignment, phrase table, MERT, and decoding a split with lattices."""
from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import kenlm

from pipeline.io import read_json, read_lines, write_json, write_lines
from pipeline.smt.align import AlignerSettings, align, format_links, locate_eflomal, parse_links
from pipeline.smt.decoder import Decoder, DecoderSettings
from pipeline.smt.features import Weights, tuned_features
from pipeline.smt.lattice import format_nbest
from pipeline.smt.mert import MertSettings, corpus_bleu, bleu_stats, run_mert
from pipeline.smt.parallel import Job, decode_all
from pipeline.smt.phrase_scoring import build_phrase_table
from pipeline.smt.phrase_table import FORMAT_VERSION, FastPhraseTable
from pipeline.smt.reordering import SMOOTHING
from pipeline.smt.symmetrize import grow_diag_final_and
from pipeline.smt.weights import load_weights, save_weights
from pipeline.text import TextProcessor, get_tokenizer
from tasks.base import PipelineTask, shard_bounds
from tasks.data import TrainTruecaser, TruecaseSplit, load_truecaser
from tasks.variants import VariantTask
from tasks.lm import TrainLM

TABLE_TEXT, TABLE_FAST = "phrase-table.gz", "phrase-table.npz"
REORDERING_TEXT = "reordering-table.wbe-msd-bidirectional-fe.gz"  # Moses' name for the model's table


def lexicalised_reordering(task: PipelineTask) -> bool:
    """Whether the profile's PBMT has the lexicalised reordering model."""
    return task.profile_config.pbmt.reordering == "msd-bidirectional-fe"


def decoder_settings(task: PipelineTask) -> DecoderSettings:
    """The profile's PBMT limits, or a Table 2 variant's where it sets them."""
    p = task.profile_config.pbmt
    variant = task.variant_config() if hasattr(task, "variant_config") else None
    stack = variant.pbmt_stack_limit if variant and variant.pbmt_stack_limit else p.stack_limit
    distortion = variant.pbmt_distortion_limit if variant and variant.pbmt_distortion_limit else p.distortion_limit
    options = variant.pbmt_options_per_phrase if variant and variant.pbmt_options_per_phrase else p.options_per_phrase
    return DecoderSettings(stack_limit=stack, beam_threshold=p.beam_threshold, distortion_limit=distortion,
                           options_per_phrase=options)


def split_words(folder: Path, lang: str, limit: int = 0) -> list[list[str]]:
    lines = [line.split() for line in read_lines(folder / f"words.{lang}.gz")]
    return lines[:limit] if limit > 0 else lines


class AlignWords(PipelineTask):
    """eflomal alignments of the training words both ways, and their grow-diag-final-and symmetrisation."""

    stage = "align"
    batch = True
    parallel, memory_mb = True, 4000

    def requires(self) -> TruecaseSplit:
        return self.clone(TruecaseSplit, split=self.config.splits.train)

    def params(self) -> dict[str, Any]:
        return {"aligner": "eflomal", **asdict(self.aligner_settings()), "symmetrisation": "grow-diag-final-and"}

    def aligner_settings(self) -> AlignerSettings:
        return AlignerSettings(seed=self.profile_config.seed)

    def build(self, out: Path) -> dict[str, Any]:
        src, tgt = (list(read_lines(self.input_dir() / f"words.{lang}.gz"))
                    for lang in (self.config.source, self.config.target))
        started = time.perf_counter()
        forward, reverse = align(src, tgt, locate_eflomal(Path(self.tools_dir)), self.aligner_settings())
        aligned = time.perf_counter()
        symmetric = [grow_diag_final_and(f, r) for f, r in zip(forward, reverse)]
        for name, links in (("fwd", forward), ("rev", reverse), ("gdfa", symmetric)):
            write_lines(out / f"links.{name}.gz", (format_links(x) for x in links))
        return {"sentences": len(src), "links": {"fwd": sum(map(len, forward)), "rev": sum(map(len, reverse)),
                                                 "gdfa": sum(map(len, symmetric))},
                "timings": {"eflomal": round(aligned - started, 3),
                            "symmetrise": round(time.perf_counter() - aligned, 3)}}


class BuildPhraseTable(PipelineTask):
    """The phrase table of the training data: Moses text (gzip) and the fast form."""

    stage = "phrases"
    batch = True
    parallel, memory_mb = True, 6000

    def requires(self) -> dict[str, PipelineTask]:
        return {"words": self.clone(TruecaseSplit, split=self.config.splits.train), "align": self.clone(AlignWords)}

    def params(self) -> dict[str, Any]:
        params = {"max_phrase_length": self.profile_config.pbmt.max_phrase_length,
                  "scores": "p_fe lex_fe p_ef lex_ef", "lexical_alignment": "most frequent",
                  "fast_form": FORMAT_VERSION}
        if lexicalised_reordering(self):  # absent for distance-based reordering: its tables keep their signature
            params.update(reordering="wbe-msd-bidirectional-fe", reordering_smoothing=SMOOTHING)
        return params

    def build(self, out: Path) -> dict[str, Any]:
        words, links = self.requires()["words"].artifact_dir(), self.requires()["align"].artifact_dir()
        tmp_dir = Path(self.cache_dir) / "phrases-tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        return build_phrase_table(
            (line.split() for line in read_lines(words / f"words.{self.config.source}.gz")),
            (line.split() for line in read_lines(words / f"words.{self.config.target}.gz")),
            (parse_links(line) for line in read_lines(links / "links.gdfa.gz")),
            self.profile_config.pbmt.max_phrase_length, out / TABLE_TEXT, out / TABLE_FAST, tmp_dir=tmp_dir,
            threads=self.processes, reordering_path=out / REORDERING_TEXT if lexicalised_reordering(self) else None)


class PbmtModelTask(PipelineTask):
    """A stage that decodes with the phrase table and the LM."""

    def model_inputs(self) -> dict[str, PipelineTask]:
        return {"phrases": self.clone(BuildPhraseTable), "lm": self.clone(TrainLM)}

    def decoder(self, sentences: list[list[str]], weights: Weights) -> Decoder:
        inputs = self.requires()
        table = FastPhraseTable.load(inputs["phrases"].artifact_dir() / TABLE_FAST).filter(sentences)
        lm = kenlm.Model(str(inputs["lm"].artifact_dir() / "lm.bin"))
        return Decoder(table, lm, weights, decoder_settings(self))

    def decoding_processes(self) -> int:
        """The profile's decoding processes, at most the task's `processes` (what its worker may use)."""
        return max(1, min(self.profile_config.pbmt.workers, self.processes))


class TunePBMT(PbmtModelTask):
    """Log-linear weights by MERT on the task's tuning split, from Moses' default weights."""

    stage = "mert"
    batch = True
    parallel, memory_mb = True, 3000

    def requires(self) -> dict[str, PipelineTask]:
        return {**self.model_inputs(), "tune": self.clone(TruecaseSplit, split=self.config.splits.tune)}

    def mert_settings(self) -> MertSettings:
        p = self.profile_config.pbmt
        return MertSettings(iterations=p.mert_iterations, nbest=p.mert_nbest,
                            random_directions=p.mert_random_directions, restarts=p.mert_restarts,
                            seed=self.profile_config.seed)

    def params(self) -> dict[str, Any]:
        return {"tune": self.config.splits.tune, "sentences": self.profile_config.pbmt.mert_sentences,
                "decoder": asdict(decoder_settings(self)), "mert": asdict(self.mert_settings()),
                "metric": "BLEU on tokenized truecased words", "start": "Moses defaults"}

    def build(self, out: Path) -> dict[str, Any]:
        tune_dir = self.requires()["tune"].artifact_dir()
        limit = self.profile_config.pbmt.mert_sentences
        source = split_words(tune_dir, self.config.source, limit)
        references = split_words(tune_dir, self.config.target, limit)
        started = time.perf_counter()
        initial = Weights.default(lexicalised_reordering(self))
        decoder = self.decoder(source, initial)
        loaded = time.perf_counter()
        settings = self.mert_settings()

        def decode(weights: Weights):
            decoder.weights = weights
            results = decode_all(Job(decoder, source, nbest=settings.nbest), self.decoding_processes(),
                                 desc="mert")
            return [r.nbest for r in results]

        weights, history = run_mert(decode, references, initial, settings,
                                    tuned_features(decoder.table.reordering))
        signature = save_weights(out / "weights.json", weights, self.signature_params(),
                                 {"history": history})
        write_json(out / "mert.json", history)
        return {"sentences": len(source), "iterations": len(history), "signature": signature,
                "decoded_bleu": [h["decoded_bleu"] for h in history], "weights": weights.to_dict(),
                "best_iteration": next(h["iteration"] for h in history if h["weights"] == weights.to_dict()),
                "timings": {"pbmt_load": round(loaded - started, 3),
                            "mert": round(time.perf_counter() - loaded, 3)}}


class DecodePBMT(VariantTask, PbmtModelTask):
    """PBMT translation of a split: detokenized text, tokenized 1-best, n-best list and one lattice per sentence."""

    stage = "pbmt"
    batch = shardable = True
    parallel, memory_mb = True, 3000

    def requires(self) -> dict[str, PipelineTask]:
        return {**self.model_inputs(), "weights": self.clone(TunePBMT), "words": self.clone(TruecaseSplit),
                "truecaser": self.clone(TrainTruecaser)}

    def params(self) -> dict[str, Any]:
        p = self.profile_config.pbmt
        # the variant acts only through the decoder settings: a variant that keeps them shares the artifact
        return {"split": self.split, "decoder": asdict(decoder_settings(self)), "nbest": self.nbest(),
                "alpha": p.alpha}

    def nbest(self) -> int:
        """Size of the n-best list written beside the lattices: the variant's where it sets one, else the profile's."""
        variant = self.variant_config()
        return variant.pbmt_nbest if variant and variant.pbmt_nbest >= 0 else self.profile_config.pbmt.nbest

    def label(self) -> str:
        return self.split

    def build(self, out: Path) -> dict[str, Any]:
        return self.finish(out, [self.build_shard(out, 0, 1)])

    def build_shard(self, out: Path, shard: int, shards: int) -> dict[str, Any]:
        """Decode sentences [shard * N / shards, (shard + 1) * N / shards) of the split into `out`: words,
        translation and n-best lines, lattices named by their index in the whole split."""
        source, target = self.config.source, self.config.target
        inputs = self.requires()
        started = time.perf_counter()
        sentences = split_words(inputs["words"].artifact_dir(), source)
        first, last = shard_bounds(len(sentences), shard, shards)
        sentences = sentences[first:last]
        weights_file = load_weights(inputs["weights"].artifact_dir() / "weights.json")
        decoder = self.decoder(sentences, weights_file.weights)
        loaded = time.perf_counter()
        lattices = out / "lattices"
        results = decode_all(Job(decoder, sentences, nbest=self.nbest(), lattice_dir=lattices),
                             self.decoding_processes(), desc=f"pbmt {self.split}")
        decoded = time.perf_counter()
        if first:
            for r in reversed(results):  # in reverse: a new name never meets an old one not yet moved
                (lattices / f"{r.index}.fst").rename(lattices / f"{first + r.index}.fst")
        processor = TextProcessor(
            tokenizer=get_tokenizer(self.config.languages[target].tokenizer, target,
                                    Path(self.cache_dir) / "tokenizers"),
            truecaser=load_truecaser(inputs["truecaser"].artifact_dir(), target), bpe=None)
        write_lines(out / f"words.{target}", (" ".join(r.best.words) for r in results))
        write_lines(out / f"translation.{target}", (processor.postprocess(list(r.best.words), subword=False)
                                                    for r in results))
        write_lines(out / "nbest.txt", (line for r in results for line in format_nbest(first + r.index, r.nbest)))
        return {"sentences": len(results), "source_words": sum(r.source_words for r in results),
                "states": sum(r.lattice_states for r in results), "arcs": sum(r.lattice_arcs for r in results),
                "weights": weights_file.weights.to_dict(), "weights_signature": weights_file.signature,
                "timings": {"pbmt_load": round(loaded - started, 3), "pbmt_decode": round(decoded - loaded, 3),
                            "postprocess": round(time.perf_counter() - decoded, 3)}}

    def merge_shards(self, parts: list[Path], out: Path) -> dict[str, Any]:
        """The parts' outputs in order, their lattices moved into one folder."""
        target = self.config.target
        for name in (f"words.{target}", f"translation.{target}", "nbest.txt"):
            write_lines(out / name, (line for part in parts for line in read_lines(part / name)))
        (out / "lattices").mkdir()
        for part in parts:
            for lattice in (part / "lattices").glob("*.fst"):
                lattice.rename(out / "lattices" / lattice.name)
        return self.finish(out, [read_json(part / "part.json")["stats"] for part in parts])

    def finish(self, out: Path, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """lattices.json and the statistics of the whole split (decoding seconds summed over the parts)."""
        target, p = self.config.target, self.profile_config.pbmt
        sentences, words = sum(s["sentences"] for s in parts), sum(s["source_words"] for s in parts)
        states, arcs = sum(s["states"] for s in parts), sum(s["arcs"] for s in parts)
        write_json(out / "lattices.json", {"alpha": p.alpha, "sentences": sentences, "weights": parts[0]["weights"],
                                           "semiring": "tropical", "weights_signature": parts[0]["weights_signature"],
                                           "states": states, "arcs": arcs})
        timings = {k: round(sum(s["timings"][k] for s in parts), 3) for k in ("pbmt_load", "pbmt_decode",
                                                                              "postprocess")}
        stats: dict[str, Any] = {
            "sentences": sentences, "source_words": words,
            "lattice": {"states": states, "arcs": arcs, "states_per_word": round(states / max(words, 1), 2),
                        "arcs_per_word": round(arcs / max(words, 1), 2)},
            "words_per_minute": round(60 * words / max(timings["pbmt_decode"], 1e-9), 1),
            "timings": timings,
        }
        if self.split == self.config.splits.tune:  # tokenized BLEU against the tuning references, for MERT's record
            words_dir = self.requires()["words"].artifact_dir()
            refs = split_words(words_dir, target)
            hyps = [line.split() for line in read_lines(out / f"words.{target}")]
            stats["tokenized_bleu"] = round(100 * corpus_bleu(sum(bleu_stats(h, ref) for h, ref in zip(hyps, refs))),
                                            2)
        return stats
