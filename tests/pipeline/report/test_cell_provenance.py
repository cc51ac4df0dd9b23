from pipeline.report.cell_provenance import cell_run, cells_footer, with_task_fallback
from pipeline.report.merge import ReportInputs, merge
from pipeline.report.tables import Record

A = {"commit": "aaaaaaaaaaaa", "version": "0.10.0", "cpu": "AMD EPYC", "cpu_variant": "AVX2", "date": "2026-12-07"}
B = {"commit": "bbbbbbbbbbbb", "version": "0.10.0", "cpu": "Intel Xeon", "cpu_variant": "AVX-512", "date": "2026-12-08"}


def record(task, system, run, bleu=10.0, variant=""):
    return Record(task=task, system=system, eval_set="devtest", bleu=bleu, precisions=[], signature={}, run=run,
                  variant=variant)


def test_a_cell_takes_its_provenance_from_the_signature_of_the_build_that_scored_it():
    signature = {"finished": "2026-12-07T20:01:02+0000", "code": {"commit": "aaaaaaaaaaaa", "version": "0.10.0"},
                 "cpu": {"model": "AMD EPYC", "variant": "AVX2"}}
    assert cell_run(signature) == A
    assert cell_run({"finished": "2026-11-30T10:00:00+0000"}) == {  # built before signatures recorded the code
        "commit": "unknown", "version": "unknown", "cpu": "unknown", "cpu_variant": "unknown", "date": "2026-11-30"}
    assert with_task_fallback({}, {**B, "workers": 2}) == {**B, "per_task": True}
    assert with_task_fallback(A, B) == A


def test_a_partial_rerun_changes_the_provenance_of_the_cells_it_rebuilt_and_of_nothing_else():
    old = ReportInputs(profile="medium", eval_set="devtest", tasks=["ger-eng", "eng-ger"], systems=["PBMT", "TNMT"],
                       records=[record(t, s, A) for t in ("ger-eng", "eng-ger") for s in ("PBMT", "TNMT")])
    rerun = ReportInputs(profile="medium", eval_set="devtest", tasks=["eng-ger"], systems=["TNMT"],
                         records=[record("eng-ger", "TNMT", B, bleu=12.0)])
    merged = merge(old, rerun)
    assert {(r.task, r.system): r.run["commit"] for r in merged.records} == {
        ("ger-eng", "PBMT"): "aaaaaaaaaaaa", ("ger-eng", "TNMT"): "aaaaaaaaaaaa",
        ("eng-ger", "PBMT"): "aaaaaaaaaaaa", ("eng-ger", "TNMT"): "bbbbbbbbbbbb"}
    footer = cells_footer([(r.task, r.system, r.run) for r in merged.records], merged.tasks)
    assert "- commit aaaaaaaaaaaa (lmbr-pipeline 0.10.0), AMD EPYC (AVX2), 2026-12-07: ger-eng (all); eng-ger (PBMT)" \
        in footer
    assert "- commit bbbbbbbbbbbb (lmbr-pipeline 0.10.0), Intel Xeon (AVX-512), 2026-12-08: eng-ger (TNMT)" in footer
    assert ("This table mixes 2 commits (aaaaaaaaaaaa, bbbbbbbbbbbb), 2 CPU variants (AVX-512, AVX2) and "
            "2 CPU models (AMD EPYC, Intel Xeon).") in footer


def test_one_build_says_so_and_cells_from_before_are_named():
    footer = cells_footer([("ger-eng", "PBMT", A), ("ger-eng", "TNMT", A)], ["ger-eng"])
    assert footer.endswith("Every cell of this table comes from one commit on one kind of machine.\n")
    older = with_task_fallback({}, B)
    footer = cells_footer([("ger-eng", "PBMT", A), ("eng-ger", "PBMT", older)], ["ger-eng", "eng-ger"])
    assert "2026-12-08 (the task's run: recorded per task before cells carried their own): eng-ger (all)" in footer
    unknown = cell_run({"finished": "2026-11-30T10:00:00+0000"})
    assert "Some cells were built before artifacts recorded their commit." in cells_footer(
        [("ger-eng", "PBMT", unknown)], ["ger-eng"])
