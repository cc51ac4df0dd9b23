"""A run of some tasks or systems merges into the report folder of an earlier run: its cells replace the same cells,
the others stay with their signatures."""
import csv
import json

import pytest

from pipeline.errors import PipelineError
from pipeline.report.merge import ReportInputs, check_mergeable, load_inputs, merge, save_inputs
from pipeline.report.tables import Record, write_report


def score(task, system, bleu, run, variant=""):
    return Record(task=task, system=system, eval_set="newstest2016" if task == "ger-eng" else "newstest2015",
                  bleu=bleu, precisions=[1.0, 2.0, 3.0, 4.0], variant=variant,
                  signature={"bleu": "nrefs:1|tok:13a", "artifact": f"{task}-{system}-{variant}-{run}"})


def compared(task, system, baseline, p, run):
    return {"task": task, "system": system, "baseline": baseline, "metric": "BLEU", "score": 1.0,
            "baseline_score": 0.5, "mean": 1.0, "ci": 0.1, "p_value": p, "run": run}


def write(out, inputs):
    """The folder as reproduce-table writes it."""
    write_report(out, inputs.records, inputs.tasks, inputs.systems, inputs.data_rows, inputs.profile,
                 inputs.eval_set, inputs.figures, inputs.significance)
    save_inputs(out, inputs)


@pytest.fixture
def first_run(tmp_path):
    """Two tasks, PBMT and LNMT (and LNMT's Table 2 variant on eng-ger), with their data rows, significance,
    learning curves, a guard stop, a speed figure and stage-time artifacts."""
    figure = tmp_path / "speed" / "figure2.json"
    figure.parent.mkdir()
    figure.write_text("[]")
    run = ReportInputs(
        profile="tiny", eval_set="devtest", tasks=["ger-eng", "eng-ger"], systems=["PBMT", "LNMT"],
        records=[score("ger-eng", "PBMT", 20.0, 1), score("ger-eng", "LNMT", 21.0, 1),
                 score("ger-eng", "ROUNDTRIP", 99.0, 1), score("eng-ger", "PBMT", 15.0, 1),
                 score("eng-ger", "LNMT", 16.0, 1), score("eng-ger", "LNMT", 15.5, 1, "accelerated"),
                 score("eng-ger", "ROUNDTRIP", 98.0, 1)],
        data_rows=[{"task": "ger-eng", "train_kept": 100}, {"task": "eng-ger", "train_kept": 200}],
        significance=[compared("ger-eng", "LNMT", "PBMT", 0.01, 1), compared("eng-ger", "LNMT", "PBMT", 0.02, 1)],
        figures=[("figure2_eng-ger_FNMT.json", figure)],
        curves={"ger-eng LNMT gru seed 1": [{"update": 10, "minutes": 1.0, "valid_bleu": 1.0, "valid_loss": 5.0}],
                "eng-ger LNMT gru seed 1": [{"update": 10, "minutes": 1.0, "valid_bleu": 2.0, "valid_loss": 4.0}]},
        guard_stops=["ger-eng gru seed 1: 10 updates in 60 s", "eng-ger gru seed 1: 10 updates in 60 s"],
        graph={tmp_path / "work/tiny/ger-eng/lm/a": [], tmp_path / "work/tiny/eng-ger/lm/b": []},
        stage_times={task: {"stages": {"lm": 6.0}, "chain_seconds": 6.0, "chain": [f"{task} lm"]}
                     for task in ("ger-eng", "eng-ger")})
    out = tmp_path / "out"
    write(out, merge(None, run))
    return out


def test_a_run_of_one_task_and_system_replaces_only_its_own_cells(first_run, tmp_path):
    second = ReportInputs(
        profile="tiny", eval_set="devtest", tasks=["ger-eng"], systems=["LNMT"],
        records=[score("ger-eng", "LNMT", 22.0, 2), score("ger-eng", "ROUNDTRIP", 99.5, 2)],
        data_rows=[{"task": "ger-eng", "train_kept": 111}],
        curves={"ger-eng LNMT gru seed 1": [{"update": 20, "minutes": 2.0, "valid_bleu": 3.0, "valid_loss": 3.0}]},
        graph={tmp_path / "work/tiny/ger-eng/lm/c": []},
        stage_times={"ger-eng": {"stages": {"lm": 12.0}, "chain_seconds": 12.0, "chain": ["ger-eng lm"]}})
    merged = merge(load_inputs(first_run), second, system_order=["PBMT", "FNMT", "LNMT"])
    write(first_run, merged)

    results = {(r["task"], r["system"], r["variant"]): (r["bleu"], r["signature"]["artifact"])
               for r in json.loads((first_run / "results.json").read_text())}
    assert results == {("ger-eng", "PBMT", ""): (20.0, "ger-eng-PBMT--1"),  # kept, with the first run's signature
                       ("ger-eng", "LNMT", ""): (22.0, "ger-eng-LNMT--2"),  # replaced by the second run's
                       ("ger-eng", "ROUNDTRIP", ""): (99.5, "ger-eng-ROUNDTRIP--2"),
                       ("eng-ger", "PBMT", ""): (15.0, "eng-ger-PBMT--1"),
                       ("eng-ger", "LNMT", ""): (16.0, "eng-ger-LNMT--1"),
                       ("eng-ger", "LNMT", "accelerated"): (15.5, "eng-ger-LNMT-accelerated-1"),
                       ("eng-ger", "ROUNDTRIP", ""): (98.0, "eng-ger-ROUNDTRIP--1")}
    table1 = list(csv.reader((first_run / "table1.csv").open()))
    assert table1 == [["system", "ger-eng", "eng-ger"], ["PBMT", "20.0", "15.0"], ["LNMT", "22.0", "16.0"]]
    assert "eng-ger,LNMT,accelerated,15.5" in (first_run / "table2.csv").read_text()
    assert [row["train_kept"] for row in merged.data_rows] == [111, 200]
    # ger-eng's LNMT was scored again and not compared again: its old comparison went with its old score
    assert [(r["task"], r["run"]) for r in merged.significance] == [("eng-ger", 1)]
    assert merged.curves["ger-eng LNMT gru seed 1"][0]["update"] == 20 and "eng-ger LNMT gru seed 1" in merged.curves
    assert merged.guard_stops == ["eng-ger gru seed 1: 10 updates in 60 s"]  # ger-eng's model trained again
    assert [name for name, _ in merged.figures] == ["figure2_eng-ger_FNMT.json"]
    assert (first_run / "figure2_eng-ger_FNMT.json").exists()
    assert {folder.name for folder in merged.graph} == {"a", "b", "c"}
    assert {task: t["stages"] for task, t in load_inputs(first_run).stage_times.items()} == {
        "ger-eng": {"lm": 12.0}, "eng-ger": {"lm": 6.0}}  # kept in the folder: no work folder is read
    assert load_inputs(first_run).tasks == ["ger-eng", "eng-ger"]


def test_a_rerun_of_the_same_run_writes_the_same_folder(first_run):
    before = {name: (first_run / name).read_text() for name in ("results.json", "report_inputs.json", "table1.md")}
    write(first_run, merge(load_inputs(first_run), load_inputs(first_run)))
    assert {name: (first_run / name).read_text() for name in before} == before


def test_a_folder_of_another_profile_or_evaluation_set_is_not_merged_into(first_run):
    check_mergeable(load_inputs(first_run), "tiny", "devtest", first_run)
    with pytest.raises(PipelineError, match="holds the report of profile tiny on the devtest sets, not tiny on tune"):
        check_mergeable(load_inputs(first_run), "tiny", "tune", first_run)
    with pytest.raises(PipelineError, match="not medium on devtest: choose another --out"):
        check_mergeable(load_inputs(first_run), "medium", "devtest", first_run)


def test_a_folder_without_report_inputs_gives_its_scores_and_figures(first_run):
    (first_run / "report_inputs.json").unlink()
    old = load_inputs(first_run)
    assert old.profile == "" and old.tasks == ["ger-eng", "eng-ger"] and old.systems == ["PBMT", "LNMT"]
    assert len(old.records) == 7 and [name for name, _ in old.figures] == ["figure2_eng-ger_FNMT.json"]
    check_mergeable(old, "medium", "tune", first_run)  # nothing to check it against
    assert load_inputs(first_run / "nothing") is None
