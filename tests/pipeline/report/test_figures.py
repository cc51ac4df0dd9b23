"""Figure 1: the time breakdown of the NMT systems from the evaluation records."""
import dataclasses

import pytest

from pipeline.report.figures import breakdown_table, plot_time_breakdown, time_breakdown
from pipeline.report.tables import Record, table2, write_report


def record(system, timings, words=600):
    return Record(task="ger-eng", system=system, eval_set="newstest2016", bleu=20.0, precisions=[50, 25, 12, 6],
                  signature={}, timings=timings, source_words=words)


RECORDS = [
    record("PBMT", {"pbmt_decode": 30.0}),
    record("FNMT", {"nmt_load": 1.0, "nmt_decode": 20.0, "postprocess": 0.5}),
    record("LNMT", {"pbmt_decode": 30.0, "posteriors_and_l": 3.0, "nmt_load": 1.0, "nmt_decode": 22.0}),
]


def test_breakdown_sums_the_pipeline_phases_and_gives_end_to_end_speed():
    rows = time_breakdown(RECORDS)
    assert [r["system"] for r in rows] == ["FNMT", "LNMT"]  # PBMT has no neural phase
    fnmt, lnmt = rows
    assert fnmt["total"] == 20.0 and fnmt["wpm"] == pytest.approx(60 * 600 / 20.0)
    assert lnmt["total"] == 55.0 and lnmt["wpm"] == pytest.approx(60 * 600 / 55.0, abs=0.1)
    header, table = breakdown_table(rows)
    assert header[2:5] == ["phrase-based decoding", "posteriors + L", "neural decoding"]
    assert table[1][2:5] == [30.0, 3.0, 22.0]


def test_the_report_writes_figure1_only_when_an_nmt_system_has_timings(tmp_path):
    paths = write_report(tmp_path / "a", RECORDS, ["ger-eng"], ["PBMT", "FNMT", "LNMT"], [], "tiny", "devtest")
    names = {p.name for p in paths}
    assert {"figure1.md", "figure1.csv", "figure1.png"} <= names
    assert (tmp_path / "a" / "figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "posteriors + L" in (tmp_path / "a" / "figure1.md").read_text()
    paths = write_report(tmp_path / "b", RECORDS[:1], ["ger-eng"], ["PBMT"], [], "tiny", "devtest")
    assert not any(p.name.startswith("figure1") for p in paths)
    assert plot_time_breakdown(time_breakdown(RECORDS), tmp_path / "c.png", "t").stat().st_size > 1000


def test_table2_lists_each_variant_with_bleu_and_end_to_end_speed(tmp_path):
    variants = [dataclasses.replace(RECORDS[2], variant="accelerated", bleu=19.0),
                dataclasses.replace(RECORDS[1], variant="research", bleu=18.0)]
    header, rows = table2(variants)
    assert header == ["task", "system", "variant", "BLEU", "words per minute"]
    assert rows == [["ger-eng", "LNMT", "accelerated", 19.0, pytest.approx(654.5)],
                    ["ger-eng", "FNMT", "research", 18.0, pytest.approx(1800.0)]]
    paths = write_report(tmp_path, RECORDS + variants, ["ger-eng"], ["PBMT", "FNMT", "LNMT"], [], "tiny", "devtest")
    assert {"table2.md", "table2.csv", "table2.tex"} <= {p.name for p in paths}
    assert "| LNMT | accelerated |" in (tmp_path / "table2.md").read_text().replace("  ", " ")
    assert "20.00" in (tmp_path / "table1.md").read_text() and "19.00" not in (tmp_path / "table1.md").read_text()


def test_measured_figures_are_copied_into_the_report(tmp_path):
    source = tmp_path / "speed_beam.png"
    source.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    paths = write_report(tmp_path / "out", RECORDS, ["ger-eng"], ["PBMT", "FNMT"], [], "tiny", "devtest",
                         [("figure2_ger-eng_FNMT.png", source)])
    assert (tmp_path / "out" / "figure2_ger-eng_FNMT.png").read_bytes() == source.read_bytes()
    assert tmp_path / "out" / "figure2_ger-eng_FNMT.png" in paths
