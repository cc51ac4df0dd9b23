"""Smoke tests of the serving benchmarks: serve_load and terms, on the session's exported tiny systems."""
from __future__ import annotations


def test_serve_load_answers_every_request_as_offline(run_benchmark, tiny_run):
    source = tiny_run.one("tokenized/newstest2016-*/raw.de.gz")
    report = run_benchmark("serve_load", "--system", str(tiny_run.export("FNMT")), "--input", str(source),
                           "--sentences", "9", "--clients", "1,2", "--requests", "6", "--seconds", "30",
                           "--probe-requests", "2", "--threads", "1", "--decode-processes", "0", output="--json")
    assert [level["clients"] for level in report["levels"]] == [1, 2]
    for level in report["levels"]:
        assert level["answered"] == level["requests"] == 6 and level["failed"] == 0
        assert level["different"] == 0  # the server translates as offline
        assert level["words_per_minute"] > 0 and level["latency_seconds"]["p50"] > 0
    assert report["offline"]["words_per_minute"] > 0 and report["server_exit_status"] == 0
    assert report["probe"]["answered"] == 2


def test_terms_seeds_terms_and_places_them(run_benchmark, tiny_run):
    lnmt = tiny_run.export("LNMT")
    report = run_benchmark("terms", "--systems", str(lnmt),
                           "--source", str(tiny_run.one("tokenized/newstest2016-*/raw.de.gz")),
                           "--reference", str(tiny_run.one("tokenized/newstest2016-*/raw.en.gz")),
                           "--phrase-table", str(lnmt / "pbmt" / "phrase-table.npz"), "--sentences", "9",
                           "--runs", "1", "--threads", "1", output="--json")
    (system,) = report["systems"]
    assert system["system"] == "LNMT" and system["terms"] > 0
    assert system["term_rate"]["terms"] >= 0.99  # the constraint places (almost) every term
    assert set(system["bleu"]) == {"plain", "terms"} and system["speed_cost"] > 0
