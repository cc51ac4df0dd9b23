"""The provenance written under a report's tables."""
from __future__ import annotations

import json
import subprocess

from pipeline.report.provenance import build_span_seconds, code_version, describe, footer


def _artifact(folder, finished, seconds):
    folder.mkdir(parents=True)
    (folder / "signature.json").write_text(json.dumps({"finished": finished, "seconds": seconds}))
    return folder


def test_the_build_span_runs_from_the_first_start_to_the_last_finish(tmp_path):
    folders = [_artifact(tmp_path / "a", "2026-12-01T10:00:00+0000", 600.0),   # started 09:50
               _artifact(tmp_path / "b", "2026-12-01T11:30:00+0000", 60.0),    # the last to finish
               _artifact(tmp_path / "c", "2026-12-01T10:20:00+0000", 10.0),
               tmp_path / "unfinished"]
    assert build_span_seconds(folders) == 100 * 60.0
    assert build_span_seconds([tmp_path / "unfinished"]) is None


def test_the_commit_says_when_tracked_files_differ_from_it(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f.txt").write_text("one")
    subprocess.run([*git, "add", "f.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    (repo / "untracked.txt").write_text("not part of the code")
    assert code_version(repo)["commit"] == head
    (repo / "f.txt").write_text("two")
    assert code_version(repo)["commit"] == head + "+modified"
    assert code_version(tmp_path / "no-repo")["commit"] == "unknown"


PROVENANCE = {"commit": "abc123", "version": "0.9.0", "profile": "medium", "cpu": "AMD EPYC 7B13", "cores": 2,
              "cpu_variant": "AVX2", "workers": 2, "date": "2026-12-01", "build_minutes": 140.5,
              "command_minutes": 141.0}


def test_the_footer_groups_the_tasks_that_share_a_provenance():
    other = {**PROVENANCE, "cpu": "Intel Xeon", "cpu_variant": "AVX-512"}
    text = footer({"ger-eng": PROVENANCE, "eng-ger": PROVENANCE, "chi-eng": other},
                  ["ger-eng", "eng-ger", "chi-eng", "jpn-eng"])
    lines = [line for line in text.splitlines() if line.startswith("- ")]
    assert lines == [f"- ger-eng, eng-ger: {describe(PROVENANCE)}", f"- chi-eng: {describe(other)}",
                     "- jpn-eng: produced before provenance was recorded"]
    assert describe(PROVENANCE) == ("commit abc123 (lmbr-pipeline 0.9.0), profile medium, AMD EPYC 7B13 (2 cores, "
                                    "AVX2), 2 worker(s), 2026-12-01; its artifacts built over 140.5 min (the command "
                                    "141.0 min)")
    assert footer({}, ["ger-eng"]) == ""


def test_a_note_kept_with_a_provenance_follows_its_sentence():
    noted = {**PROVENANCE, "note": "An 11-minute stop is included."}
    assert describe(noted) == describe(PROVENANCE) + ". An 11-minute stop is included."
    assert footer({"ger-eng": noted, "eng-ger": PROVENANCE}, ["ger-eng", "eng-ger"]).splitlines()[3:] == [
        f"- ger-eng: {describe(noted)}", f"- eng-ger: {describe(PROVENANCE)}"]
