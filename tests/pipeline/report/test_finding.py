from pipeline.report.finding import BEST_HYBRID, finding_table
from pipeline.report.tables import Record, write_report

SCORES = {("ger-eng", "PBMT"): 22.0, ("ger-eng", "FNMT"): 9.5, ("ger-eng", "TNMT"): 12.5,
          ("ger-eng", "LNMT"): 21.0, ("ger-eng", "LTNMT"): 23.1, ("ger-eng", "TNMT-lat"): 22.9,
          ("ger-eng", "MBR"): 22.6, ("eng-ger", "PBMT"): 17.0, ("eng-ger", "FNMT"): 18.0}


def significance(system, baseline, p_value, metric="BLEU"):
    return {"task": "ger-eng", "system": system, "baseline": baseline, "metric": metric, "p_value": p_value,
            "score": 0.0, "baseline_score": 0.0, "mean": 0.0, "ci": 0.0}


def test_each_comparison_reads_its_scores_and_its_own_p_value_and_the_best_hybrid_is_found_per_task():
    tested = [significance("LTNMT", "MBR", 0.01), significance("LTNMT", "MBR", 0.9, "chrF2"),
              significance("LNMT", "FNMT", 0.001), significance("TNMT", "PBMT", 0.001)]
    header, rows = finding_table(SCORES, tested, ["ger-eng", "eng-ger"])
    table = {(row[0], row[2], row[3]): dict(zip(header, row)) for row in rows}
    assert list(table) == [("ger-eng", "FNMT", "PBMT"), ("ger-eng", "TNMT", "PBMT"), ("ger-eng", "LNMT", "FNMT"),
                           ("ger-eng", "LTNMT", "TNMT"), ("ger-eng", "LTNMT", "MBR"), ("eng-ger", "FNMT", "PBMT")]
    best = table["ger-eng", "LTNMT", "MBR"]  # LTNMT 23.1 beats TNMT-lat 22.9 and LNMT 21.0
    assert best["question"] == BEST_HYBRID
    assert (best["difference"], best["p-value"], best["verdict"]) == (0.5, "0.010", "significantly higher")
    assert table["ger-eng", "TNMT", "PBMT"]["verdict"] == "significantly lower"  # 12.5 vs 22.0, p 0.001
    assert table["ger-eng", "LNMT", "FNMT"]["difference"] == 11.5
    untested = table["ger-eng", "LTNMT", "TNMT"]  # no record: the sign alone, no p-value
    assert (untested["p-value"], untested["verdict"]) == (None, "higher")
    assert table["eng-ger", "FNMT", "PBMT"]["verdict"] == "higher"  # eng-ger has no hybrid: no best-hybrid row


def test_a_difference_above_the_threshold_is_not_significant():
    _, rows = finding_table(SCORES, [significance("FNMT", "PBMT", 0.05)], ["ger-eng"])
    assert rows[0][2:] == ["FNMT", "PBMT", 9.5, 22.0, -12.5, "0.050", "not significant"]


def test_the_report_writes_the_finding_beside_table1(tmp_path):
    records = [Record(task=task, system=system, eval_set="devtest", bleu=bleu, precisions=[1.0] * 4, signature={})
               for (task, system), bleu in SCORES.items()]
    paths = write_report(tmp_path, records, ["ger-eng", "eng-ger"], ["PBMT", "FNMT", "LNMT"], [], "medium",
                         "devtest", significance=[significance("LNMT", "FNMT", 0.001)])
    assert {"finding.md", "finding.csv"} <= {p.name for p in paths}
    text = (tmp_path / "finding.csv").read_text().splitlines()
    assert text[0] == "task,question,system,baseline,system BLEU,baseline BLEU,difference,p-value,verdict"
    assert "ger-eng,LMBR on the NMT,LNMT,FNMT,21.0,9.5,11.5,0.001,significantly higher" in text
