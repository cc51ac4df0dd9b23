import json

from pipeline.report import render
from pipeline.report.tables import Record, table1, write_report


def record(task, system, bleu):
    return Record(task=task, system=system, eval_set="devtest", bleu=bleu, precisions=[1.0, 2.0, 3.0, 4.0],
                  signature={"bleu": "tok:13a"})


def test_table1_layout_is_systems_by_tasks():
    header, rows = table1([record("ger-eng", "PBMT", 20.5), record("eng-ger", "PBMT", 15.0)],
                          ["ger-eng", "eng-ger", "chi-eng"], ["PBMT", "FNMT"])
    assert header == ["system", "ger-eng", "eng-ger", "chi-eng"]
    assert rows == [["PBMT", 20.5, 15.0, None], ["FNMT", None, None, None]]


def test_renderers():
    header, rows = ["system", "a_b"], [["X&Y", 1.234], ["Z", None]]
    assert render.markdown(header, rows) == "| system | a_b |\n|---|---:|\n| X&Y | 1.23 |\n| Z | - |\n"
    assert render.csv_text(header, rows) == "system,a_b\nX&Y,1.234\nZ,\n"
    tex = render.latex(header, rows, "BLEU 50%")
    assert r"system & a\_b \\" in tex and r"X\&Y & 1.23 \\" in tex and r"\caption{BLEU 50\%}" in tex


def test_write_report_files(tmp_path):
    records = [record("ger-eng", "ROUNDTRIP", 99.9)]
    paths = write_report(tmp_path, records, ["ger-eng"], [], [{"task": "ger-eng", "tune_perplexity": 12.5}],
                         "tiny", "devtest")
    assert {p.name for p in paths} == {"table1.md", "table1.csv", "table1.tex", "data_summary.md",
                                      "data_summary.csv", "data_summary.tex", "results.json"}
    results = json.loads((tmp_path / "results.json").read_text())
    assert results == [{"task": "ger-eng", "system": "ROUNDTRIP", "eval_set": "devtest", "bleu": 99.9,
                        "precisions": [1.0, 2.0, 3.0, 4.0], "signature": {"bleu": "tok:13a"}, "timings": {},
                        "source_words": None, "variant": "", "chrf2": None, "fallback_lines": 0, "run": {}}]
    assert "12.50" in (tmp_path / "data_summary.md").read_text()


def test_table1_has_a_legend_chrf_significance_and_the_lines_decoded_without_their_lattice(tmp_path):
    import dataclasses

    records = [dataclasses.replace(record("ger-eng", "PBMT", 20.0), chrf2=48.5),
               dataclasses.replace(record("ger-eng", "FNMT-lat", 21.0), chrf2=49.0, fallback_lines=2)]
    significance = [{"task": "ger-eng", "system": "FNMT-lat", "baseline": "PBMT", "metric": "BLEU", "score": 21.0,
                     "baseline_score": 20.0, "mean": 21.1, "ci": 0.8, "p_value": 0.03}]
    paths = write_report(tmp_path, records, ["ger-eng"], ["PBMT", "FNMT-lat"], [], "tiny", "devtest",
                         significance=significance, notes={"FNMT-lat": "FNMT rescoring the PBMT lattice"})
    table = (tmp_path / "table1.md").read_text()
    assert "- **FNMT-lat**: FNMT rescoring the PBMT lattice" in table and "FNMT-lat on ger-eng: 2" in table
    assert (tmp_path / "table1_chrf.csv").read_text() == "system,ger-eng\nPBMT,48.5\nFNMT-lat,49.0\n"
    row = (tmp_path / "significance.csv").read_text().splitlines()[1]
    assert row == "ger-eng,FNMT-lat,PBMT,BLEU,21.0,20.0,21.1,0.8,0.030"
    assert "| 0.030 |" in (tmp_path / "significance.md").read_text()
    assert {p.name for p in paths} >= {"table1_chrf.md", "significance.md"}
