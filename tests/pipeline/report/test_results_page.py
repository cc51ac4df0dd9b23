from pathlib import Path

from pipeline.report.results_page import REPO, build_page, stale, write_page

TABLE1 = """## Table 1: Cased BLEU (sacrebleu) on the devtest sets, profile medium

| system | ger-eng |
|---|---:|
| PBMT | 22.06 |
| LNMT | 22.14 |
"""


def table_rows(markdown: str, heading: str) -> list[list[str]]:
    """The cells of the first table after the heading that starts with `heading`."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip().startswith(heading))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    return rows


def test_the_page_holds_each_published_runs_tables_and_figures(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    (results / "medium").mkdir(parents=True)
    (results / "medium" / "table1.md").write_text(TABLE1)
    (results / "medium" / "figure1.png").write_bytes(b"png bytes")
    (results / "tiny").mkdir()
    (results / "tiny" / "table1.md").write_text(TABLE1.replace("medium", "tiny"))  # not published: left out
    page = build_page(results)
    assert "## Profile medium" in page.text and "### Table 1: Cased BLEU" in page.text and "tiny" not in page.text
    assert table_rows(page.text, "Table 1") == table_rows(TABLE1, "Table 1")
    assert page.figures == {"figures/medium/figure1.png": results / "medium" / "figure1.png"}
    assert "](figures/medium/figure1.png)" in page.text
    assert stale(page, docs) == [str(docs / "RESULTS.md"), str(docs / "figures/medium/figure1.png")]
    write_page(page, docs)
    assert stale(page, docs) == []
    (results / "medium" / "figure1.png").write_bytes(b"a newer run")
    assert stale(build_page(results), docs) == [str(docs / "figures/medium/figure1.png")]


def test_the_repositorys_results_page_is_current():
    assert stale(build_page(), REPO / "docs") == [], "run: .venv/bin/python -m pipeline.report.results_page"


def test_the_results_page_shows_the_medium_runs_table1_cell_for_cell():
    table1 = (REPO / "results" / "medium" / "table1.md").read_text(encoding="utf-8")
    page = (REPO / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    section = page.split("## Profile medium", 1)[1]
    assert table_rows(section, "Table 1") == table_rows(table1, "Table 1")
    assert len(table_rows(table1, "Table 1")) == 12  # header, rule, ten systems
    assert "Produced by:" in section.split("Table 1", 1)[1]


def test_no_published_run_gives_a_page_that_says_so(tmp_path):
    assert "No result folder holds a Table 1 yet" in build_page(tmp_path / "none").text
    assert isinstance(build_page(tmp_path / "none").figures, dict) and Path(tmp_path).is_dir()


def test_learning_curves_measured_ahead_of_a_run_get_a_section_with_their_figure(tmp_path):
    results = tmp_path / "results"
    (results / "medium").mkdir(parents=True)
    (results / "medium" / "table1.md").write_text(TABLE1)
    curves = results / "benchmarks" / "learning_curve_medium_ger-eng"
    curves.mkdir(parents=True)
    (curves / "learning_curves.md").write_text("## Learning curves\n\n| model | update |\n|---|---:|\n| gru | 250 |\n")
    (curves / "learning_curves.png").write_bytes(b"png")
    (results / "benchmarks" / "learning_curve_empty").mkdir()  # no table: no section
    page = build_page(results)
    section = page.text.split("## Learning curves medium_ger-eng", 1)[1]
    assert page.text.index("## Profile medium") < page.text.index("## Learning curves medium_ger-eng")
    assert table_rows(section, "Learning curves") == [["model", "update"], ["---", "---:"], ["gru", "250"]]
    assert page.figures["figures/learning_curve_medium_ger-eng/learning_curves.png"] == curves / "learning_curves.png"
    assert "learning_curve_empty" not in page.text
