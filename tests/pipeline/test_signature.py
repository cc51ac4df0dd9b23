import json

from pipeline.signature import artifact_param, format_signature, param_hash


def write_signature(folder, **params):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "signature.json").write_text(json.dumps({"signature": format_signature(params), "params": params}))


def test_artifact_param_reads_the_nearest_signature_above_a_file(tmp_path):
    artifact = tmp_path / "work" / "medium" / "ger-eng" / "nmt" / "transformer-seed1-abc"
    write_signature(artifact, profile="medium", stage="nmt")
    write_signature(tmp_path / "work", profile="outer")
    model = artifact / "checkpoints" / "checkpoint-00000100.pt"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"weights")
    assert artifact_param(model, "profile") == ("medium", artifact / "signature.json")
    assert artifact_param(artifact, "stage") == ("nmt", artifact / "signature.json")
    assert artifact_param(model, "seed") is None  # the nearest signature lacks the key: no guess from further up


def test_artifact_param_is_none_outside_artifacts(tmp_path):
    loose = tmp_path / "a" / "b" / "model.pt"
    loose.parent.mkdir(parents=True)
    loose.write_bytes(b"weights")
    assert artifact_param(loose, "profile") is None
    (tmp_path / "a" / "signature.json").write_text("{not json")
    assert artifact_param(loose, "profile") is None


def test_param_hash_is_stable_and_order_free():
    assert param_hash({"a": 1, "b": [1, 2]}) == param_hash({"b": [1, 2], "a": 1})
    assert param_hash({"a": 1}) != param_hash({"a": 2})
