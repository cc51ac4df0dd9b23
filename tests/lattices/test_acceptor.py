"""Deterministic acceptors over units (lattices/acceptor.py): from lattices and strings, against enumeration."""
from __future__ import annotations

import itertools
import math
import random

import pytest

from lattices.acceptor import Acceptor, acceptor_of_lattice, load_acceptors, save_acceptors
from lattices.lattice import Lattice, from_paths

BOS, EOS = 1, 2


def test_a_lattice_becomes_an_acceptor_of_its_strings_without_bos_and_eos():
    strings = [(BOS, 5, 6, EOS), (BOS, 5, EOS), (BOS, 7, 6, 6, EOS)]
    lattice = from_paths([(s, float(k)) for k, s in enumerate(strings)])
    acceptor = Acceptor.from_lattice(lattice, BOS, EOS)
    inner = {s[1:-1] for s in strings}
    for length in range(5):
        for tokens in itertools.product((5, 6, 7, EOS), repeat=length):
            assert acceptor.accepts(tokens) == (tokens in inner), tokens
    assert acceptor.shortest() == 1 and EOS not in acceptor.arc_label.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_fewest_tokens_to_a_final_state_equal_enumeration(seed):
    rng = random.Random(seed)
    strings = {tuple(rng.randint(3, 6) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 8))}
    acceptor = Acceptor.from_strings(sorted(strings))
    assert acceptor.shortest() == min(map(len, strings))
    for string in strings:  # along every accepted string, to_final is the fewest tokens of any completion
        q = 0
        for k, x in enumerate(string):
            completions = [len(s) - k for s in strings if s[:k] == string[:k]]
            assert acceptor.to_final[q] == min(completions)
            q = acceptor.next_state(q, x)
        assert acceptor.final[q] and acceptor.to_final[q] == 0


def test_nothing_to_accept_and_bad_acceptors():
    assert Acceptor.from_lattice(Lattice.empty(), BOS, EOS).shortest() is None
    assert Acceptor.from_strings([]).accepts(()) is False
    assert Acceptor.from_strings([()]).accepts(()) is True
    with pytest.raises(ValueError, match="not deterministic: state 0 has two arcs labelled 5"):
        Acceptor.build(3, [(0, 5, 1), (0, 5, 2)], [1, 2])
    with pytest.raises(ValueError, match="cycle"):
        Acceptor.build(2, [(0, 5, 1), (1, 6, 0)], [1])
    epsilon = Lattice.from_arcs(2, 0, [(0, 1, 0, 0.0)], {1: 0.0})
    with pytest.raises(ValueError, match="epsilon"):
        Acceptor.from_lattice(epsilon, BOS, EOS)


@pytest.mark.parametrize("nbest, engine", [(0, "openfst"), (0, "exact"), (2, "openfst")])
def test_the_acceptor_of_a_lattice_accepts_the_strings_of_its_evidence_space(nbest, engine):
    # two derivations of (5, 6): determinisation keeps one string; costs make (7,) the worst
    arcs = [(0, 1, BOS, 0.0), (1, 2, 5, 0.5), (1, 3, 5, 0.7), (2, 4, 6, 0.0), (3, 4, 6, 0.0), (1, 5, 7, 3.0),
            (5, 4, 6, 0.0), (1, 4, 8, 1.0), (4, 6, EOS, 0.0)]
    lattice = Lattice.from_arcs(7, 0, arcs, {6: 0.0})
    acceptor = acceptor_of_lattice(lattice, BOS, EOS, nbest=nbest, engine=engine)
    everything = {(5, 6), (7, 6), (8,)}
    expected = everything if nbest == 0 else {(5, 6), (8,)}  # the two best strings
    accepted = {s for n in range(4) for s in itertools.product((5, 6, 7, 8), repeat=n) if acceptor.accepts(s)}
    assert accepted == expected


def test_acceptors_round_trip_through_a_shard(tmp_path):
    rng = random.Random(3)
    acceptors = {k: Acceptor.from_strings(sorted({tuple(rng.randint(3, 6) for _ in range(rng.randint(0, 4)))
                                                  for _ in range(5)})) for k in (0, 3, 4)}
    acceptors[7] = Acceptor.empty()
    save_acceptors(tmp_path / "a.npz", acceptors)
    loaded = load_acceptors([tmp_path / "a.npz"])
    assert sorted(loaded) == [0, 3, 4, 7]
    for k, acceptor in acceptors.items():
        for field in ("arc_src", "arc_label", "arc_dst", "final", "to_final"):
            assert (getattr(loaded[k], field) == getattr(acceptor, field)).all()
    assert loaded[7].shortest() is None


def lattice_with_bos_eos(rng: random.Random) -> tuple[Lattice, dict[tuple[int, ...], float]]:
    """<s> (random paths over tokens 5-8, some strings with several derivations) </s>, and each string's best cost."""
    arcs, paths, n = [(0, 1, BOS, 0.25)], {}, 2
    for _ in range(rng.randint(2, 6)):
        string = tuple(rng.randint(5, 8) for _ in range(rng.randint(1, 4)))
        costs = [round(rng.uniform(0.0, 3.0), 3) for _ in string] + [round(rng.uniform(0.0, 1.0), 3)]
        prev = 1
        for x, c in zip(string, costs):
            arcs.append((prev, n, x, c))
            prev, n = n, n + 1
        arcs.append((prev, n, EOS, costs[-1]))
        paths[string] = min(paths.get(string, math.inf), 0.25 + sum(costs))
        n += 1
    return Lattice.from_arcs(n, 0, arcs, {q: 0.0 for _, q, x, _ in arcs if x == EOS}), paths


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("engine", ["exact", "openfst"])
def test_pushed_costs_give_each_string_and_prefix_its_loss_against_the_best_string(seed, engine):
    rng = random.Random(seed)
    lattice, costs = lattice_with_bos_eos(rng)
    acceptor = acceptor_of_lattice(lattice, BOS, EOS, engine=engine)
    best = min(costs.values())
    tol = 1e-4 if engine == "openfst" else 1e-9  # OpenFst keeps float32 costs
    for string, cost in costs.items():  # a string: its best derivation's cost over the best string's
        assert acceptor.cost(string) == pytest.approx(cost - best, abs=tol)
        q, prefix_cost = 0, 0.0
        for k in range(len(string)):  # a prefix: the loss of its best completion
            completions = [c for s, c in costs.items() if s[:k] == string[:k]]
            assert prefix_cost == pytest.approx(min(completions) - best, abs=tol)
            arc = acceptor._arc(q, string[k])
            q, prefix_cost = int(acceptor.arc_dst[arc]), prefix_cost + float(acceptor.arc_cost[arc])
    assert (acceptor.arc_cost >= 0).all() and (acceptor.final_cost >= 0).all()
    assert acceptor.cost((9,)) == math.inf


def test_costs_round_trip_through_a_shard_and_strings_cost_nothing(tmp_path):
    lattice, _ = lattice_with_bos_eos(random.Random(1))
    acceptors = {0: acceptor_of_lattice(lattice, BOS, EOS, engine="exact"), 1: Acceptor.from_strings([(5, 6)])}
    save_acceptors(tmp_path / "a.npz", acceptors)
    loaded = load_acceptors([tmp_path / "a.npz"])
    for k, acceptor in acceptors.items():
        assert (loaded[k].arc_cost == acceptor.arc_cost).all()
        assert (loaded[k].final_cost == acceptor.final_cost).all()
    assert loaded[1].cost((5, 6)) == 0.0
