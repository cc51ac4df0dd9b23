"""Deterministic acceptors over units (lattices/acceptor.py): from lattices and strings, against enumeration."""
from __future__ import annotations

import itertools
import random

import pytest

from lattices.acceptor import Acceptor
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
