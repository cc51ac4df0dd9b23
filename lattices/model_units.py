"""From word lattices to a pretrained model's units: each word arc becomes the pieces the model's tokenizer gives
that word where it stands in the detokenized, detruecased text.

The phrase-based system writes lattices over tokenized, Moses-escaped, truecased words; a pretrained model
(pipeline/nmt/pretrained.py) reads and writes raw text through its own SentencePiece model. units.py maps words to
BPE pieces one word at a time; here a word's pieces also depend on what stands before it:

- its surface form: unescaped, and at a sentence start as the postprocessing writes a sentence's first word
  (capitalised by detruecasing; a sentence starts after <s>, after . ? !, and behind an opening quote or bracket
  there);
- whether a space precedes it (the detokenizer glues "." to the word before it and "Haus" to a "(" before it):
  SentencePiece marks a word that follows a space with "▁" and splits the text at spaces, so a glued word's pieces
  are those of its surface form without "▁" (the model's script split keeps punctuation apart from letters).

That left context is small (:class:`Context`: a sentence start, glued to the word before, a double quote open, the
text's first word). :func:`map_lattice_to_model` splits each lattice state by the contexts its incoming paths
arrive with, so every path of the result spells exactly the pieces of its own context. The rules come from the language's own TextProcessor (the detokenizer and
detruecaser that postprocess every NMT output) probed word by word, not from a second copy of them.

FST labels are the model's ids + 1 (:data:`LABEL_OFFSET`): label 0 is epsilon, and a model's id 0 is a real token
(Marian's </s>, M2M100's <s>). <s> maps to the model's BOS, </s> to its EOS, as in units.py.

:func:`mapping_mismatches` checks the mapping against the tokenizer itself: for each checked path, the unit
sequence must equal the tokenizer's encoding of the path's postprocessed text. What the context does not hold
(e.g. the detokenizer's rules that look further back) shows up there as mismatches, counted rather than hidden.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

from lattices.lattice import Lattice
from pipeline.text.truecase import DELAYED_SENTENCE_START, SENTENCE_END
from pipeline.vocab import BOS, EOS

__all__ = ["LABEL_OFFSET", "Context", "MappingCheck", "ModelUnitMapper", "map_lattice_to_model",
           "mapping_mismatches", "sentencepiece_pieces"]

LABEL_OFFSET = 1
_QUOTES = frozenset({'"', "&quot;"})
_PROBE = "x"  # a neutral lower-case word, to see how the detokenizer joins a word to its neighbours


def sentencepiece_pieces(processor) -> Callable[[str], list[str]]:
    """text -> pieces of a SentencePieceProcessor, without its dummy prefix: " Haus" -> ["▁Haus"], "Haus" -> ["Haus"].

    A text without a leading space is encoded behind a one-character context of another script ("x" before
    punctuation, "(" before letters and digits) whose pieces are then dropped; the script split of SentencePiece
    keeps a piece boundary there (checked: the rest must spell the text).
    """
    def pieces(text: str) -> list[str]:
        if not text or text.startswith(" "):
            return processor.encode(text, out_type=str)
        context = "(" if text[0].isalnum() else "x"
        encoded = processor.encode(context + text, out_type=str)
        spelled = ""
        for k, piece in enumerate(encoded):
            spelled += piece
            if spelled.replace("\u2581", "") == context:
                rest = encoded[k + 1:]
                if "".join(rest) == text.replace(" ", "\u2581"):
                    return rest
                break
        raise ValueError(f"{text!r}: its pieces depend on the text before it")
    return pieces


@dataclass(frozen=True)
class Context:
    """What a word's pieces depend on, from the words before it."""

    start: bool = True          # at a sentence start: the word is capitalised
    glued: bool = False         # the word before glues to it (an opening bracket or quote): no space
    quote_open: bool = False    # an odd number of double quotes so far
    begin: bool = True          # the first word of the text (SentencePiece's dummy prefix gives it "▁")


@dataclass
class ModelUnitMapper:
    """Word in context -> the model's ids, from the language's postprocessing and the model's SentencePiece.

    postprocess: tokens -> text (TextProcessor.postprocess with subword=False: detruecase, unescape, detokenize);
    pieces: text -> SentencePiece pieces without the dummy prefix (a leading space gives "▁");
    piece_ids: pieces -> the model's ids; bos_id, eos_id: the model's; unk_id: the model's <unk>, whose pieces are
    counted: `words` holds every word mapped, `unknown` the written forms the model cannot spell (a piece maps to
    <unk>).
    """

    postprocess: Callable[[list[str]], str]
    pieces: Callable[[str], list[str]]
    piece_ids: Callable[[list[str]], list[int]]
    bos_id: int
    eos_id: int
    unk_id: int | None = None
    words: set[str] = field(default_factory=set, repr=False)
    unknown: set[str] = field(default_factory=set, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def _probe(self, word: str) -> tuple[str, str, bool, bool]:
        """(surface form inside a sentence, at its start, glues to the word before, glues to the word after) of a
        word, from the postprocessing itself."""
        key = ("probe", word)
        if key not in self._cache:
            surface = self.postprocess([_PROBE, word])[len(_PROBE):]
            glued_left = not surface.startswith(" ")
            after = self.postprocess([_PROBE, word, _PROBE])[len(_PROBE):]
            self._cache[key] = (surface.lstrip(" "), self.postprocess([word]), glued_left,
                                not after.lower().endswith(" " + _PROBE))
        return self._cache[key]

    def next_context(self, context: Context, word: str) -> Context:
        """The context after `word` (detruecase's sentence starts; the detokenizer's glue; quote parity)."""
        if word == BOS:
            return Context()
        if word in _QUOTES:
            opening = not context.quote_open
            return Context(start=context.start if opening else False, glued=opening, quote_open=opening, begin=False)
        start = True if word in SENTENCE_END else (context.start if word in DELAYED_SENTENCE_START else False)
        return Context(start=start, glued=self._probe(word)[3], quote_open=context.quote_open, begin=False)

    def ids(self, word: str, context: Context) -> tuple[int, ...]:
        """The model's ids of `word` after `context` (never empty)."""
        if word == BOS:
            return (self.bos_id,)
        if word == EOS:
            return (self.eos_id,)
        key = (word, context)
        if key not in self._cache:
            inside, at_start, glued_left, _ = self._probe(word)
            if word in _QUOTES:  # an opening quote takes a space, a closing one is glued (the detokenizer's parity)
                glued_left = context.quote_open
            surface = at_start if context.start else inside
            space = "" if (glued_left or context.glued) and not context.begin else " "
            try:
                pieces = self.pieces(space + surface)
            except ValueError:  # characters the model does not know split with their neighbours: one <unk>
                if self.unk_id is None:
                    raise
                pieces = []
                self._cache[key] = (self.unk_id,)
            else:
                if not pieces:
                    raise ValueError(f"the word {word!r} has no pieces in the model's vocabulary")
                self._cache[key] = tuple(self.piece_ids(pieces))
            self.words.add(word)
            if self.unk_id is not None and self.unk_id in self._cache[key]:
                self.unknown.add(surface)  # as it is written there (a sentence start capitalises it)
        return self._cache[key]

    def text_ids(self, text: str) -> tuple[int, ...]:
        """The model's ids of raw `text` (one or more words) behind a space, as it stands inside a sentence: a
        terminology entry's target in the model's units. Its first piece carries the word-start mark "▁"."""
        return tuple(self.piece_ids(self.pieces(" " + text.strip()))) if text.strip() else ()


def map_lattice_to_model(lattice: Lattice, mapper: ModelUnitMapper) -> Lattice:
    """The word lattice in the model's units (labels: ids + LABEL_OFFSET), its states split by left context.

    A state reached with several contexts becomes one state per context; each arc becomes the chain of its word's
    ids in its source's context, its cost on the first piece.
    """
    table = lattice.symbols
    if table is None:
        raise ValueError("the lattice has no symbol table: its word labels cannot be mapped to the model's units")
    if lattice.num_states == 0:
        return Lattice.empty({})
    out = lattice.out_arcs()
    contexts: list[set[Context]] = [set() for _ in range(lattice.num_states)]
    contexts[lattice.start].add(Context())
    number: dict[tuple[int, Context], int] = {}

    def state(q: int, context: Context) -> int:
        return number.setdefault((q, context), len(number))

    arcs: list[tuple[int, int, int, float]] = []
    fresh = [0]
    chains: list[tuple[int, int, tuple[int, ...], float]] = []
    for q in range(lattice.num_states):  # topological order: every context of q is known here
        for context in sorted(contexts[q], key=lambda c: (c.start, c.glued, c.quote_open, c.begin)):
            for label, d, cost in out[q]:
                word = table[label] if label else None
                after = context if word is None else mapper.next_context(context, word)
                contexts[d].add(after)
                ids = () if word is None else mapper.ids(word, context)
                chains.append((state(q, context), state(d, after), ids, cost))
    n = len(number)
    finals = {s: float(lattice.final[q]) for (q, _), s in number.items() if lattice.final[q] != float("inf")}
    for src, dst, ids, cost in chains:
        if not ids:
            arcs.append((src, dst, 0, cost))
            continue
        prev = src
        for k, y in enumerate(ids):
            nxt = dst if k == len(ids) - 1 else n + fresh[0]
            if k < len(ids) - 1:
                fresh[0] += 1
            arcs.append((prev, nxt, y + LABEL_OFFSET, cost if k == 0 else 0.0))
            prev = nxt
    symbols = {y + LABEL_OFFSET: f"id{y}" for _, _, ids, _ in chains for y in ids}
    return Lattice.from_arcs(n + fresh[0], number[(lattice.start, Context())], arcs, finals, symbols)


@dataclass
class MappingCheck:
    """Paths checked, those whose units differ from the tokenizer's encoding, and a few of them."""

    paths: int = 0
    mismatches: int = 0
    examples: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.mismatches / self.paths if self.paths else 0.0


def _walk(lattice: Lattice, out, rng: random.Random) -> list[int]:
    """The labels of one random complete path (uniform among a state's arcs and its final choice)."""
    q, labels = lattice.start, []
    while True:
        options = out[q] + ([None] if lattice.final[q] != float("inf") else [])
        pick = rng.choice(options)
        if pick is None:
            return labels
        label, q, _ = pick
        if label:
            labels.append(label)


def mapping_mismatches(lattices: Sequence[Lattice], mapper: ModelUnitMapper, encode: Callable[[str], list[int]],
                       paths_per_lattice: int = 20, seed: int = 0, all_paths_below: int = 200) -> MappingCheck:
    """Check the mapping on word lattices: every path of a lattice with fewer than `all_paths_below` paths, else
    `paths_per_lattice` random ones. A path's units (its words mapped in context) must equal `encode` (the model's
    tokenizer: text -> ids, without specials) of the path's postprocessed text, between BOS and EOS."""
    check, rng = MappingCheck(), random.Random(seed)
    for lattice in lattices:
        table = lattice.symbols
        try:
            strings = [labels for labels, _ in lattice.paths(limit=all_paths_below)]
        except ValueError:  # too many: sample
            out = lattice.out_arcs()
            strings = [tuple(_walk(lattice, out, rng)) for _ in range(paths_per_lattice)]
        for labels in strings:
            words = [table[x] for x in labels]
            context, units = Context(), []
            for word in words:
                units.extend(mapper.ids(word, context))
                context = mapper.next_context(context, word)
            inner = [w for w in words if w not in (BOS, EOS)]
            text = mapper.postprocess(inner)
            expected = tuple(encode(text))
            got = tuple(u for u in units if u not in (mapper.bos_id, mapper.eos_id))
            check.paths += 1
            if got != expected:
                check.mismatches += 1
                if len(check.examples) < 10:
                    check.examples.append((text, got, expected))
    return check
