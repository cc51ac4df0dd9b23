"""Stack decoding for phrase-based translation (Koehn 2004; Moses' normal search), keeping the search graph.

Hypotheses are grouped in stacks by the number of source words they cover. A hypothesis is a ``Node``: its
best score, coverage bitmask, end of the last source phrase, KenLM state and future-score estimate. Extending
a node by an option is an *arc* carrying the LM score and distortion it adds; nodes with the same coverage,
last position and LM state are recombined into one node, which keeps every incoming arc (the losers' arcs too),
so the search graph is the lattice. Every complete hypothesis goes to one end node; the arc that completes the
coverage also scores ``</s>``.

Pruning: a stack keeps its ``stack_limit`` best nodes by score + future score (histogram; when a stack grows to
twice the limit it is pruned on the spot, as Moses does, and from then on rejects what scores below its
limit-th best) and drops nodes and arcs worse than the stack's best by more than -ln(beam_threshold)
(threshold); an option is not even scored with the LM when its future-score estimate (LM estimate without
context) is already below the stack's floor. Reordering: the jump from the previous phrase's end to the new
phrase's start is at most ``distortion_limit`` words, and a phrase that leaves the first gap open must end
close enough to jump back to it (Moses' rule); a negative limit means no limit.

Lexicalised reordering (pipeline.smt.reordering), when the phrase table has it: an arc also scores the
orientation of its phrase against the one before (the phrase's backward probability and the previous phrase's
forward probability), and the arc that completes the sentence the last phrase's forward orientation against the
end. A node then also remembers the start of its last phrase and the forward probabilities of its last option,
and recombines only with nodes that agree on both.
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import kenlm
import numpy as np

from pipeline.smt.compiled_search import LIBRARY, CompiledSearch
from pipeline.smt.features import DISTORTION, FEATURES, LM, LN10, REORDERING, Weights
from pipeline.smt.future_cost import FutureCosts, span_table
from pipeline.smt.graph_kernels import best_prefix
from pipeline.smt.options import OptionCache, Options, collect_options, passthrough_features
from pipeline.smt.phrase_table import PhraseTable
from pipeline.smt.reordering import WeightedReordering, decoding_orientation, reordering_features


@dataclass(frozen=True)
class DecoderSettings:
    stack_limit: int = 100  # hypotheses kept per stack (Moses -s)
    beam_threshold: float = 1e-5  # prune worse than best x this (Moses -b); 0 disables
    distortion_limit: int = 6  # Moses -dl; negative: unlimited
    options_per_phrase: int = 20  # Moses -ttable-limit; 0: no cap


# A node (recombined hypothesis, a state of the search graph) is a list, the cheapest object to make in the inner
# loop: [score, coverage bitmask, last source position, KenLM state, future score, incoming arcs, first source
# position of the last phrase, last option (-1 at the start)]; an arc is a tuple (previous node, option id, LM
# ln-score, distortion, orientation, orientation against the end (-1 but on an arc that completes)).
SCORE, COVERAGE, LAST, STATE, FUTURE, ARCS, FIRST, OPTION = range(8)
Node = list
ARC_DTYPES = (np.int64, np.int64, np.int64, np.float64, np.int64)  # SearchGraph.arrays: u, v, option, lm, distortion


@dataclass
class SearchGraph:
    """The pruned search graph of one sentence: states 0 (start) .. len-1 (end), arcs in topological order.

    An arc (u, v, option, lm, distortion) applies ``option`` (a source span and a target phrase, possibly empty)
    in state u; its features are the option's static features plus ``lm`` and ``distortion``, and with the
    reordering model its reordering features (``orientations``, ``reordering``; pipeline.smt.reordering).
    """

    source: list[str]
    weights: Weights
    targets: list[tuple[str, ...]]
    spans: list[tuple[int, int]]
    static: np.ndarray  # [options, features]
    arcs: list[tuple[int, int, int, float, int]]  # grouped by target state, states in topological order
    num_states: int
    stats: dict = field(default_factory=dict)
    # the arcs as columns (u, v, option [int64], lm [float64], distortion [int64]); made from ``arcs`` when not given
    arrays: tuple[np.ndarray, ...] | None = field(default=None, repr=False)
    # with the reordering model: [arcs, 3] int64 (orientation, the option before (-1 at the start), orientation
    # against the end (-1 but on an arc that completes)) and [options, 6] the options' reordering ln probabilities
    orientations: np.ndarray | None = field(default=None, repr=False)
    reordering: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.arrays is None:
            columns = list(zip(*self.arcs)) if self.arcs else [()] * 5
            self.arrays = tuple(np.array(c, dtype=t) for c, t in zip(columns, ARC_DTYPES))
        u, v, option, lm, distortion = self.arrays
        w = self.weights.vector
        # [arcs] float64: an arc's static score plus its weighted LM score and distortion, added in that order
        self.arc_scores = (self.static @ w)[option] + float(w[LM]) * lm + float(w[DISTORTION]) * distortion
        self.arc_reordering = None  # [arcs, 6] the arcs' reordering features, with the reordering model
        if self.orientations is not None:
            self.arc_reordering = reordering_features(self.orientations, option, self.reordering)
            self.arc_scores = self.arc_scores + self.arc_reordering @ w[REORDERING]
        # arcs come grouped by target state, in topological order
        self.state_scores, self.best_arc = best_prefix(u, v, self.arc_scores, self.num_states)

    @property
    def end(self) -> int:
        return self.num_states - 1

    @property
    def best_score(self) -> float:
        return float(self.state_scores[self.end])

    def arc_features(self, a: int) -> np.ndarray:
        _, _, option, lm, distortion = self.arcs[a]
        f = self.static[option].copy()
        f[LM] += lm
        f[DISTORTION] += distortion
        if self.arc_reordering is not None:
            f[REORDERING] += self.arc_reordering[a]
        return f

    def arc_score(self, a: int) -> float:
        return float(self.weights.vector @ self.arc_features(a))

    def best_path(self) -> list[int]:
        """Arc ids of the best path, start to end."""
        path, v = [], self.end
        while v != 0:
            a = self.best_arc[v]
            path.append(a)
            v = self.arcs[a][0]
        return path[::-1]

    def words(self, path: Sequence[int]) -> list[str]:
        return [w for a in path for w in self.targets[self.arcs[a][2]]]

    def features(self, path: Sequence[int]) -> np.ndarray:
        """The feature vector of a path: its arcs' features summed in path order."""
        if not path:
            return np.zeros(len(FEATURES))
        arcs = [self.arcs[a] for a in path]
        rows = self.static[[arc[2] for arc in arcs]]  # [arcs, features], a copy
        rows[:, LM] += [arc[3] for arc in arcs]
        rows[:, DISTORTION] += [arc[4] for arc in arcs]
        if self.arc_reordering is not None:
            rows[:, REORDERING] += self.arc_reordering[list(path)]
        return rows.sum(axis=0)


class Decoder:
    """Phrase-based stack decoder over a phrase table (filtered or not) and a KenLM model."""

    def __init__(self, table: PhraseTable, lm: kenlm.Model, weights: Weights,
                 settings: DecoderSettings = DecoderSettings(), max_cached_phrases: int = 0,
                 compiled: bool | None = None) -> None:
        """``max_cached_phrases``: the bound of the scored-option cache (OptionCache; 0: none, for a decoder that
        lives for one split). ``compiled``: search with the compiled search (compiled_search.py; the same graphs),
        True requires it, False keeps the Python search, None (default) uses it where `make install` built it."""
        self.table, self.lm, self.settings = table, lm, settings
        self.max_cached_phrases = max_cached_phrases
        self.compiled = None if compiled is False else CompiledSearch.for_model(lm)
        if compiled and self.compiled is None:
            raise FileNotFoundError(f"the compiled PBMT search {LIBRARY} is not built; run `make install`")
        self.weights = weights
        self.bos = kenlm.State()
        lm.BeginSentenceWrite(self.bos)

    @property
    def weights(self) -> Weights:
        return self._weights

    @weights.setter
    def weights(self, weights: Weights) -> None:
        """New weights re-score the options (the cache of scored options is per weights)."""
        self._weights = weights
        self.options = OptionCache(self.table, self.lm, weights, self.settings.options_per_phrase,
                                   self.max_cached_phrases)

    def decode(self, words: Sequence[str], forced: Mapping[tuple[int, int], tuple[str, ...]] | None = None
               ) -> SearchGraph:
        """The search graph of one sentence; forced: spans whose one translation is given (collect_options)."""
        started = time.perf_counter()
        words = list(words)
        if not words:
            return self._single_path(words, [], np.zeros(len(FEATURES)), {"empty": True})
        opts = collect_options(words, self.options, forced)
        table = span_table(opts.best_by_span(len(words)))
        reordering = WeightedReordering.of(opts.reordering, self.weights)
        if self.compiled is not None and len(words) <= self.compiled.max_words:
            w = self.weights.vector
            found = self.compiled.search(opts, table, float(w[LM]), float(w[DISTORTION]), LN10,
                                         *self._limits(len(words)), reordering)
            if found is None:
                return self._single_path(words, words, passthrough_features(len(words)), {"passthrough": True})
            arrays, orientations, num_states, stats = found
            arcs = list(zip(*(column.tolist() for column in arrays)))
            graph = SearchGraph(source=words, weights=self.weights, targets=opts.targets, spans=opts.spans,
                                static=np.array(opts.static), arcs=arcs, num_states=num_states, arrays=arrays,
                                orientations=orientations, reordering=reordering.table if reordering else None)
        else:
            end, stats = self._search(words, opts, FutureCosts(table), reordering)
            if end is None or not end[ARCS]:
                return self._single_path(words, words, passthrough_features(len(words)), {"passthrough": True})
            graph = self._graph(words, opts, end, reordering)
        graph.stats.update(stats, seconds=time.perf_counter() - started)
        return graph

    def _limits(self, n: int) -> tuple[float, int, int]:
        """The beam in score units (-ln threshold; inf: none), the distortion limit and the stack limit."""
        settings = self.settings
        beam = -math.log(settings.beam_threshold) if settings.beam_threshold > 0 else math.inf
        limit_d = settings.distortion_limit if settings.distortion_limit >= 0 else n
        return beam, limit_d, max(1, settings.stack_limit)

    def _search(self, words: list[str], opts: Options, future: FutureCosts,
                reordering: WeightedReordering | None = None) -> tuple[Node | None, dict]:
        """The reference search (compiled_search.py's C++ does the same, step for step)."""
        n = len(words)
        full = (1 << n) - 1
        w = self.weights.vector
        w_lm, w_d = float(w[LM]) * LN10, float(w[DISTORTION])  # LM scores are summed in log10 below
        beam, limit_d, stack_limit = self._limits(n)
        lm, by_start, targets = self.lm, opts.by_start, opts.targets
        lm_cache: dict = {}  # KenLM state -> {target id: (log10 LM score of the target phrase, state after it)}
        end_cache: dict = {}
        stacks: list[dict] = [dict() for _ in range(n + 1)]
        floor = [-math.inf] * (n + 1)  # stack k rejects totals below this: best - beam, or its limit-th best
        start = [0.0, 0, -1, self.bos, future(0), [], -1, -1]
        stacks[0][None] = start
        future_cache = future.cache
        created = expansions = 0
        for k in range(n):
            nodes = _prune(stacks[k], stack_limit, beam)
            stacks[k] = {}  # expanded nodes live on through their arcs only
            for node in nodes:
                score, coverage, last, state = node[0], node[1], node[2], node[3]
                first, previous = node[FIRST], node[OPTION]
                from_state = lm_cache.get(state)
                if from_state is None:
                    from_state = lm_cache[state] = {}
                first_gap = (~coverage & (coverage + 1)).bit_length() - 1
                lo, hi = max(first_gap, last + 1 - limit_d), min(n - 1, last + 1 + limit_d)
                for i in range(lo, hi + 1):
                    if coverage >> i & 1:
                        continue
                    distortion = -abs(i - last - 1)
                    base = score + w_d * distortion
                    for span in by_start[i]:
                        if coverage & span.mask:
                            break  # longer spans from i overlap too
                        j = span.end
                        if i > first_gap and j + 1 - first_gap > limit_d:
                            break  # could not jump back to the first gap
                        new_coverage = coverage | span.mask
                        complete = new_coverage == full
                        fc = future_cache.get(new_coverage)
                        if fc is None:
                            fc = future(new_coverage)
                        k2 = k + j - i + 1
                        if reordering is not None:
                            orientation = decoding_orientation(first, last, i, j)
                            end_orientation = decoding_orientation(i, j, n, n) if complete else -1  # vs the end
                        else:
                            orientation = end_orientation = -1
                        stack_floor = floor[k2]  # kept equal to floor[k2] below
                        bar = stack_floor - base - fc  # an option must add at least this much
                        if span.best_future < bar:
                            continue
                        stack = stacks[k2]
                        for o, option_future, option_score, target_id in span.entries:
                            if option_future < bar:
                                break  # options are sorted by future score
                            expansions += 1
                            cached = from_state.get(target_id)
                            if cached is None:
                                s_in, lm10 = state, 0.0
                                for word in targets[o]:
                                    s_out = kenlm.State()
                                    lm10 += lm.BaseScore(s_in, word, s_out)
                                    s_in = s_out
                                cached = from_state[target_id] = (lm10, s_in)
                            lm10, out_state = cached
                            if complete:
                                end10 = end_cache.get(out_state)
                                if end10 is None:
                                    end10 = end_cache[out_state] = lm.BaseScore(out_state, "</s>", kenlm.State())
                                lm10 += end10
                                rkey = None
                            elif reordering is None:
                                rkey = (new_coverage, j, out_state)
                            else:
                                rkey = (new_coverage, j, i, reordering.forward_class[o], out_state)
                            new_score = base + option_score + w_lm * lm10
                            if reordering is not None:
                                new_score = new_score + reordering.score(previous, o, orientation, end_orientation)
                            total = new_score + fc
                            if total < stack_floor:
                                continue
                            arc = (node, o, lm10 * LN10, distortion, orientation, end_orientation)
                            existing = stack.get(rkey)
                            if existing is None:
                                created += 1
                                stack[rkey] = [new_score, new_coverage, j, out_state, fc, [arc], i, o]
                                if len(stack) > 2 * stack_limit:
                                    stack_floor = floor[k2] = max(stack_floor,
                                                                  _prune_in_place(stack, stack_limit, beam))
                                    bar = stack_floor - base - fc
                            else:
                                if new_score > existing[0]:
                                    existing[0] = new_score
                                existing[5].append(arc)
                            if total - beam > stack_floor:
                                stack_floor = floor[k2] = total - beam
                                bar = stack_floor - base - fc
        end = stacks[n].get(None)
        if end is not None and beam < math.inf:  # arcs into the end node: the threshold applies to them too
            end_floor = end[SCORE] - beam
            end[ARCS] = [a for a in end[ARCS] if a[0][SCORE] + self._arc_gain(opts, a, reordering) >= end_floor]
        return end, {"hypotheses": created, "expansions": expansions, "options": len(opts)}

    def _arc_gain(self, opts: Options, arc: tuple, reordering: WeightedReordering | None) -> float:
        node, o, lm, distortion, orientation, end_orientation = arc
        w = self.weights.vector
        gain = opts.static_score[o] + float(w[LM]) * lm + float(w[DISTORTION]) * distortion
        if reordering is not None:
            gain = gain + reordering.score(node[OPTION], o, orientation, end_orientation)
        return gain

    def _graph(self, words: list[str], opts: Options, end: Node,
               reordering: WeightedReordering | None = None) -> SearchGraph:
        """The states that reach the end node, numbered in topological order, and their arcs."""
        seen = {id(end): end}
        todo = [end]
        while todo:
            for arc in todo.pop()[ARCS]:
                prev = arc[0]
                if id(prev) not in seen:
                    seen[id(prev)] = prev
                    todo.append(prev)
        del seen[id(end)]
        order = sorted(seen.values(), key=lambda nd: nd[COVERAGE].bit_count())  # arcs add coverage
        order.append(end)
        ids = {id(nd): k for k, nd in enumerate(order)}
        arcs = [(ids[id(a[0])], v, a[1], a[2], a[3]) for v, nd in enumerate(order) for a in nd[ARCS]]
        orientations = None
        if reordering is not None:
            orientations = np.array([(a[4], a[0][OPTION], a[5]) for nd in order for a in nd[ARCS]],
                                    dtype=np.int64).reshape(-1, 3)
        return SearchGraph(source=words, weights=self.weights, targets=opts.targets, spans=opts.spans,
                           static=np.array(opts.static), arcs=arcs, num_states=len(order),
                           orientations=orientations, reordering=reordering.table if reordering else None)

    def _single_path(self, words: list[str], target: list[str], static: np.ndarray, stats: dict) -> SearchGraph:
        """A graph of one arc: the empty sentence, or the whole source passed through."""
        lm10 = self.lm.score(" ".join(target), bos=True, eos=True)
        span = (0, len(words) - 1)
        return SearchGraph(source=words, weights=self.weights, targets=[tuple(target)], spans=[span],
                           static=static[None, :], arcs=[(0, 1, 0, lm10 * LN10, 0)], num_states=2, stats=stats)


def _total(node: Node) -> float:
    return node[SCORE] + node[FUTURE]


def _prune(stack: dict, limit: int, beam: float) -> list[Node]:
    """The nodes of a stack worth expanding, best first."""
    nodes = heapq.nlargest(limit, stack.values(), key=_total)
    if nodes and beam < math.inf:
        floor = _total(nodes[0]) - beam
        nodes = [nd for nd in nodes if _total(nd) >= floor]
    return nodes


def _prune_in_place(stack: dict, limit: int, beam: float) -> float:
    """Keep the stack's best ``limit`` nodes; returns the total score of the worst one kept.

    Scores in a stack only grow, so a later hypothesis below that total could never make the top ``limit``.
    """
    kept = _prune(stack, limit, beam)
    keep = {id(nd) for nd in kept}
    for key in [key for key, nd in stack.items() if id(nd) not in keep]:
        del stack[key]
    return _total(kept[-1]) if len(kept) >= limit else -math.inf
