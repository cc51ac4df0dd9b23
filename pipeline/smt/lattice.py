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

from lattices.fst_binary import fst_from_arrays
from pipeline.smt.decoder import SearchGraph
from pipeline.smt.features import format_moses_features
from pipeline.smt.graph_kernels import incoming_arcs, nbest_chains

EPS, BOS, EOS = "<eps>", "<s>", "</s>"
BOS_ID, EOS_ID = 1, 2  # their labels


@dataclass(frozen=True)
class Hypothesis:
    words: tuple[str, ...]
    features: np.ndarray
    score: float


def to_fst(graph: SearchGraph) -> pynini.Fst:
    """The lattice of a search graph (see the module docstring), built as arrays and handed to OpenFst in its binary
    form (lattices/fst_binary.py): states 0 (start), 1 + v (search-graph state v), the final state, then the inner
    states of the word chains in the order of the arcs; each state's arcs in the order of the search graph's."""
    u, v, option = graph.arrays[:3]
    used, first_arc = np.unique(option, return_index=True)
    labels: dict[str, int] = {}  # word ids in order of first appearance
    option_labels = []  # the used options' label lists, in order of first appearance
    for o in used[np.argsort(first_arc, kind="stable")].tolist():
        option_labels.append((o, [labels.setdefault(word, 3 + len(labels)) for word in graph.targets[o]]))
    label_of = np.zeros(sum(len(w) for _, w in option_labels) + 1, dtype=np.int64)  # [0]: the epsilon of no words
    start_of = np.zeros(len(graph.targets), dtype=np.int64)
    length_of = np.zeros(len(graph.targets), dtype=np.int64)
    at = 1
    for o, w in option_labels:
        start_of[o], length_of[o] = at, len(w)
        label_of[at:at + len(w)] = w
        at += len(w)
    lengths = length_of[option]
    links = np.maximum(lengths, 1)                       # FST arcs per search-graph arc (an epsilon when empty)
    first = np.cumsum(links) - links                     # index of each chain's first FST arc
    inner = np.cumsum(links - 1) - (links - 1)           # index of each chain's first inner state
    final = graph.num_states + 1
    position = np.arange(int(links.sum())) - np.repeat(first, links)  # k: the k-th arc of its chain
    chain = np.repeat(np.arange(len(option)), links)
    last = position == np.repeat(links - 1, links)
    inner_state = graph.num_states + 2 + np.repeat(inner, links) + position  # the state after arc k (if inner)
    src = np.where(position == 0, 1 + u[chain], inner_state - 1)
    dst = np.where(last, 1 + v[chain], inner_state)
    label = label_of[np.where(lengths[chain] > 0, start_of[option[chain]] + position, 0)]
    cost = np.where(position == 0, -graph.arc_scores[chain], 0.0)
    num_states = graph.num_states + 2 + int((links - 1).sum())
    finals = np.full(num_states, np.inf)
    finals[final] = 0.0
    fst = fst_from_arrays(num_states, 0, np.concatenate(([0, 1 + graph.end], src)),
                          np.concatenate(([1, final], dst)), np.concatenate(([BOS_ID, EOS_ID], label)),
                          np.concatenate(([0.0, 0.0], cost)), finals, "standard")
    symbols = pynini.SymbolTable()
    for key, symbol in enumerate((EPS, BOS, EOS, *labels)):
        symbols.add_symbol(symbol, key)
    fst.set_input_symbols(symbols)
    fst.set_output_symbols(symbols)
    return fst


def fst_size(fst: pynini.Fst) -> tuple[int, int]:
    """(states, arcs) of an FST."""
    return fst.num_states(), sum(map(fst.num_arcs, range(fst.num_states())))  # a VectorFst numbers its states


def one_best(graph: SearchGraph) -> Hypothesis:
    path = graph.best_path()
    return Hypothesis(tuple(graph.words(path)), graph.features(path), graph.best_score)


def nbest(graph: SearchGraph, n: int, distinct: bool = False, max_pops: int = 100000) -> list[Hypothesis]:
    """The n best derivations (or distinct target strings), best first."""
    if distinct:
        return _nbest_distinct(graph, n, max_pops)
    u, v = graph.arrays[:2]
    begin, incoming = incoming_arcs(v, graph.num_states)
    scores, heads, chain_arc, chain_link = nbest_chains(u, graph.arc_scores, graph.state_scores, begin, incoming,
                                                        graph.end, n, max_pops)
    results = []
    for score, head in zip(scores.tolist(), heads.tolist()):
        path = []
        while head >= 0:
            path.append(int(chain_arc[head]))
            head = chain_link[head]
        results.append(Hypothesis(tuple(graph.words(path)), graph.features(path), score))
    return results


def _nbest_distinct(graph: SearchGraph, n: int, max_pops: int) -> list[Hypothesis]:
    """nbest's A* in Python, keeping the first (best) derivation of each target string."""
    incoming: list[list[int]] = [[] for _ in range(graph.num_states)]
    for a, arc in enumerate(graph.arcs):
        incoming[arc[1]].append(a)
    prefix, scores = graph.state_scores.tolist(), graph.arc_scores.tolist()
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
            if words in seen:
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
