"""The compiled graph kernels against the Python loops they replaced: the same scores, back pointers and n-best
derivations, ties included."""
from __future__ import annotations

import heapq
import itertools

import numpy as np
import pytest

from pipeline.smt.decoder import Decoder, DecoderSettings
from pipeline.smt.graph_kernels import best_prefix, incoming_arcs, nbest_chains
from pipeline.smt.lattice import nbest, paths, to_fst
from tests.pipeline.smt.conftest import random_sentence, random_table, random_weights


def random_dag(seed: int, states: int = 12, ties: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arcs u -> v (u < v) grouped by v in increasing order, every state reachable from 0 and reaching the end;
    with ties, scores from a small set so that many paths score the same."""
    rng = np.random.default_rng(seed)
    u, v = [], []
    for target in range(1, states):
        sources = {int(rng.integers(0, target))} | {int(s) for s in rng.integers(0, target, rng.integers(0, 4))}
        for source in sorted(sources, key=lambda _: rng.random()):
            u.append(source)
            v.append(target)
    for source in range(states - 1):  # every state reaches the end
        if source not in u:
            u.append(source)
            v.append(states - 1)
    order = np.argsort(v, kind="stable")
    scores = rng.choice([-1.0, -0.5, -2.0], len(u)) if ties else rng.normal(-1.0, 1.0, len(u))
    return np.array(u)[order], np.array(v)[order], scores[order]


def python_best_prefix(u, v, scores, num_states):
    best, back = [-np.inf] * num_states, [-1] * num_states
    best[0] = 0.0
    for a in range(len(u)):
        s = best[u[a]] + scores[a]
        if s > best[v[a]]:
            best[v[a]], back[v[a]] = s, a
    return best, back


def python_nbest(u, v, scores, prefix, end, n, max_pops=100000):
    """The A* loop of lattice.nbest before it was compiled: (score, arcs start to end) of the n best."""
    incoming = [[] for _ in range(len(prefix))]
    for a in range(len(u)):
        incoming[v[a]].append(a)
    tie = itertools.count()
    heap = [(-prefix[end], next(tie), end, 0.0, ())]
    out, pops = [], 0
    while heap and len(out) < n and pops < max_pops:
        neg, _, state, suffix, chain = heapq.heappop(heap)
        pops += 1
        if state == 0:
            path = []
            while chain:
                a, chain = chain
                path.append(a)
            out.append((-neg, path))
            continue
        for a in incoming[state]:
            s = suffix + scores[a]
            heapq.heappush(heap, (-(prefix[u[a]] + s), next(tie), u[a], s, (a, chain)))
    return out


def compiled_nbest(u, v, scores, prefix, end, n, max_pops=100000):
    begin, incoming = incoming_arcs(v, len(prefix))
    best, heads, chain_arc, chain_link = nbest_chains(u, scores, np.asarray(prefix), begin, incoming, end, n,
                                                      max_pops)
    out = []
    for score, head in zip(best.tolist(), heads.tolist()):
        path = []
        while head >= 0:
            path.append(int(chain_arc[head]))
            head = int(chain_link[head])
        out.append((score, path))
    return out


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("ties", [False, True])
def test_best_prefix_and_nbest_equal_the_python_loops(seed, ties):
    u, v, scores = random_dag(seed, states=6 + seed % 10, ties=ties)
    num_states = int(v.max()) + 1
    best, back = best_prefix(u, v, scores, num_states)
    expected_best, expected_back = python_best_prefix(u.tolist(), v.tolist(), scores.tolist(), num_states)
    assert best.tolist() == expected_best and back.tolist() == expected_back
    for n, max_pops in [(1, 100000), (7, 100000), (500, 100000), (50, 9)]:
        expected = python_nbest(u.tolist(), v.tolist(), scores.tolist(), expected_best, num_states - 1, n, max_pops)
        assert compiled_nbest(u, v, scores, best, num_states - 1, n, max_pops) == expected


def test_the_nbest_of_a_search_graph_is_every_path_in_order(lm):
    """All paths of a small lattice, best first: the scores of the lattice's own paths, each once."""
    graph = Decoder(random_table(5), lm, random_weights(5), DecoderSettings(stack_limit=4, distortion_limit=2)
                    ).decode(random_sentence(5, 4))
    every = sorted((-cost for _, cost in paths(to_fst(graph))), reverse=True)
    hyps = nbest(graph, 10 ** 6)
    assert [h.score for h in hyps] == pytest.approx(every, abs=1e-6)
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
