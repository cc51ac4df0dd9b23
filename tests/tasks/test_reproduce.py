"""reproduce-table end to end on a small de-en data folder (real Luigi, lmplz, sacrebleu)."""
import json
import shutil

import pytest

from pipeline.machine import describe_cpu
from tasks.reproduce import default_out, main


def run(tmp_path, data_dir, *extra, systems="none"):
    return main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--systems", systems,
                 "--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "out"), *extra])


def produced_commit(tmp_path):
    return json.loads((tmp_path / "out" / "report_inputs.json").read_text())["provenance"]["ger-eng"]["commit"]


def test_writes_tables_and_results(tmp_path, data_dir, capsys):
    assert run(tmp_path, data_dir) == 0
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    assert [(r["task"], r["system"], r["eval_set"]) for r in results] == [("ger-eng", "ROUNDTRIP", "newstest2016")]
    assert set(results[-1]) == {"task", "system", "eval_set", "bleu", "precisions", "signature", "timings",
                               "source_words", "variant", "chrf2", "fallback_lines", "run"}
    assert results[-1]["bleu"] == pytest.approx(100.0) and len(results[-1]["precisions"]) == 4
    assert "tok:13a" in results[-1]["signature"]["bleu"]
    summary = (out / "data_summary.csv").read_text().splitlines()
    assert len(summary) == 2 and summary[1].startswith("ger-eng,300,300,")
    assert (out / "table1.tex").read_text().startswith(r"\begin{table}")
    said = capsys.readouterr()
    assert "Data and language models" in said.out
    assert "reproduce-table: expected wall time: about" in said.err and "fp32 matrix products" in said.err
    # under each table, what produced it
    produced = json.loads((out / "report_inputs.json").read_text())["provenance"]["ger-eng"]
    assert produced["profile"] == "tiny" and produced["cpu_variant"] == describe_cpu().variant
    assert produced["build_minutes"] is not None and produced["command_minutes"] >= 0 and produced["workers"] == 1
    forecast = produced["estimate"]  # the forecast made before the build, kept beside the actual times
    assert forecast["wall_minutes"] > 0 and forecast["workers"] == 1 and forecast["machine"]["gflops_1_thread"] > 0
    assert f"expected before the build: {forecast['wall_minutes']} min of wall time" in (out / "table1.md").read_text()
    for table in ("table1.md", "data_summary.md", "stage_times.md"):
        text = (out / table).read_text()
        assert "Produced by:" in text and f"- ger-eng: commit {produced['commit']} (lmbr-pipeline " in text

    before = (out / "results.json").read_text()
    assert run(tmp_path, data_dir) == 0  # resumes: everything is complete, the same numbers come back
    assert (out / "results.json").read_text() == before


def test_eval_set_by_split_name_and_a_note_under_every_table(tmp_path, data_dir):
    assert run(tmp_path, data_dir, "--eval-set", "dev", "--note", "Beside a test run.") == 0
    assert "Beside a test run." in (tmp_path / "out" / "table1.md").read_text()
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results[0]["eval_set"] == "dev"


@pytest.mark.parametrize("args, message", [
    (["--tasks", "fr-eng"], "unknown task(s) fr-eng (known: chi-eng, eng-ger, eng-jpn, ger-eng, jpn-eng)"),
    (["--systems", "SMT"], "unknown system(s) SMT"),
    (["--eval-set", "newstest2099"], "split 'newstest2099' is not named in [splits]"),
    (["--profile", "huge"],
     "huge.toml: no such config file (known profiles: medium, medium-gpu, paper, paper-rehearsal, tiny)"),
])
def test_bad_arguments_are_clear_errors(tmp_path, data_dir, capsys, args, message):
    assert main(["--data-dir", str(data_dir), "--work-dir", str(tmp_path / "w"), "--out", str(tmp_path / "o"),
                 *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_missing_test_split_fails_with_the_places_looked(tmp_path, data_dir, capsys, monkeypatch):
    monkeypatch.setenv("MT_OFFLINE", "1")
    assert run(tmp_path, data_dir, "--eval-set", "test") == 1
    err = capsys.readouterr().err
    assert "split de-en/test" in err and str(data_dir / "de-en") in err and "offline" in err
    assert not (tmp_path / "out").exists()



def test_export_writes_one_verified_folder_per_system(tmp_path, data_dir, capsys):
    from pipeline.deploy.system import load_system
    from pipeline.deploy.translator import Translator
    from pipeline.io import read_lines

    exported = tmp_path / "systems"
    assert run(tmp_path, data_dir, "--export", str(exported), systems="PBMT") == 0
    system = load_system(exported / "ger-eng" / "PBMT")
    assert system.name == "PBMT" and system.manifest["exported_from"]["split"] == "newstest2016"
    assert f"exported {exported / 'ger-eng' / 'PBMT'}" in capsys.readouterr().out
    sources = list(read_lines(next(data_dir.glob("*/newstest2016.de*"))))
    [pbmt] = (tmp_path / "work" / "tiny" / "ger-eng" / "pbmt").glob("newstest2016-*/translation.en")
    assert list(Translator(system).translate(sources)) == list(read_lines(pbmt))


def test_a_run_of_one_task_merges_into_the_report_of_others(tmp_path, data_dir, capsys):
    """The folder already holds eng-ger (as after a run of all tasks); a run of ger-eng alone keeps eng-ger's score
    with its signature and its data row, and replaces ger-eng's."""
    assert run(tmp_path, data_dir) == 0
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    inputs = json.loads((out / "report_inputs.json").read_text())
    other = {**results[0], "task": "eng-ger", "bleu": 42.0, "signature": {"bleu": "an earlier run's", "artifact": "x"},
             "run": {"commit": "feedfacecafe", "version": "0.8.0", "cpu": "elsewhere", "cpu_variant": "AVX2",
                     "date": "2026-11-01"}}
    # the cell's provenance is its evaluation artifact's build: this checkout, this machine
    assert results[0]["run"]["commit"] == produced_commit(tmp_path) and results[0]["run"]["cpu_variant"] == \
        describe_cpu().variant
    (out / "results.json").write_text(json.dumps([other, *results]))
    inputs["tasks"] = ["eng-ger", "ger-eng"]
    inputs["data_rows"] = [{**inputs["data_rows"][0], "task": "eng-ger"}, *inputs["data_rows"]]
    (out / "report_inputs.json").write_text(json.dumps(inputs))

    assert run(tmp_path, data_dir) == 0
    merged = json.loads((out / "results.json").read_text())
    assert [(r["task"], r["bleu"], r["signature"], r["run"]) for r in merged] == [
        ("eng-ger", 42.0, other["signature"], other["run"]),
        ("ger-eng", results[0]["bleu"], results[0]["signature"], results[0]["run"])]  # found built: kept as it was
    assert [line.split(",")[0] for line in (out / "data_summary.csv").read_text().splitlines()] == [
        "task", "eng-ger", "ger-eng"]
    assert "eng-ger" in (out / "table1.md").read_text()
    assert "- eng-ger: produced before provenance was recorded" in (out / "table1.md").read_text()


def test_report_only_rewrites_the_tables_from_the_folder_alone(tmp_path, data_dir, capsys):
    """--report-only writes every table again from report_inputs.json: with the work folder gone, the stage times
    and each task's provenance are those the run recorded."""
    assert run(tmp_path, data_dir) == 0
    out = tmp_path / "out"
    stage_times = (out / "stage_times.csv").read_text()
    inputs = json.loads((out / "report_inputs.json").read_text())
    inputs["provenance"]["ger-eng"]["commit"] = "0123456789ab"  # the run that produced it, not this checkout
    (out / "report_inputs.json").write_text(json.dumps(inputs))
    for name in ("table1.md", "stage_times.md", "stage_times.csv"):
        (out / name).unlink()
    shutil.rmtree(tmp_path / "work")

    assert main(["--report-only", "--out", str(out)]) == 0
    assert (out / "stage_times.csv").read_text() == stage_times and "ger-eng" in stage_times.splitlines()[0]
    for name in ("table1.md", "stage_times.md"):
        assert "- ger-eng: commit 0123456789ab (lmbr-pipeline " in (out / name).read_text()
    assert not (tmp_path / "work").exists()  # nothing was built

    assert main(["--report-only", "--out", str(out), "--note", "Resumed once."]) == 0  # a note added later
    assert main(["--report-only", "--out", str(out), "--note", "Resumed once."]) == 0  # only once
    assert (out / "table1.md").read_text().count("Resumed once.") == 1

    assert main(["--report-only", "--out", str(tmp_path / "empty")]) == 2
    assert f"{tmp_path / 'empty'} holds no report_inputs.json" in capsys.readouterr().err


def test_merge_report_brings_another_run_s_folder_in_with_its_provenance_and_stage_times(tmp_path, data_dir):
    """A run elsewhere (its own --out) merged into a report folder without building anything; a folder written
    before the stage times were kept gives them from its artifacts."""
    assert run(tmp_path, data_dir) == 0
    other = tmp_path / "out"
    inputs = json.loads((other / "report_inputs.json").read_text())
    del inputs["stage_times"]  # as an earlier version wrote it: the work folder still holds the artifacts
    (other / "report_inputs.json").write_text(json.dumps(inputs))
    target = tmp_path / "published"

    assert main(["--merge-report", str(other), "--out", str(target)]) == 0
    merged = json.loads((target / "report_inputs.json").read_text())
    assert merged["provenance"] == inputs["provenance"] and merged["tasks"] == ["ger-eng"]
    assert "tokenized" in merged["stage_times"]["ger-eng"]["stages"]
    assert (target / "stage_times.csv").read_text() == (other / "stage_times.csv").read_text()
    assert json.loads((target / "results.json").read_text()) == json.loads((other / "results.json").read_text())


def test_a_folder_of_another_evaluation_set_is_refused_before_the_build(tmp_path, data_dir, capsys):
    assert run(tmp_path, data_dir) == 0
    assert run(tmp_path, data_dir, "--eval-set", "dev") == 2
    assert "holds the report of profile tiny on the devtest sets, not tiny on dev" in capsys.readouterr().err


def test_a_run_beside_a_published_one_is_compared_cell_by_cell_and_leaves_it_alone(tmp_path, data_dir):
    assert default_out("medium", "devtest") == "results/medium-local"  # a published profile: the user's own folder
    assert default_out("tiny", "devtest") == "results/tiny" and default_out("tiny", "dev") == "results/tiny-dev"
    assert run(tmp_path, data_dir) == 0
    published = tmp_path / "out"
    before = {p.name: p.read_bytes() for p in published.iterdir() if p.is_file()}
    mine = tmp_path / "mine"
    assert main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--systems", "none",
                 "--work-dir", str(tmp_path / "work"), "--out", str(mine), "--published", str(published)]) == 0
    assert {p.name: p.read_bytes() for p in published.iterdir() if p.is_file()} == before
    rows = (mine / "comparison.csv").read_text().splitlines()
    assert rows[0].startswith("task,system,variant,BLEU (yours),BLEU (published),difference")
    assert rows[1].startswith("ger-eng,ROUNDTRIP,-,100.0,100.0,0.0,")
    text = (mine / "comparison.md").read_text()
    assert f"Published: `{published}`" in text
    assert "- ger-eng, yours: commit " in text and "- ger-eng, published: commit " in text
    assert main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--systems", "none",
                 "--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "alone"), "--published", "none"]) == 0
    assert not (tmp_path / "alone" / "comparison.md").exists()
