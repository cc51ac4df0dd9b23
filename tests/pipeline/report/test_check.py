"""The completeness check of a reproduce-table folder (CI's check of `make reproduce`)."""
from __future__ import annotations

from pathlib import Path

from pipeline.report.check import PNG_MAGIC, check_report, main, promised_files

TASKS, SYSTEMS = ["ger-eng", "eng-ger"], ["PBMT", "FNMT", "TNMT"]


def complete_folder(out: Path) -> Path:
    out.mkdir()
    for name in promised_files(SYSTEMS, ["eng-ger"]):
        path = out / name
        if name.endswith(".png"):
            path.write_bytes(PNG_MAGIC + b"rest")
        elif name.endswith(".json"):
            path.write_text("[]")
        else:
            path.write_text("x\n")
    rows = ["system,ger-eng,eng-ger", "PBMT,20.1,17.5", "FNMT,3.2,2.9", "TNMT,4.0,0.0"]
    (out / "table1.csv").write_text("\n".join(rows) + "\n")
    return out


def test_a_complete_folder_passes_and_the_figures_follow_the_table2_tasks(tmp_path):
    out = complete_folder(tmp_path / "out")
    assert check_report(out, TASKS, SYSTEMS, ["eng-ger"]) == []
    assert "figure2_eng-ger_FNMT.png" in promised_files(SYSTEMS, ["eng-ger"])
    assert "figure3_eng-ger_TNMT.json" in promised_files(["PBMT", "LTNMT"], ["eng-ger"])
    assert not [n for n in promised_files(["PBMT"], ["eng-ger"]) if n.startswith(("figure", "table2"))]
    assert "regime.csv" in promised_files(["PBMT", "TNMT", "LTNMT"], []) and "regime.csv" not in promised_files(
        ["PBMT", "FNMT", "LNMT"], [])  # the regime is the Transformer's


def test_every_problem_is_named(tmp_path):
    out = complete_folder(tmp_path / "out")
    (out / "table1.csv").write_text("system,ger-eng,eng-ger\nPBMT,20.1,\nFNMT,3.2,2.9\nMBR,-,21.0\n")
    (out / "figure2_eng-ger_TNMT.png").write_bytes(b"GIF89a")
    (out / "figure3_eng-ger_FNMT.json").write_text("{")
    (out / "stage_times.png").unlink()
    problems = check_report(out, TASKS, SYSTEMS, ["eng-ger"])
    assert sorted(problems) == sorted([
        f"{out / 'table1.csv'}: PBMT on eng-ger has no score (empty)",
        f"{out / 'table1.csv'}: TNMT on ger-eng has no score (empty)",
        f"{out / 'table1.csv'}: TNMT on eng-ger has no score (empty)",
        f"{out / 'table1.csv'}: MBR on ger-eng has no score (-)",
        f"{out / 'figure2_eng-ger_TNMT.png'}: not a PNG image",
        f"{out / 'stage_times.png'}: missing or empty",
    ] + [p for p in problems if "figure3_eng-ger_FNMT.json: not valid JSON" in p])
    assert any("figure3_eng-ger_FNMT.json: not valid JSON" in p for p in problems)


def test_the_command_exits_1_on_an_empty_folder(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    assert main([str(tmp_path / "out"), "--tasks", "ger-eng", "--systems", "PBMT", "--table2-tasks", "none"]) == 1
    assert "table1.md: missing or empty" in capsys.readouterr().err
    assert main([str(complete_folder(tmp_path / "full")), "--tasks", "ger-eng,eng-ger", "--systems",
                 ",".join(SYSTEMS)]) == 0


def test_the_tasks_may_stand_in_any_order_and_each_column_is_read_by_its_name(tmp_path):
    out = complete_folder(tmp_path / "out")
    (out / "table1.csv").write_text("system,eng-ger,ger-eng\nPBMT,17.5,20.1\nFNMT,2.9,3.2\nTNMT,,4.0\n")
    assert check_report(out, TASKS, SYSTEMS, ["eng-ger"]) == [
        f"{out / 'table1.csv'}: TNMT on eng-ger has no score (empty)"]
    (out / "table1.csv").write_text("system,eng-ger\nPBMT,17.5\n")
    assert "not the tasks ['ger-eng', 'eng-ger']" in check_report(out, TASKS, SYSTEMS, ["eng-ger"])[0]


def test_the_published_medium_folder_is_complete():
    from pipeline.report.results_page import REPO

    assert main([str(REPO / "results" / "medium"), "--tasks", "all", "--systems", "all"]) == 0
