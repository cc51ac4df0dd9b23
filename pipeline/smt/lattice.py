"""Search graph -> translation lattice (docs/LATTICE_FORMAT.md), the 1-best and n-best lists (Moses format).

The lattice is an OpenFst acceptor in the tropical semiring built with pynini: a start state, an arc ``<s>`` into
the search graph's start, each search-graph arc as a chain of word arcs (its cost, minus the log-linear score it
adds, on the first word; an option with no target words, as for an empty sentence, is one epsilon arc), and an
arc ``</s>`` from the end state to the one final state. Labels are word ids of a per-sentence symbol table
(``<eps>`` = 0, ``<s>`` = 1, ``</s>`` = 2, then the words in order of appearance). A path's cost is -H(path),
so the shortest path is the decoder's 1-best.

The n-best list is drawn from the same graph by best-first search backwards from the end state, with the exact
best prefix score of each state as the heuristic (A*): derivations come out in order of score, each with its
feature vector (which the plain FST does not keep).
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pynini

from pipeline.smt.decoder import SearchGraph
from pipeline.smt.features import format_moses_features

EPS, BOS, EOS = "<eps>", "<s>", "</s>"


@dataclass(frozen=True)
class Hypothesis:
    words: tuple[str, ...]
    features: np.ndarray
    score: float


def to_fst(graph: SearchGraph) -> pynini.Fst:
    """The lattice of a search graph (see the module docstring)."""
    symbols = pynini.SymbolTable()
    for label, symbol in enumerate((EPS, BOS, EOS)):
        symbols.add_symbol(symbol, label)
    ids: dict[str, int] = {}
    fst = pynini.Fst()
    # states: 0 = start, 1 + v = search-graph state v, then the final state, then the inner states of chains
    fst.add_states(graph.num_states + 2)
    final = graph.num_states + 1
    fst.set_start(0)
    fst.set_final(final, 0.0)
    fst.add_arc(0, pynini.Arc(1, 1, 0.0, 1))
    fst.add_arc(1 + graph.end, pynini.Arc(2, 2, 0.0, final))
    targets, arc_scores = graph.targets, graph.arc_scores
    one = pynini.Weight.one("tropical")
    arc = pynini.Arc(0, 0, one, 0)  # one arc object, refilled for every add_arc (pynini copies it)
    for a, (u, v, option, _, _) in enumerate(graph.arcs):
        words = targets[option]
        state, last = 1 + u, len(words) - 1
        arc.weight = -arc_scores[a]
        if not words:
            arc.ilabel = arc.olabel = 0
            arc.nextstate = 1 + v
            fst.add_arc(state, arc)
            continue
        for k, word in enumerate(words):
            label = ids.get(word)
            if label is None:
                label = ids[word] = symbols.add_symbol(word)
            if k == 1:
                arc.weight = one
            arc.ilabel = arc.olabel = label
            arc.nextstate = 1 + v if k == last else fst.add_state()
            fst.add_arc(state, arc)
            state = arc.nextstate
    fst.set_input_symbols(symbols)
    fst.set_output_symbols(symbols)
    return fst


def fst_size(fst: pynini.Fst) -> tuple[int, int]:
    """(states, arcs) of an FST."""
    return fst.num_states(), sum(fst.num_arcs(s) for s in fst.states())


def one_best(graph: SearchGraph) -> Hypothesis:
    path = graph.best_path()
    return Hypothesis(tuple(graph.words(path)), graph.features(path), graph.best_score)


def nbest(graph: SearchGraph, n: int, distinct: bool = False, max_pops: int = 100000) -> list[Hypothesis]:
    """The n best derivations (or distinct target strings), best first."""
    incoming: list[list[int]] = [[] for _ in range(graph.num_states)]
    for a, arc in enumerate(graph.arcs):
        incoming[arc[1]].append(a)
    prefix, scores = graph.state_scores, graph.arc_scores
    tie = itertools.count()
    heap = [(-prefix[graph.end], next(tie), graph.end, 0.0, ())]
    results: list[Hypothesis] = []
    seen: set[tuple[str, ...]] = set()
    pops = 0
    while heap and len(results) < n and pops < max_pops:
        neg, _, v, suffix, chain = heapq.heappop(heap)
        pops += 1
        if v == 0:
            path = _unchain(chain)
            words = tuple(graph.words(path))
            if distinct and words in seen:
                continue
            seen.add(words)
            results.append(Hypothesis(words, graph.features(path), -neg))
            continue
        for a in incoming[v]:
            u = graph.arcs[a][0]
            s = suffix + scores[a]
            heapq.heappush(heap, (-(prefix[u] + s), next(tie), u, s, (a, chain)))
    return results


def _unchain(chain: tuple) -> list[int]:
    path = []
    while chain:
        a, chain = chain
        path.append(a)
    return path


def format_nbest(index: int, hypotheses: Iterable[Hypothesis]) -> list[str]:
    """Moses n-best lines: ``i ||| words ||| LM0= ... TranslationModel0= ... ||| total``."""
    return [f"{index} ||| {' '.join(h.words)} ||| {format_moses_features(h.features)} ||| {h.score:.6g}"
            for h in hypotheses]


def parse_nbest(lines: Iterable[str]) -> dict[int, list[Hypothesis]]:
    """Read Moses n-best lines back (as written by format_nbest), by sentence index."""
    from pipeline.smt.features import parse_moses_features

    result: dict[int, list[Hypothesis]] = {}
    for line in lines:
        fields = line.split(" ||| ")
        if len(fields) < 4:
            raise ValueError(f"not a Moses n-best line: {line!r}")
        result.setdefault(int(fields[0]), []).append(
            Hypothesis(tuple(fields[1].split()), parse_moses_features(fields[2]), float(fields[3])))
    return result


def paths(fst: pynini.Fst) -> list[tuple[tuple[str, ...], float]]:
    """Every path of an acyclic lattice as (words without <s>/</s>/epsilon, cost), duplicates included.

    (pynini's own path iterator keeps one path per distinct string.) For tests and small lattices.
    """
    symbols = fst.output_symbols()
    zero = pynini.Weight.zero(fst.weight_type())
    out: list[tuple[tuple[str, ...], float]] = []
    stack = [(fst.start(), (), 0.0)]
    while stack:
        state, words, cost = stack.pop()
        final = fst.final(state)
        if final != zero:
            out.append((words, cost + float(final)))
        for arc in fst.arcs(state):
            word = symbols.find(arc.olabel)
            extra = (word,) if word not in (EPS, BOS, EOS) else ()
            stack.append((arc.nextstate, words + extra, cost + float(arc.weight)))
    return out


def sorted_scores(hypotheses: Sequence[Hypothesis]) -> bool:
    """True when scores do not increase along the list."""
    return all(a.score >= b.score - 1e-9 for a, b in zip(hypotheses, hypotheses[1:]))
