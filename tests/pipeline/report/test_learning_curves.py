"""Learning curves read from real metrics.csv files (written by the trainer's MetricsLog) and their report files."""
from __future__ import annotations

import pytest

from pipeline.nmt.metrics import MetricsLog
from pipeline.report.learning_curves import curve_table, read_curve, write_learning_curves


def _metrics(path, points):
    log = MetricsLog(path)
    for update, seconds, bleu, loss in points:
        log.write("train", update, elapsed_s=seconds - 1, train_loss=loss + 1.0)
        log.write("valid", update, elapsed_s=seconds, valid_loss=loss, valid_bleu=bleu)
    log.close()
    return path


def test_the_curve_is_the_validation_rows_in_minutes(tmp_path):
    path = _metrics(tmp_path / "metrics.csv", [(250, 120.0, 3.5, 5.2), (500, 300.0, 7.25, 4.1)])
    assert read_curve(path) == [{"update": 250, "minutes": 2.0, "valid_bleu": 3.5, "valid_loss": 5.2},
                                {"update": 500, "minutes": 5.0, "valid_bleu": 7.25, "valid_loss": 4.1}]


def test_a_malformed_validation_row_names_the_file_and_line(tmp_path):
    path = _metrics(tmp_path / "metrics.csv", [(250, 120.0, 3.5, 5.2)])
    path.write_text(path.read_text() + "valid,oops,0,1.0,,,,,1.0,2.0,3.0\n")
    with pytest.raises(ValueError, match=r"metrics.csv, line 4: not a validation row"):
        read_curve(path)


def test_the_report_writes_a_table_and_a_figure_of_both_axes(tmp_path):
    curves = {"ger-eng TNMT transformer seed 1": read_curve(_metrics(tmp_path / "a.csv", [(250, 60.0, 2.0, 6.0),
                                                                                             (500, 150.0, 6.5, 4.0)])),
              "ger-eng FNMT gru seed 1": read_curve(_metrics(tmp_path / "b.csv", [(250, 90.0, 1.0, 6.5)]))}
    header, rows = curve_table(curves)
    assert header[:3] == ["model", "update", "minutes"]
    assert rows == [["ger-eng TNMT transformer seed 1", 250, 1.0, 2.0, 6.0],
                    ["ger-eng TNMT transformer seed 1", 500, 2.5, 6.5, 4.0],
                    ["ger-eng FNMT gru seed 1", 250, 1.5, 1.0, 6.5]]
    paths = write_learning_curves(tmp_path / "out", curves, "medium")
    assert [p.name for p in paths] == ["learning_curves.md", "learning_curves.csv", "learning_curves.png"]
    assert (tmp_path / "out" / "learning_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (tmp_path / "out" / "learning_curves.md").read_text()
    assert "| ger-eng TNMT transformer seed 1 | 500 | 2.50 | 6.50 | 4.00 |" in table
    assert write_learning_curves(tmp_path / "none", {"x": []}, "medium") == []


def test_models_stopped_by_the_wall_clock_guard_are_named_under_the_table(tmp_path):
    curves = {"eng-ger TNMT transformer seed 1": [{"update": 250, "minutes": 1.0, "valid_bleu": 2.0,
                                                   "valid_loss": 6.0}]}
    write_learning_curves(tmp_path, curves, "medium", ["eng-ger transformer seed 1: 2796 updates in 7800.2 s"])
    table = (tmp_path / "learning_curves.md").read_text()
    assert table.endswith("depend on the machine's speed:\n\n- eng-ger transformer seed 1: 2796 updates in 7800.2 s\n")
    write_learning_curves(tmp_path, curves, "medium")
    assert "wall-clock guard" not in (tmp_path / "learning_curves.md").read_text()
