import numpy as np
import pytest

from pipeline.errors import ConfigError
from pipeline.smt.features import DEFAULTS, FEATURES, Weights, format_moses_features, parse_moses_features
from pipeline.smt.weights import load_weights, save_weights


def test_defaults_are_moses_defaults():
    w = Weights.default()
    assert w["lm"] == 0.5 and w["p_ef"] == 0.2 and w["word_penalty"] == -1 and w["distortion"] == 0.3
    assert set(DEFAULTS) == set(FEATURES)
    with pytest.raises(ValueError, match="missing"):
        Weights.from_dict({"lm": 1.0})
    with pytest.raises(ValueError):
        Weights(np.zeros(3))


def test_moses_feature_strings_round_trip():
    values = np.arange(len(FEATURES), dtype=float) - 3.25
    text = format_moses_features(values)
    assert text.startswith("LM0= -3.25 Distortion0= ") and "TranslationModel0= -2.25 -1.25 -0.25 0.75" in text
    np.testing.assert_allclose(parse_moses_features(text), values)
    with pytest.raises(ValueError):
        parse_moses_features("LM0= 1")


def test_weights_file_keeps_the_signature(tmp_path):
    w = Weights.default()
    sig = save_weights(tmp_path / "w.json", w, {"method": "mert", "iterations": 3}, {"bleu": [1, 2]})
    loaded = load_weights(tmp_path / "w.json")
    assert sig == "iterations:3|method:mert" == loaded.signature
    assert loaded.weights.to_dict() == w.to_dict() and loaded.info == {"bleu": [1, 2]}
    (tmp_path / "bad.json").write_text('{"weights": {"lm": 1}}')
    with pytest.raises(ConfigError, match="bad.json"):
        load_weights(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="no such"):
        load_weights(tmp_path / "none.json")
