"""Terminology constraints (pipeline/decode/terms.py) and dynamic beam allocation (pipeline/decode/allocation.py)."""
from __future__ import annotations

import random

import pytest
import torch

from pipeline.decode import SearchSettings, decode_sources
from pipeline.decode.allocation import Allocation, allocated_top_candidates
from pipeline.decode.hooks import chain_factories
from pipeline.decode.lmbr_hook import lmbr_hook_factory
from pipeline.decode.terms import TermHook, _TermTables, contains, term_automaton, term_hook_factory
from pipeline.decode.topk import TopCandidates
from tests.pipeline.decode.helpers import EOS, PrefixModel, exhaustive
from tests.pipeline.decode.test_beam_search import random_sources
from tests.pipeline.decode.test_lmbr_hook import VOCAB as LMBR_VOCAB, Store, matrices_for, random_lattice

torch.set_num_threads(1)


def longest_prefix_suffix(stream: list[int], term: tuple[int, ...], final) -> int:
    """Brute force: the longest prefix of term that ends the stream and starts at a word boundary (len(term) once
    the term has occurred at one)."""
    def boundary(start: int) -> bool:
        return start == 0 or final(stream[start - 1])

    if any(tuple(stream[i:i + len(term)]) == term and boundary(i) for i in range(len(stream))):
        return len(term)
    return max(k for k in range(len(term))
               if k == 0 or (tuple(stream[len(stream) - k:]) == term[:k] and boundary(len(stream) - k)))


@pytest.mark.parametrize("seed", range(40))
def test_the_term_automaton_tracks_the_longest_matched_prefix_at_a_word_boundary(seed):
    rng = random.Random(seed)
    final = (lambda token: token != 4) if seed % 2 else (lambda token: True)  # token 4: a subword inside a word
    term = tuple(rng.choice([3, 4]) for _ in range(rng.randint(1, 5)))
    delta = term_automaton(term, final)
    state, stream, after_boundary = 0, [], True
    for _ in range(40):
        token = rng.choice([3, 4, 5])
        stream.append(token)
        if state < len(term):
            state = delta[state][term.index(token)] if token in term and (state or after_boundary) else 0
        after_boundary = final(token)
        assert state == longest_prefix_suffix(stream, term, final), (term, stream)
        assert (state == len(term)) == contains(stream, term, final)


def test_contains_finds_contiguous_occurrences_at_word_boundaries_only():
    assert contains([5, 3, 4, 6], (3, 4)) and contains([3], ()) and not contains([3, 5, 4], (3, 4))
    assert not contains([5, 3, 4], (3, 4), final=lambda token: token != 5)  # 5 is a word's first part
    assert contains([5, 3, 4], (5, 3), final=lambda token: token != 5)


def test_a_term_never_starts_inside_a_word():
    """Token 3 ends no word (a subword with the BPE separator): the term (4,) must follow another token or BOS."""
    vocab = 6
    model = PrefixModel(vocab=vocab, seed=3)
    sources = random_sources(8, seed=2, vocab=9)
    final = torch.tensor([True, True, True, False, True, True])
    settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=6)

    def at_a_boundary(tokens) -> bool:
        return any(t == 4 and (i == 0 or tokens[i - 1] != 3) for i, t in enumerate(tokens))

    got = decode_sources(model, sources, settings, hook_factory=term_hook_factory([[(4,)]] * 8, EOS, final))
    assert all(at_a_boundary(hyps[0].tokens) for hyps in got)
    anywhere = decode_sources(model, sources, settings, hook_factory=term_hook_factory([[(4,)]] * 8, EOS))
    assert not all(at_a_boundary(hyps[0].tokens) for hyps in anywhere)  # the test can fail


def satisfied(tokens, terms) -> bool:
    return all(contains(tokens, term) for term in terms)


def test_term_tables_select_and_concatenate_as_if_built_afresh():
    """A finished sentence or a refill moves the tables by index_select and cat; the automata are built once."""
    final = torch.tensor([True, False, True, True, False, True, True, True, True, True, True])
    first = _TermTables.build([[(1, 2, 1)], [(4,), (5, 6, 5, 6)], []], final, torch.device("cpu"))
    second = _TermTables.build([[(7, 8), (1,), (2, 3)]], final, torch.device("cpu"))

    def same(got: _TermTables, terms) -> None:
        fresh = _TermTables.build(terms, final, torch.device("cpu"))
        k, m = fresh.tokens.shape[1:]
        assert got.terms == fresh.terms and torch.equal(got.lengths, fresh.lengths)
        assert torch.equal(got.tokens[:, :, :m], fresh.tokens) and (got.tokens[:, :, m:] == -1).all()
        assert torch.equal(got.delta[:, :, :m, :m], fresh.delta) and torch.equal(got.levels, fresh.levels)

    same(first.concat(second), first.terms + second.terms)
    same(second.concat(first), second.terms + first.terms)
    for keep in ([2, 0], [1], [2], [3, 1, 0]):
        both = first.concat(second)
        same(both.select(torch.tensor(keep)), [both.terms[i] for i in keep])


@pytest.mark.parametrize("seed", range(3))
def test_with_a_beam_as_wide_as_the_search_space_the_best_is_the_exhaustive_best_with_every_term(seed):
    vocab, limit = 6, 4
    model = PrefixModel(vocab=vocab, seed=seed)
    rng = random.Random(seed)
    sources = random_sources(3, seed, vocab=9)
    terms = [[tuple(rng.randint(3, 5) for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(0, 2))]
             for _ in sources]
    wide = vocab ** limit
    settings = SearchSettings(beam=wide, nbest=3, max_length_a=0.0, max_length_b=limit)
    factory = term_hook_factory(terms, EOS)
    got = decode_sources(model, sources, settings, batch_sentences=2, hook_factory=factory)
    for source, wanted, hyps in zip(sources, terms, got):
        truth = [(s, p) for s, p in exhaustive(model.scorer(source), vocab, limit) if satisfied(p, wanted)][:3]
        assert [h.tokens for h in hyps] == [p for _, p in truth]
        assert [h.score for h in hyps] == pytest.approx([s for s, _ in truth], abs=1e-4)


class _NoAllocation(TermHook):
    def allocation(self):
        return None


def unlikely_terms(model: PrefixModel, sources, rng: random.Random, count: int = 2) -> list[list[tuple[int, ...]]]:
    """Terms of 2-3 tokens drawn from the tokens the model likes least."""
    low = model.table.mean(dim=0).argsort()[:4].tolist()
    low = [t for t in low if t > EOS][:3]
    return [[tuple(rng.choice(low) for _ in range(rng.randint(2, 3))) for _ in range(count)] for _ in sources]


def test_dynamic_beam_allocation_meets_the_terms_that_a_plain_top_b_loses():
    vocab = 12
    model = PrefixModel(vocab=vocab, seed=7, scale=4.0)
    rng = random.Random(3)
    sources = random_sources(24, seed=5, vocab=9, longest=6)
    terms = unlikely_terms(model, sources, rng)
    settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=10)

    def met(hook_class) -> int:
        def factory(indices, device):
            return hook_class([terms[i] for i in indices], EOS, device)
        got = decode_sources(model, sources, settings, batch_sentences=8, hook_factory=factory)
        return sum(bool(hyps) and satisfied(hyps[0].tokens, t) for hyps, t in zip(got, terms))

    assert met(TermHook) == len(sources)
    assert met(_NoAllocation) < len(sources)  # the test would not tell the two apart otherwise


def test_term_outputs_are_the_same_alone_in_batches_sorted_and_streaming():
    model = PrefixModel(vocab=9, seed=4, eos_bias=-1.0)
    rng = random.Random(2)
    sources = random_sources(14, seed=6, vocab=9, longest=7)
    terms = [[tuple(rng.randint(3, 8) for _ in range(rng.randint(1, 3))) for _ in range(k % 3)] for k in range(14)]
    settings = SearchSettings(beam=3, nbest=2, max_length_a=1.0, max_length_b=8)
    factory = term_hook_factory(terms, EOS)
    runs = [decode_sources(model, sources, settings, batch_sentences=b, sort=s, hook_factory=factory)
            for b in (1, 5, 14) for s in (True, False)]
    runs += [decode_sources(model, sources, settings, batch_sentences=4, sort=s, hook_factory=factory,
                            streaming=True, refill=0.5) for s in (True, False)]
    tokens = [[[h.tokens for h in hyps] for hyps in run] for run in runs]
    assert all(t == tokens[0] for t in tokens)
    assert all(satisfied(hyps[0].tokens, t) for hyps, t in zip(runs[0], terms))


def test_terms_compose_with_lmbr_and_every_term_appears():
    vocab = LMBR_VOCAB
    model = PrefixModel(vocab=vocab, seed=2)
    rng = random.Random(4)
    sources = random_sources(6, seed=3, vocab=9)
    store = Store(matrices_for([random_lattice(random.Random(k)) for k in range(len(sources))]))
    terms = [[tuple(rng.randint(3, vocab - 1) for _ in range(2))] for _ in sources]
    settings = SearchSettings(beam=3, max_length_a=1.0, max_length_b=8, weight=0.5)
    factory = chain_factories([lmbr_hook_factory(store, 1, vocab_size=vocab, gains="bounded"),
                               term_hook_factory(terms, EOS)])
    got = decode_sources(model, sources, settings, batch_sentences=3, hook_factory=factory)
    assert all(satisfied(hyps[0].tokens, t) for hyps, t in zip(got, terms))


def test_a_sentence_whose_terms_cannot_fit_its_limit_gets_no_output_and_the_others_are_unaffected():
    model = PrefixModel(vocab=6, seed=1)
    sources = [[4, EOS], [5, 3, EOS]]
    settings = SearchSettings(beam=2, max_length_a=0.0, max_length_b=2)
    alone = decode_sources(model, sources[1:], settings)
    got = decode_sources(model, sources, settings, hook_factory=term_hook_factory([[(3, 4, 5)], []], EOS))
    assert got[0] == [] and [h.tokens for h in got[1]] == [h.tokens for h in alone[0]]


def test_the_allocation_gives_each_bank_its_quota_then_the_rest_round_robin():
    # one sentence, beam 4, vocabulary 10, two rows (slots 0 and 1); banks 0..3 (levels 3): quota 1 each
    vocab, beam = 10, 4
    scores = torch.tensor([[-1.0, -1.1, -1.2, -1.3]])
    columns = torch.tensor([[1, 2, 11, 12]])                   # the plain top-4: tokens 1, 2 of row 0; 1, 2 of row 1
    top = TopCandidates(scores, columns // vocab, columns % vocab)
    extra_scores = torch.tensor([[-5.0, float("-inf"), -7.0, float("-inf"), float("-inf"), float("-inf"),
                                  float("-inf"), float("-inf")]])
    extra_columns = torch.tensor([[7, 0, 17, 0, 0, 0, 0, 0]])  # token 7 of row 0 (bank 1) and of row 1 (bank 3)
    slot_row = torch.tensor([[0, 1, -1, -1]])
    progress = {(0, 7): 1, (1, 7): 3}
    allocation = Allocation(torch.tensor([[7, -1], [7, -1]]),
                            lambda rows, tokens: torch.tensor([progress.get((r, t), 0) for r, t in
                                                               zip(rows.tolist(), tokens.tolist())]),
                            torch.tensor([3]))
    got = allocated_top_candidates(top, columns, (extra_scores, extra_columns), slot_row, beam, vocab, allocation)
    # bank 0: the best plain candidate; banks 1 and 3: the two token-7 rows; bank 2 is empty, and its slot goes
    # round robin from the highest bank: banks 3 and 1 have no other candidate, so the next best of bank 0
    assert (got.origin * vocab + got.tokens).tolist() == [[1, 2, 7, 17]]
    assert got.scores[0].tolist() == pytest.approx([-1.0, -1.1, -5.0, -7.0])


def test_slots_left_over_go_round_robin_from_the_highest_bank():
    # beam 3, levels 4 (5 banks: quota 1 for banks 2, 3, 4, all empty); banks 0 and 1 take turns, bank 1 first
    vocab, beam = 10, 3
    top = TopCandidates(torch.tensor([[-1.0, -1.1, -1.2]]), torch.tensor([[0, 0, 0]]), torch.tensor([[1, 2, 3]]))
    extra = torch.tensor([[-4.0, -6.0, float("-inf")]]), torch.tensor([[14, 15, 0]])  # row 1's tokens 4, 5: bank 1
    allocation = Allocation(torch.tensor([[-1], [4]]), lambda rows, tokens: (rows == 1).long(), torch.tensor([4]))
    got = allocated_top_candidates(top, torch.tensor([[1, 2, 3]]), extra, torch.tensor([[0, 1, -1]]), beam, vocab,
                                   allocation)
    assert (got.origin * vocab + got.tokens).tolist() == [[1, 14, 15]]  # turns: bank 1, bank 0, bank 1; best first
