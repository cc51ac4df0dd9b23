from pipeline.report.finding import BEST_HYBRID, finding_table, regime_table
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


def test_the_paper_s_regime_holds_only_where_tnmt_reaches_pbmt_and_lmbr_adds_significantly():
    scores = {("ger-eng", "PBMT"): 20.0, ("ger-eng", "TNMT"): 20.0, ("ger-eng", "LTNMT"): 21.0,  # at PBMT: holds
              ("eng-ger", "PBMT"): 17.0, ("eng-ger", "TNMT"): 18.0, ("eng-ger", "LTNMT"): 18.3,  # p 0.2: no
              ("chi-eng", "PBMT"): 9.0, ("chi-eng", "TNMT"): 3.4, ("chi-eng", "LTNMT"): 9.5,  # below PBMT
              ("jpn-eng", "PBMT"): 11.0, ("jpn-eng", "TNMT"): 12.0, ("jpn-eng", "LTNMT"): 12.5,  # not tested
              ("eng-jpn", "PBMT"): 11.0, ("eng-jpn", "TNMT"): 10.0}  # no LTNMT: no row
    tested = [{**significance("LTNMT", "TNMT", p), "task": task}
              for task, p in (("ger-eng", 0.001), ("eng-ger", 0.2), ("chi-eng", 0.001))]
    header, rows = regime_table(scores, tested, ["ger-eng", "eng-ger", "chi-eng", "jpn-eng", "eng-jpn"])
    assert header[-1] == "the paper's regime"
    assert rows == [
        ["ger-eng", 20.0, 20.0, 0.0, 21.0, 1.0, "0.001", "holds"],
        ["eng-ger", 18.0, 17.0, 1.0, 18.3, 0.3, "0.200", "does not hold: LMBR adds nothing significant to TNMT"],
        ["chi-eng", 3.4, 9.0, -5.6, 9.5, 6.1, "0.001", "does not hold: TNMT below PBMT"],
        ["jpn-eng", 12.0, 11.0, 1.0, 12.5, 0.5, None, "does not hold: LTNMT against TNMT not tested"]]


def test_the_report_writes_the_regime_beside_the_finding(tmp_path):
    scores = {("ger-eng", "PBMT"): 20.0, ("ger-eng", "TNMT"): 19.0, ("ger-eng", "LTNMT"): 21.0}
    records = [Record(task=task, system=system, eval_set="devtest", bleu=bleu, precisions=[1.0] * 4, signature={})
               for (task, system), bleu in scores.items()]
    write_report(tmp_path, records, ["ger-eng"], ["PBMT", "TNMT", "LTNMT"], [], "medium", "devtest",
                 significance=[significance("LTNMT", "TNMT", 0.001)])
    assert (tmp_path / "regime.csv").read_text().splitlines() == [
        "task,TNMT,PBMT,TNMT - PBMT,LTNMT,LTNMT - TNMT,p-value,the paper's regime",
        "ger-eng,19.0,20.0,-1.0,21.0,2.0,0.001,does not hold: TNMT below PBMT"]
    assert "The paper's regime on the devtest sets, profile medium" in (tmp_path / "regime.md").read_text()
