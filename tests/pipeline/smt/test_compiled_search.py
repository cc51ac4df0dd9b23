"""The compiled search (pbmt_search.cpp) against the Python reference search: the same graphs, bit for bit."""
from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

from pipeline.smt.compiled_search import CompiledSearch, load_library
from pipeline.smt.decoder import Decoder, DecoderSettings
from pipeline.smt.features import Weights
from tests.pipeline.smt.conftest import SOURCE_VOCAB, random_sentence, random_table, random_weights

pytestmark = pytest.mark.skipif(load_library() is None, reason="`make install` builds the compiled search")


def graphs(table, lm, weights, settings, words, forced=None):
    """The Python and the compiled search graph of one sentence."""
    python = Decoder(table, lm, weights, settings, compiled=False).decode(words, forced)
    compiled = Decoder(table, lm, weights, settings, compiled=True).decode(words, forced)
    return python, compiled


def assert_same(python, compiled) -> None:
    assert compiled.num_states == python.num_states
    assert compiled.arcs == python.arcs  # states, options, distortions and LM scores, to the bit
    if python.orientations is None:
        assert compiled.orientations is None
    else:
        assert np.array_equal(compiled.orientations, python.orientations)
        assert np.array_equal(compiled.arc_scores, python.arc_scores)
    assert compiled.targets == python.targets and compiled.spans == python.spans
    assert compiled.best_score == python.best_score
    drop = {"seconds"}
    assert {k: v for k, v in compiled.stats.items() if k not in drop} == \
        {k: v for k, v in python.stats.items() if k not in drop}


@pytest.mark.parametrize("reordering", [False, True])
@pytest.mark.parametrize("seed", range(24))
def test_the_compiled_search_gives_the_python_search_graph(lm, seed, reordering):
    """Random tables, weights, sentences and limits: stacks that prune in place, beams, distortion limits; with and
    without the lexicalised reordering model."""
    rng = random.Random(seed)
    settings = DecoderSettings(stack_limit=rng.choice([1, 2, 3, 5, 40]),
                               beam_threshold=rng.choice([0.0, 1e-1, 1e-3, 1e-5]),
                               distortion_limit=rng.choice([-1, 0, 2, 3, 6]),
                               options_per_phrase=rng.choice([0, 1, 2, 20]))
    words = random_sentence(seed, rng.randint(1, 12))
    table, weights = random_table(seed, reordering=reordering), random_weights(seed, reordering=reordering)
    assert_same(*graphs(table, lm, weights, settings, words))


@pytest.mark.parametrize("reordering", [False, True])
@pytest.mark.parametrize("length", [64, 65, 130, 300])
def test_long_sentences_use_wider_coverage_sets(lm, length, reordering):
    """Coverage sets of 1, 2, 4 and 8 machine words."""
    settings = DecoderSettings(stack_limit=3, beam_threshold=1e-3, distortion_limit=4)
    assert_same(*graphs(random_table(length, reordering=reordering), lm, random_weights(length, reordering), settings,
                        random_sentence(length, length)))


@pytest.mark.parametrize("reordering", [False, True])
def test_unknown_words_and_forced_spans(lm, reordering):
    table, weights = random_table(7, reordering=reordering), random_weights(7, reordering=reordering)
    words = random.Random(7).sample(SOURCE_VOCAB, 5) + ["Zürich", "s1"]
    settings = DecoderSettings(stack_limit=5, distortion_limit=3)
    assert_same(*graphs(table, lm, weights, settings, words, forced={(1, 2): ("forced", "term")}))


def test_a_long_lived_decoder_searches_as_fresh_ones(lm):
    """The option cache and the search's own caches carry nothing from one sentence to the next."""
    table, weights = random_table(3), Weights.default()
    settings = DecoderSettings(stack_limit=4, distortion_limit=3)
    decoder = Decoder(table, lm, weights, settings, compiled=True)
    for seed in range(5):
        words = random_sentence(seed, 8)
        python = Decoder(table, lm, weights, settings, compiled=False).decode(words)
        assert_same(python, decoder.decode(words))


def test_a_pickled_search_loads_its_model_again(lm):
    search = CompiledSearch.for_model(lm)
    copy = pickle.loads(pickle.dumps(search))
    assert copy.path == search.path and copy._model.value != search._model.value


def test_a_model_it_cannot_read_is_an_error_that_names_it(tmp_path):
    bad = tmp_path / "broken.bin"
    bad.write_bytes(b"not a language model\n")
    with pytest.raises(OSError, match="broken.bin"):
        CompiledSearch(str(bad))


def test_compiled_true_without_the_library_is_an_error(lm, monkeypatch):
    monkeypatch.setattr(CompiledSearch, "for_model", classmethod(lambda cls, model: None))
    with pytest.raises(FileNotFoundError, match="make install"):
        Decoder(random_table(0), lm, Weights.default(), compiled=True)
    assert Decoder(random_table(0), lm, Weights.default()).compiled is None  # the default falls back
