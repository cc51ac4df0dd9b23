"""The Makefile's targets that delete: `make clean-work` removes the work folders and untracked run outputs, never a
file that git tracks."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None, reason="needs make and git")
def test_clean_work_keeps_the_tracked_results(tmp_path):
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    published = tmp_path / "results" / "medium" / "table1.md"
    published.parent.mkdir(parents=True)
    published.write_text("the published table\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null"}
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "published"]):
        subprocess.run(command, cwd=tmp_path, env=env, check=True)
    run_outputs = [tmp_path / "results" / "tiny" / "table1.md", tmp_path / "results" / "medium" / "extra.json",
                   tmp_path / "work" / "tiny" / "ger-eng" / "signature.json"]
    for path in run_outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    published.write_text("the table rewritten by a run\n")  # a tracked file a run changed stays as it is

    subprocess.run(["make", "-s", "clean-work"], cwd=tmp_path, env=env, check=True)

    assert published.read_text() == "the table rewritten by a run\n"
    assert not any(path.exists() for path in run_outputs)
    assert not (tmp_path / "work").exists()


def test_results_that_git_tracks_are_not_ignored():
    """.gitignore agrees with what is tracked: no tracked file under results/ matches an ignore pattern."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "ls-files", "-i", "-c", "--exclude-standard", "--", "results"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    assert not ignored, f"tracked but ignored: {ignored[:5]}"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_reproduce_leaves_the_output_folder_to_reproduce_table_unless_named(tmp_path):
    """`make reproduce PROFILE=medium` passes no --out, so reproduce-table writes the user's own
    results/medium-local (ignored by git) and never the published results/medium; OUT=DIR names a folder."""
    def command(*settings):
        done = subprocess.run(["make", "-n", "-o", "install", "reproduce", *settings], cwd=REPO, capture_output=True,
                              text=True, check=True)
        return [line for line in done.stdout.splitlines() if "reproduce-table" in line][0]
    assert "--out" not in command("PROFILE=medium")
    assert "--out results/medium" in command("PROFILE=medium", "OUT=results/medium")
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/medium-local/table1.md"], cwd=REPO)
    assert ignored.returncode == 0
