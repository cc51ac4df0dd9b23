"""The lexicalised reordering model: extraction orientations, estimation, and the search against brute force."""
import dataclasses
import gzip

import numpy as np
import pytest

from pipeline.smt.compiled_search import load_library
from pipeline.smt.decoder import SCORE, Decoder, DecoderSettings
from pipeline.smt.future_cost import FutureCosts, span_table
from pipeline.smt.options import collect_options
from pipeline.smt.features import REORDERING, Weights
from pipeline.smt.lattice import nbest, one_best
from pipeline.smt.phrase_scoring import build_phrase_table
from pipeline.smt.phrase_table import FastPhraseTable
from pipeline.smt.reordering import WeightedReordering, extraction_orientations, orientation_probabilities, priors
from tests.pipeline.smt.conftest import brute_force, random_sentence, random_table, random_weights

TOL = 1e-4  # KenLM sums a sentence's log10 scores in float32
EXACT = dict(stack_limit=10 ** 6, beam_threshold=0.0, options_per_phrase=0)


def test_extraction_orientations_follow_the_word_alignment():
    """A 3-word pair aligned 0-0, 1-2, 2-1 ("das Haus klein" / "the small house")."""
    aligned = {(0, 0), (1, 2), (2, 1)}
    assert extraction_orientations(aligned, 3, 3, (0, 0, 0, 0)) == "md"  # after the start; "klein" is not next
    assert extraction_orientations(aligned, 3, 3, (2, 2, 1, 1)) == "ds"  # "Haus" (1-2) follows swapped
    assert extraction_orientations(aligned, 3, 3, (1, 1, 2, 2)) == "sd"  # after "klein" (2-1); the end is not next
    assert extraction_orientations(aligned, 3, 3, (1, 2, 1, 2)) == "mm"  # "Haus klein" right after "das"
    assert extraction_orientations(aligned, 3, 3, (0, 2, 0, 2)) == "mm"  # the whole sentence


def test_an_orientation_never_seen_keeps_a_probability_above_zero():
    prior = priors(np.array([10, 0, 5, 15, 0, 0]))
    assert (prior > 0).all() and prior[:3].sum() == pytest.approx(1.0)
    assert min(orientation_probabilities(np.array([2, 0, 0, 2, 0, 0]), prior)) > 0


def test_estimation_smooths_by_the_priors():
    counts = np.array([3, 0, 1, 0, 2, 2])
    prior = priors(np.array([59, 9, 29, 49, 24, 24]))  # plus one each: 0.6 0.1 0.3, 0.5 0.25 0.25
    got = orientation_probabilities(counts, prior, smoothing=0.5)
    want = [(3 + 0.5 * 0.6) / 4.5, (0 + 0.5 * 0.1) / 4.5, (1 + 0.5 * 0.3) / 4.5,
            (0 + 0.5 * 0.5) / 4.5, (2 + 0.5 * 0.25) / 4.5, (2 + 0.5 * 0.25) / 4.5]
    assert got == pytest.approx(want, rel=1e-12)
    assert sum(got[:3]) == pytest.approx(1.0) and sum(got[3:]) == pytest.approx(1.0)


def test_a_phrase_table_with_the_reordering_model_counts_every_extracted_orientation(tmp_path):
    """Two sentence pairs; the pair ("a", "x") is extracted twice: "mm" in the first, "ds" in the second."""
    source = [["a", "b"], ["b", "a"]]
    target = [["x", "y"], ["x", "y"]]
    links = [[(0, 0), (1, 1)], [(0, 1), (1, 0)]]
    stats = build_phrase_table(iter(source), iter(target), iter(links), 2, tmp_path / "t.gz", tmp_path / "t.npz",
                               tmp_path, "10M", 1, reordering_path=tmp_path / "r.gz")
    table = FastPhraseTable(tmp_path / "t.npz")
    assert table.reordering and table.scores.shape[1] == 10
    # orientations by hand from the alignments:
    # sentence 1: a-x mm, b-y mm, "a b"-"x y" mm; sentence 2: a-x ds, b-y sd, "b a"-"x y" mm
    assert stats["orientations"] == {"bwd_m": 4, "bwd_s": 1, "bwd_d": 1, "fwd_m": 4, "fwd_s": 1, "fwd_d": 1}
    prior = priors(np.array([4, 1, 1, 4, 1, 1]))
    assert prior == pytest.approx([5 / 9, 2 / 9, 2 / 9, 5 / 9, 2 / 9, 2 / 9])
    targets, scores = table.lookup("a")
    a_x = np.exp(scores[targets.index("x"), 4:].astype(np.float64))
    want = orientation_probabilities(np.array([1, 0, 1, 1, 1, 0]), prior)
    assert a_x == pytest.approx(want, rel=1e-6)
    with gzip.open(tmp_path / "r.gz", "rt") as f:
        lines = f.read().splitlines()
    assert len(lines) == len(table) and any(line.startswith("a ||| x ||| ") for line in lines)
    # without the model: the same four columns as before, no reordering table
    plain = build_phrase_table(iter(source), iter(target), iter(links), 2, tmp_path / "p.gz", tmp_path / "p.npz",
                               tmp_path, "10M", 1)
    assert "orientations" not in plain
    assert np.array_equal(FastPhraseTable(tmp_path / "p.npz").scores, table.scores[:, :4])


@pytest.mark.parametrize("order, seed", [(2, seed) for seed in range(12)] + [(3, seed) for seed in range(5)])
@pytest.mark.parametrize("distortion_limit", [0, 2, -1])
def test_the_search_with_reordering_finds_the_brute_force_best_and_scores_every_path(lm, bigram_lm, order, seed,
                                                                                    distortion_limit):
    """An exact search keeps every derivation as a path: their scores equal the brute-force scorer's, one by one.
    With a bigram LM many hypotheses recombine, which only the reordering state (the last phrase's start and
    forward probabilities) keeps apart; the search's own score of the end equals the best path's."""
    model = lm if order == 3 else bigram_lm
    table, weights = random_table(seed, reordering=True), random_weights(seed, reordering=True)
    words = random_sentence(seed, 5 if order == 2 else 4)
    everything = sorted((score for score, _ in brute_force(table, model, weights, words, distortion_limit)),
                        reverse=True)
    decoder = Decoder(table, model, weights, DecoderSettings(distortion_limit=distortion_limit, **EXACT),
                      compiled=False)
    graph = decoder.decode(words)
    assert graph.best_score == pytest.approx(everything[0], abs=TOL)
    opts = collect_options(words, decoder.options)
    end, _ = decoder._search(words, opts, FutureCosts(span_table(opts.best_by_span(len(words)))),
                             WeightedReordering.of(opts.reordering, weights))
    assert end[SCORE] == pytest.approx(graph.best_score, abs=TOL)
    paths = nbest(graph, len(everything) + 5)
    assert len(paths) == len(everything)
    assert [h.score for h in paths] == pytest.approx(everything, abs=TOL)
    for h in paths:  # a path's features give its score
        assert weights.score(h.features) == pytest.approx(h.score, abs=TOL)
    assert (one_best(graph).features[REORDERING] != 0).any()


def test_reordering_changes_the_search_only_through_its_features(lm):
    """With all six weights 0 the model keeps the distance-based decoder's 1-best and score."""
    table = random_table(3, reordering=True)
    plain_table = dataclasses.replace(table, scores=table.scores[:, :4])
    weights = random_weights(3)  # reordering weights 0
    words = random_sentence(3, 6)
    settings = DecoderSettings(distortion_limit=3, **EXACT)
    with_model = Decoder(table, lm, weights, settings, compiled=False).decode(words)
    without = Decoder(plain_table, lm, weights, settings, compiled=False).decode(words)
    assert one_best(with_model).words == one_best(without).words
    assert with_model.best_score == pytest.approx(without.best_score, abs=1e-9)
    assert with_model.num_states >= without.num_states  # the reordering state splits nodes


def test_weights_files_and_nbest_lines_without_the_model_read_it_as_zero():
    from pipeline.smt.features import format_moses_features, parse_moses_features
    plain = Weights.default()
    assert (plain.vector[REORDERING] == 0).all()
    assert (Weights.default(reordering=True).vector[REORDERING] == 0.3).all()
    assert not any(k.startswith("lr_") for k in plain.to_dict())  # as weights files were before the model
    assert np.array_equal(Weights.from_dict(plain.to_dict()).vector, plain.vector)
    assert Weights.default(reordering=True).to_dict()["lr_fwd_d"] == 0.3
    values = np.arange(15, dtype=float) - 3.0
    assert "LexicalReordering0=" in format_moses_features(values)
    assert np.array_equal(parse_moses_features(format_moses_features(values)), values)
    values[REORDERING] = 0.0
    assert "LexicalReordering0=" not in format_moses_features(values)
    assert np.array_equal(parse_moses_features(format_moses_features(values)), values)


def test_hypotheses_that_differ_only_in_the_last_phrase_start_stay_apart(bigram_lm):
    """"s1 s2" as one phrase or as two end in the same bigram state with the same forward probabilities; a next
    phrase on s0 is a swap after the first and discontinuous after the second, so they must not recombine."""
    from pipeline.smt.phrase_table import PhraseTable

    forward = [0.5, 0.2, 0.3]
    entries = {"s0": [("t0", [0.5] * 4 + [0.6, 0.1, 0.3] + forward)],
               "s1": [("t1", [0.5] * 4 + [0.2, 0.5, 0.3] + forward)],
               "s2": [("t2", [0.5] * 4 + [0.3, 0.3, 0.4] + forward)],
               "s1 s2": [("t2", [0.5] * 4 + [0.1, 0.2, 0.7] + forward)]}
    table = PhraseTable.from_entries(entries, max_length=2)
    weights = random_weights(0, reordering=True)
    words = ["s0", "s1", "s2"]
    everything = sorted((score for score, _ in brute_force(table, bigram_lm, weights, words, -1)), reverse=True)
    for compiled in (False, True) if load_library() is not None else (False,):  # `make install` builds it
        graph = Decoder(table, bigram_lm, weights, DecoderSettings(distortion_limit=-1, **EXACT),
                        compiled=compiled).decode(words)
        assert [h.score for h in nbest(graph, 100)] == pytest.approx(everything, abs=TOL)
