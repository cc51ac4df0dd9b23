"""Stage versions: a change of a stage's code must come with a decision about its version (tasks/versions.py)."""
from __future__ import annotations

import json

from pipeline.code_fingerprint import compiled_sources, fingerprint, module_closure
from tasks.data import LearnBPE
from tasks.versions import current, main, recorded, stage_classes, stale
from tests.tasks.helpers import shared_params


def test_every_stage_matches_its_recorded_version_and_code():
    lines = stale(current(), recorded())
    assert not lines, ("stage code changed: bump the version of each stage whose artifact changes, then run "
                       "`.venv/bin/python -m tasks.versions --record`:\n" + "\n".join(lines))


def test_every_stage_of_the_dag_is_versioned():
    names = set(stage_classes())
    assert {"TokenizeSplit", "AlignWords", "TrainNMT", "DecodePBMT", "BuildLMatrix", "DecodeLNMT", "EvaluateSystem",
            "MeasureDecodingSpeed", "TuneLMBR"} <= names
    assert all(isinstance(cls.version, int) and cls.version >= 1 for cls in stage_classes().values())


def test_a_changed_module_without_a_new_version_is_reported_and_a_bump_asks_for_a_record():
    now = current()
    changed = json.loads(json.dumps(now))
    changed["AlignWords"]["code"] = "0" * 16  # as if the code had changed since the record
    assert stale(now, changed) == ["AlignWords (align): its code changed but version is still 1: bump it if the "
                                   "artifact changes, then record"]
    changed["AlignWords"]["version"] = 0  # the version was bumped since: the record must be renewed
    assert stale(now, changed) == ["AlignWords (align): version 0 -> 1: record it"]
    del changed["AlignWords"]
    changed["Gone"] = {"stage": "x", "version": 1, "code": ""}
    assert stale(now, changed) == ["AlignWords: not recorded", "Gone: recorded but no longer a stage"]


def test_the_fingerprint_follows_imports_into_the_library_and_changes_with_the_source(tmp_path, monkeypatch):
    closure = module_closure("tasks.smt", ("pipeline", "lattices"))
    assert {"tasks.smt", "pipeline.smt.align", "pipeline.smt.symmetrize", "pipeline.io"} <= set(closure)
    assert "tasks.data" not in closure and "luigi" not in closure  # other stages and outside packages are not followed
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from toy import b\n")
    (package / "b.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = fingerprint("toy.a", ("toy",))
    assert module_closure("toy.a", ("toy",)) == ["toy.a", "toy.b"]
    (package / "b.py").write_text("X = 2\n")
    assert fingerprint("toy.a", ("toy",)) != before


def test_the_fingerprint_covers_the_compiled_sources_a_module_names(tmp_path, monkeypatch):
    assert "pbmt_search.cpp" in [p.name for p in compiled_sources("pipeline.smt.compiled_search")]
    assert "pipeline.smt.compiled_search" in module_closure("tasks.smt", ("pipeline", "lattices"))
    package = tmp_path / "toy2"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text('COMPILED_SOURCES = ("kernel.cpp",)\n')
    (package / "kernel.cpp").write_text("int f() { return 1; }\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = fingerprint("toy2.a", ("toy2",))
    (package / "kernel.cpp").write_text("int f() { return 2; }\n")
    assert fingerprint("toy2.a", ("toy2",)) != before


def test_a_bumped_version_builds_a_new_artifact(tmp_path):
    params = shared_params(tmp_path, tmp_path / "data")

    class LearnBPEv2(LearnBPE):
        version = 2

    assert LearnBPEv2(**params).artifact_dir() != LearnBPE(**params).artifact_dir()
    assert LearnBPE(**params).signature_params()["version"] == 1


def test_the_command_reports_a_clean_record(capsys):
    assert main([]) == 0
    assert "matches" in capsys.readouterr().out
