"""Raw text through an exported system, in one process: the whole hybrid chain of Figure 1.

    translator = Translator(load_system(folder))
    for line in translator.translate(lines):          # raw lines in, detokenized translations out, line-aligned
        ...
    translator.timings                                 # seconds per phase, summed over the batches

Two halves, so that a server can decode sentences of many requests together (pipeline/deploy/decoding_service.py):

    prepare(lines) -> [Prepared]    preprocess: normalise, tokenize, truecase, BPE
                                    pbmt: phrase-based decoding; lattices go to a temporary folder as DecodePBMT
                                          writes them
                                    posteriors: L (LMBR) and acceptors (-lat) by the pipeline's own shard builders
                                          on those lattices, so that a sentence gets the L and the acceptor its
                                          split artifact has; kept in memory with the word lattice
    hooks(prepared) -> factory      the score hooks of any selection of prepared sentences (L under the decoding
                                    theta, the acceptor with mu), chained as DecodeNMT chains them
    finish(item, hypotheses) -> str postprocess: detokenize; an output with <unk> of a -lat system takes its words
                                    from the word lattice

Terminology (terms.py): with `terms` (the translator's own, or per line in `prepare`), a line in which a source term
occurs must contain its target term, in both halves of a hybrid. The PBMT decodes the term's source span with the
target term as its only option (Moses' XML input, exclusive; pipeline/smt/options.py), so the lattices, and with
them L and the acceptors, agree with the term; the NMT search must write the term's subwords
(pipeline/decode/terms.py). An LMBR system (LNMT, LTNMT) also decodes a line with forced terms on its lattice's
acceptor, as its -lat system would (without the lattice's costs): at small lambda L gives the search little
sense of where the term belongs, and the lattice puts it where the PBMT placed it in context. A sentence whose
terms cannot all be met within its length limit (or on its lattice) is decoded again without them, with a warning
that names the line and the term (`missing_terms`). Where two terms' source spans overlap, the PBMT forces only
the first.

A system whose NMT is a pretrained `transformers` model (PNMT, LPNMT and their -lat systems: system.py) reads the
raw line through the model's own tokenizer instead of BPE and writes the model's text; its L is that of the lattices
in the model's units, and so are its acceptors (lattices/model_shards.py). Its search meets a term in the model's
own pieces (ModelUnitMapper.text_ids: the term's text as it stands inside a sentence, its first piece marked as a
word start); SentencePiece marks where words start, not where they end, so a term's last piece may go on into a
longer word ("Polizei" met inside "Polizeiauto"), which BPE's end-of-word marks rule out.

`translate` runs both on batches of `batch_lines` lines (memory stays bounded whatever the input's size). An empty
line gives an empty line. The outputs equal the pipeline's artifacts for the same lines (tests/tasks/test_export.py).
"""
from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import torch

from pipeline.deploy.system import DeployedSystem
from pipeline.deploy.terms import Term, Terminology
from pipeline.errors import DataError
from pipeline.text import BpeSegmenter, TextProcessor, Truecaser, get_tokenizer

__all__ = ["Prepared", "Translator"]

_LOG = logging.getLogger(__name__)
PHASES = ("preprocess", "pbmt", "posteriors", "nmt", "postprocess")
PREPARE_PHASES = PHASES[:3]  # the phases of `prepare`
CACHED_PHRASES = 50_000  # the PBMT's cache of scored options (source phrases) across calls


@dataclass
class Prepared:
    """One input line ready for the search: its subwords and source ids (empty: an empty line, translated to ""),
    and what its hooks and its postprocessing need."""

    line: int                    # its number in the translator's input (1-based, for warnings)
    subwords: list[str]
    source_ids: list[int]
    limit: int = 0               # the most output tokens (max_output_lengths)
    pbmt: str | None = None      # the PBMT system's translation
    lmatrix: Any = None          # LMatrix (LMBR systems)
    acceptor: Any = None         # Acceptor (-lat systems)
    anchor: Any = None           # Acceptor of the lattice copy (LMBR systems under anchored search)
    from_lattice: bool = False   # its output came from the lattice copy (anchored search)
    lattice: Any = None          # the word Lattice (-lat and LMBR systems: restoring <unk> words)
    terms: list[tuple[Term, list[int]]] = field(default_factory=list)  # terms to meet, with their target ids
    forced: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)  # PBMT: span -> target words


class Translator:
    """Translates raw lines with an exported system (see the module docstring)."""

    def __init__(self, system: DeployedSystem, batch_lines: int = 64, device: str | None = None,
                 workers: int = 1, terms: Terminology | None = None, decode_only: bool = False) -> None:
        """decode_only: the NMT half alone (hooks, beam batches, finish), without loading the PBMT: for a server
        whose sentences are prepared in worker processes (preparer.py), and for its decoding processes
        (decoder_process.py)."""
        if batch_lines < 1:
            raise ValueError(f"batch_lines must be at least 1, not {batch_lines}")
        self.system, self.batch_lines, self.workers, self.terms = system, batch_lines, workers, terms
        self.decode_only = decode_only
        self.pretrained = system.kind.pretrained
        self._term_ids: dict[str, list[int] | None] = {}
        self._target_bpe: BpeSegmenter | None = None
        self._word_final: torch.Tensor | None = None   # [V] bool: target subwords that end a word
        self.timings = {phase: 0.0 for phase in PHASES}
        self.lines_seen = 0
        self.source = self._processor(system.source,
                                      None if self.pretrained else system.path(f"text/codes.{system.source}"))
        self.target = self._processor(system.target, None)
        self.models = self._models(device) if system.kind.models else None
        self.pbmt = self._pbmt() if system.kind.needs_lattices and not decode_only else None
        self.settings = self._search_settings() if self.models is not None else None
        self.mapper = self._mapper() if system.kind.lmbr or system.kind.constrained else None
        if system.kind.lmbr or system.kind.constrained:
            from lattices.lmatrix import compile_kernels

            compile_kernels()

    # ----------------------------------------------------------------------------------------------- loading
    def _processor(self, lang: str, codes: Path | None) -> TextProcessor:
        settings = self.system.language(lang)
        truecaser = Truecaser.load(self.system.path(f"text/truecase.{lang}.json")) if settings["truecase"] else None
        return TextProcessor(tokenizer=get_tokenizer(settings["tokenizer"], lang), truecaser=truecaser,
                             bpe=BpeSegmenter(codes) if codes is not None else None)

    def _models(self, device: str | None):
        from pipeline.decode.translate import load_models
        from pipeline.nmt.precision import decoding_half
        from pipeline.nmt.speedups import CpuSpeedups

        decode = self.system.settings.decode
        device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if self.pretrained:  # (the CPU speed-ups and fp16 are this project's models')
            return load_models([self.system.pretrained_folder()], device,
                               languages=(self.system.source, self.system.target))
        speedups = CpuSpeedups.of(decode) if device.type == "cpu" else CpuSpeedups()
        half = decoding_half(decode.get("fp16", False), device)
        return load_models([self.system.path("nmt/system.json")], device, speedups, half=half)

    def _pbmt(self):
        """The phrase-based decoder, on the whole phrase table: it lives as long as the translator, and so does its
        cache of scored options (a phrase is scored once, not once per call)."""
        import kenlm

        from pipeline.smt.decoder import Decoder, DecoderSettings
        from pipeline.smt.phrase_table import FastPhraseTable
        from pipeline.smt.weights import load_weights

        pbmt = self.system.settings.pbmt
        return Decoder(FastPhraseTable.load(self.system.path("pbmt/phrase-table.npz")),
                       kenlm.Model(str(self.system.path("pbmt/lm.bin"))),
                       load_weights(self.system.path("pbmt/weights.json")).weights, DecoderSettings(**pbmt["decoder"]),
                       max_cached_phrases=CACHED_PHRASES)

    def _search_settings(self):
        from pipeline.decode.beam_search import SearchSettings

        decode, lmbr = self.system.settings.decode, self.system.settings.lmbr
        return SearchSettings(beam=decode["beam"], threshold=decode["threshold"],
                              length_penalty=decode["length_penalty"], max_length_a=decode["max_length_a"],
                              max_length_b=decode["max_length_b"],
                              weight=lmbr["nmt_lambda"] if self.system.kind.lmbr else 1.0,
                              patience=decode.get("patience", 1.0),
                              early_exit=decode.get("early_exit", False) and not (self.system.kind.lmbr or
                                                                                  self.system.kind.constrained))

    def _mapper(self):
        from lattices.units import TokenMapper

        if self.pretrained:
            from lattices.model_shards import model_unit_mapper

            return model_unit_mapper(self.models.tgt_vocab,
                                     lambda words: self.target.postprocess(words, subword=False))
        target = self.system.target
        return TokenMapper.from_files(self.system.path(f"text/codes.{target}"),
                                      self.system.path(f"text/vocab.{target}.json"))

    # ---------------------------------------------------------------------------------------------- translate
    def translate(self, lines: Iterable[str]) -> Iterator[str]:
        """The translation of every line, in order, decoded `batch_lines` at a time."""
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) == self.batch_lines:
                yield from self.translate_batch(batch)
                batch = []
        if batch:
            yield from self.translate_batch(batch)

    def translate_batch(self, lines: list[str], terms: Sequence[Terminology | None] | None = None) -> list[str]:
        """The translations of one batch of raw lines (terms: each line's terminology; default the translator's)."""
        prepared = self.prepare(lines, terms)
        if self.models is None:
            return [item.pbmt for item in prepared]
        clock = time.perf_counter()
        decoded = [k for k, item in enumerate(prepared) if item.source_ids]
        results = self._decode([prepared[k] for k in decoded])
        failed = [j for j, k in enumerate(decoded) if self.missing_terms(prepared[k], results[j])]
        if failed:  # decoded again without their terms
            for j, hyps in zip(failed, self._decode([prepared[decoded[j]] for j in failed])):
                results[j] = hyps
        clock = self._tick("nmt", clock)
        texts = [""] * len(prepared)
        for k, hyps in zip(decoded, results):
            texts[k] = self.finish(prepared[k], hyps)
        self._tick("postprocess", clock)
        return texts

    def anchored(self) -> bool:
        """Whether the system searches anchored (pipeline/decode/anchored.py): free and inside the PBMT lattice."""
        return self.system.kind.lmbr and self.system.settings.lmbr.get("search", "free") == "anchored"

    def searches(self, item: Prepared) -> list[Prepared]:
        """The searches of one prepared sentence: itself, and under anchored search its lattice copy (an item with
        an acceptor of its own, forced terms, is searched in it either way: one search)."""
        if self.anchored() and item.acceptor is None:
            return [item, replace(item, acceptor=item.anchor)]
        return [item]

    def better_search(self, item: Prepared, results: Sequence[list]) -> list:
        """The n-best list of the better of an item's searches (`searches`, in that order); the item is marked
        from_lattice when its lattice copy won."""
        from pipeline.decode.anchored import better_copy

        chosen = better_copy(results) if len(results) > 1 else 0
        item.from_lattice = chosen == 1 and item.anchor is not None
        return results[chosen]

    def _decode(self, items: list[Prepared]) -> list:
        """The n-best lists of the items' searches; under anchored search, of the better copy of each (the items
        whose lattice copy won are marked from_lattice). Every first search, then every lattice copy."""
        from pipeline.decode.batching import decode_sources

        decode = self.system.settings.decode
        copies: dict[int, Prepared] = {}  # item index -> its lattice copy
        for k, item in enumerate(items):
            searches = self.searches(item)
            if len(searches) > 1:
                copies[k] = searches[1]
        runs = items + list(copies.values())
        results = decode_sources(self.models.ensemble, [item.source_ids for item in runs], self.settings,
                                 decode["batch_sentences"], decode["sort"], self.models.device, self.hooks(runs),
                                 streaming=decode["streaming"], refill=decode["refill"])
        second = dict(zip(copies, results[len(items):]))
        return [self.better_search(item, [results[k], *([second[k]] if k in second else [])])
                for k, item in enumerate(items)]

    def _tick(self, phase: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[phase] += now - since
        return now

    # ------------------------------------------------------------------------------------------------ prepare
    def prepare(self, lines: Sequence[str], terms: Sequence[Terminology | None] | None = None,
                first_line: int | None = None) -> list[Prepared]:
        """Preprocessing, PBMT and posteriors of a batch of raw lines, numbered from first_line in warnings (default:
        on from earlier batches); terms: the terminology of each line (default: the translator's own)."""
        from pipeline.decode.scores import max_output_lengths

        if self.decode_only and self.system.kind.needs_lattices:
            raise RuntimeError("a decode_only translator has no PBMT to prepare lines with")
        clock = time.perf_counter()
        first = self.lines_seen + 1 if first_line is None else first_line
        self.lines_seen = max(self.lines_seen, first + len(lines) - 1)
        words = [self.source.words(line) for line in lines]
        prepared = []
        for k, w in enumerate(words):
            if self.pretrained:  # the model's tokenizer on the raw line
                ids = self.models.src_vocab.encode_line(lines[k]) if w else []
                subwords = self.models.src_vocab.tokenizer.convert_ids_to_tokens(ids)
            else:
                subwords = self.source.subwords(w) if self.models is not None else []
                ids = self.models.src_vocab.encode(subwords) + [self.models.src_vocab.eos_id] if subwords else []
            prepared.append(Prepared(first + k, subwords, ids))
        for item, line, terminology in zip(prepared, lines, terms or [self.terms] * len(lines)):
            if terminology is not None and line.strip():
                self._terms_of(item, terminology, line)
        if self.models is not None:
            self._check_positions(prepared)
            limits = max_output_lengths(torch.tensor([max(len(p.source_ids), 1) for p in prepared]),
                                        self.settings.max_length_a, self.settings.max_length_b, self._positions())
            for item, limit in zip(prepared, limits.tolist()):
                item.limit = limit
        clock = self._tick("preprocess", clock)
        if self.pbmt is not None:
            with tempfile.TemporaryDirectory(prefix="lmbr-translate-") as tmp:
                self._lattices(words, prepared, Path(tmp), clock)
        return prepared

    def prepare_timed(self, lines: Sequence[str], terms: Sequence[Terminology | None] | None = None,
                      first_line: int | None = None) -> tuple[list[Prepared], dict[str, float]]:
        """`prepare`, and the seconds it spent in each of its phases (PREPARE_PHASES)."""
        before = dict(self.timings)
        prepared = self.prepare(lines, terms, first_line)
        return prepared, {phase: self.timings[phase] - before[phase] for phase in PREPARE_PHASES}

    def _terms_of(self, item: Prepared, terminology: Terminology, line: str) -> None:
        """The item's terms: the forced spans of the PBMT, and the target ids of the NMT search (a term with a subword
        the NMT does not know is left out of the NMT's, with a warning: the model cannot write it)."""
        for term, (first, last) in terminology.find(self.source.tokenizer.tokenize(line)):
            if self.pbmt is not None and all(last < a or first > b for a, b in item.forced):
                item.forced[(first, last)] = tuple(self.target.tokenizer.tokenize(term.target))
            if self.models is None or not item.source_ids:
                continue
            ids = self._target_ids(term.target)
            if ids is None:
                _LOG.warning("%s, line %d: term %r -> %r (%s): a unit of the target term is not in the NMT "
                             "vocabulary; left out", self.system.name, item.line, " ".join(term.source),
                             term.target, term.origin)
            else:
                item.terms.append((term, ids))

    def _target_ids(self, text: str) -> list[int] | None:
        """A target term's ids in the NMT's units (None when one is unknown): BPE subwords of its tokens, or the
        pretrained model's pieces of the text as it stands inside a sentence."""
        if text not in self._term_ids:
            vocab = self.models.tgt_vocab
            if self.pretrained:
                if self.mapper is None:  # PNMT: no lattices, so no mapper until its first term
                    self.mapper = self._mapper()
                ids = [i + vocab.offset for i in self.mapper.text_ids(text)]
            else:
                if self._target_bpe is None:
                    self._target_bpe = BpeSegmenter(self.system.path(f"text/codes.{self.system.target}"))
                ids = vocab.encode(self._target_bpe.segment(self.target.tokenizer.tokenize(text)))
            self._term_ids[text] = None if not ids or vocab.unk_id in ids else ids
        return self._term_ids[text]

    def missing_terms(self, item: Prepared, hypotheses: list) -> list[Term]:
        """The item's terms that its best hypothesis lacks (all of them when the search found none). If any, they
        are warned about and dropped from the item, which is then to be decoded again without them."""
        from pipeline.decode.terms import contains

        if not item.terms:
            return []
        best, final = (hypotheses[0].tokens if hypotheses else ()), self.word_final()
        missing = [term for term, ids in item.terms if not contains(best, ids, lambda token: bool(final[token]))]
        if missing:
            for term in missing:
                _LOG.warning("%s, line %d: term %r -> %r (%s) cannot be met within the length limit%s: the "
                             "translation without its terms is given", self.system.name, item.line,
                             " ".join(term.source), term.target, term.origin,
                             " on the lattice" if self.system.kind.constrained else "")
            item.terms = []
        return missing

    def word_final(self) -> torch.Tensor:
        """[V] bool: the target subwords that end a word (no BPE separator): a term starts only after one. For a
        pretrained model every token: its terms start with a piece that marks a word start itself ("▁")."""
        if self._word_final is None:
            from pipeline.text.bpe import SEPARATOR

            tokens = self.models.tgt_vocab.tokens
            self._word_final = torch.tensor([self.pretrained or not token.endswith(SEPARATOR) for token in tokens])
        return self._word_final

    def _positions(self) -> int | None:
        from pipeline.decode.batching import position_limit

        return position_limit(self.models.ensemble)

    def _check_positions(self, prepared: list[Prepared]) -> None:
        limit = self._positions()
        for item in prepared:
            if limit is not None and len(item.source_ids) > limit:
                raise DataError(f"line {item.line}: {len(item.source_ids)} source subwords (with </s>), more than "
                                f"the model's {limit} positions (max_positions): split the line")

    def _lattices(self, words: list[list[str]], prepared: list[Prepared], tmp: Path, clock: float) -> None:
        """PBMT decoding of the batch into tmp/lattices, then L, acceptors and word lattices per sentence."""
        from lattices.fst_io import lattice_paths, read_lattice
        from pipeline.smt.parallel import Job, decode_all

        results = decode_all(Job(self.pbmt, words, lattice_dir=tmp / "lattices",
                                 forced=[item.forced for item in prepared]), self.workers, desc="pbmt")
        for item, result in zip(prepared, results):
            item.pbmt = self.target.postprocess(list(result.best.words), subword=False)
        clock = self._tick("pbmt", clock)
        if self.models is None:
            return
        kind, lmbr = self.system.kind, self.system.settings.lmbr
        paths = lattice_paths(tmp)
        if kind.lmbr:
            for item, matrix, path in zip(prepared, self._lmatrices(paths, tmp / "lmatrix.npz"), paths):
                item.lmatrix, item.lattice = matrix, read_lattice(path)
        if self.anchored():  # the lattice copy's acceptor: the evidence space of DecodeLNMT's BuildAcceptors
            anchors = self._acceptors(paths, lmbr["anchor_nbest"], tmp / "anchors.npz")
            for k, item in enumerate(prepared):
                item.anchor = anchors.get(k)
        # acceptors: every sentence of a -lat system; the sentences with forced terms of an LMBR system
        steered = [k for k, item in enumerate(prepared) if kind.constrained or (kind.lmbr and item.forced)]
        if steered:
            acceptors = self._acceptors([paths[k] for k in steered], lmbr["nbest"], tmp / "acceptors.npz")
            for k in steered:
                prepared[k].acceptor = acceptors.get(k)
                if prepared[k].lattice is None:
                    prepared[k].lattice = read_lattice(paths[k])
        self._tick("posteriors", clock)

    def _unit_files(self) -> tuple[Path, Path]:
        """The target side's BPE codes and vocabulary: what the lattices are mapped with (but for a pretrained
        model)."""
        target = self.system.target
        return self.system.path(f"text/codes.{target}"), self.system.path(f"text/vocab.{target}.json")

    def _acceptors(self, paths: list[Path], nbest: int, shard: Path) -> dict:
        """{sentence: Acceptor} of the lattices' evidence space (nbest; 0: the full lattice) in the NMT's units."""
        from lattices.acceptor import build_acceptor_shard, load_acceptors

        lmbr = self.system.settings.lmbr
        if self.pretrained:
            from lattices.model_shards import build_model_acceptor_shard

            build_model_acceptor_shard(paths, self.mapper, nbest, shard, lmbr["engine"], lmbr["max_evidence_states"])
        else:
            build_acceptor_shard(paths, *self._unit_files(), nbest, shard, lmbr["engine"], lmbr["max_evidence_states"],
                                 self.mapper)
        return load_acceptors([shard])

    def _lmatrices(self, paths: list[Path], shard: Path) -> list:
        """L of every lattice, as BuildLMatrix builds it (the PBMT's theta), seen under the decoding theta (for a
        pretrained model, in its units)."""
        from lattices.lmatrix_shards import build_lmatrix_shard, load_shard
        from lattices.model_shards import build_model_lmatrix_shard
        from lattices.theta import Theta

        lmbr = self.system.settings.lmbr
        built = Theta.from_signature(lmbr["theta_build"])
        if self.pretrained:
            build_model_lmatrix_shard(paths, self.mapper, len(self.models.tgt_vocab), built, lmbr["alpha"],
                                      lmbr["semiring"], lmbr["nbest"], shard, lmbr["order"], lmbr["engine"],
                                      lmbr["max_evidence_states"])
        else:
            build_lmatrix_shard(paths, *self._unit_files(), built, lmbr["alpha"], lmbr["semiring"], lmbr["nbest"],
                                shard, lmbr["order"], lmbr["engine"], lmbr["max_evidence_states"], self.mapper)
        matrices = sorted(load_shard(shard), key=lambda m: m.sentence)
        if lmbr["theta"] != lmbr["theta_build"]:
            theta = Theta.from_signature(lmbr["theta"])
            matrices = [m.with_theta(theta) for m in matrices]
        return matrices

    # ----------------------------------------------------------------------------------------- hooks, finish
    def hooks(self, items: Sequence[Prepared]):
        """The hook factory of a selection of prepared sentences: input index i is items[i]."""
        from pipeline.decode.constraints import acceptor_hook_factory
        from pipeline.decode.hooks import chain_factories
        from pipeline.decode.lmbr_hook import lmbr_hook_factory
        from pipeline.decode.terms import term_hook_factory

        kind, lmbr, vocab = self.system.kind, self.system.settings.lmbr, self.models.tgt_vocab
        scorer = constrain = terms = None
        if kind.lmbr:
            scorer = lmbr_hook_factory(_Matrices(items), vocab.bos_id, vocab_size=len(vocab), gains=lmbr["gains"])
        if kind.constrained or any(item.acceptor is not None for item in items):
            def warn(index: int, reason: str) -> None:
                _LOG.warning("%s, line %d: %s", self.system.name, items[index].line, reason)

            constrain = acceptor_hook_factory([item.acceptor for item in items], [item.limit for item in items],
                                              vocab.eos_id, warn, lmbr["lattice_weight"] if kind.constrained else 0.0)
        if any(item.terms for item in items):
            terms = term_hook_factory([[ids for _, ids in item.terms] for item in items], vocab.eos_id,
                                      self.word_final())
        return chain_factories([scorer, constrain, terms])

    def decoding_model(self):
        """The model the searches step: the ensemble, or its one model unwrapped (as decode_sources does)."""
        from pipeline.nmt.interface import Ensemble

        model = self.models.ensemble
        return model.models[0] if isinstance(model, Ensemble) and len(model) == 1 else model

    @torch.inference_mode()
    def beam_batch(self, items: Sequence[Prepared], model=None):
        """A BeamBatch (pipeline/decode/beam_search.py) of prepared sentences, with their hooks: a server's pool
        steps it with its others (batching.step_pool). model: decoding_model(), when the caller holds it."""
        from pipeline.decode.beam_search import BeamBatch
        from pipeline.nmt.token_batches import pad_sequences

        model, device = model or self.decoding_model(), self.models.device
        src, lengths = pad_sequences([item.source_ids for item in items], model.pad_id)
        limits = torch.tensor([item.limit for item in items], dtype=torch.long)
        factory = self.hooks(items)
        hook = factory(list(range(len(items))), device) if factory is not None else None
        return BeamBatch(model, src.to(device), lengths.to(device), limits.to(device), self.settings, hook)

    def finish(self, item: Prepared, hypotheses: list) -> str:
        """The detokenized text of a sentence's best hypothesis ("" when there is none)."""
        from lattices.restore import restore_unknown_words, restore_words
        from pipeline.vocab import UNK

        if not hypotheses:
            return ""
        if self.pretrained:
            return self.models.tgt_vocab.decode_line(hypotheses[0].tokens)
        pieces = self.models.tgt_vocab.decode(hypotheses[0].tokens)
        if item.lattice is not None and UNK in pieces:
            if self.system.kind.constrained or item.acceptor is not None or item.from_lattice:  # a lattice string
                words = restore_words(item.lattice, self.mapper, self.mapper.vocab.encode(pieces))
            else:  # unconstrained LMBR: the words L wrote as <unk> (as DecodeLNMT does)
                words = restore_unknown_words(item.lattice, self.mapper, pieces)
            if words is not None:
                return self.target.postprocess(words, subword=False)
        return self.target.postprocess(list(pieces))


class _Matrices:
    """The L matrices of prepared sentences, as a store for lmbr_hook_factory (sentence i = items[i])."""

    def __init__(self, items: Sequence[Prepared]) -> None:
        self.items = items

    def get(self, sentences: Sequence[int]) -> list:
        return [self.items[s].lmatrix for s in sentences]
