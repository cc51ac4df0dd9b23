"""Smoke tests of the phrase-based and text benchmarks: pbmt_decode, phrase_table, posteriors, lm_train and
text_roundtrip; and of the analysis tool output_stats."""
from __future__ import annotations

from pathlib import Path

import pytest

TINY_DATA = Path(__file__).resolve().parents[2] / "data" / "tiny" / "de-en"


def test_pbmt_decode_gives_both_searches_the_same_outputs(run_benchmark, tiny_run):
    report = run_benchmark("pbmt_decode", "--table", str(tiny_run.one("phrases/*/phrase-table.npz")),
                           "--lm", str(tiny_run.one("lm/*/lm.bin")),
                           "--weights", str(tiny_run.one("mert/*/weights.json")),
                           "--input", str(tiny_run.one("pbmt/newstest2016-*/words.en")),
                           "--sentences", "5", "--processes", "1", "--runs", "1", "--stack-limit", "10")
    assert report["sentences"] == 5 and report["source_words"] > 0
    rows = report["results"]
    assert {(row["engine"], row["lattices"]) for row in rows} == {(engine, lattices) for engine in ("compiled", "python")
                                                                  for lattices in (False, True)}
    assert all(row["words_per_minute"] > 0 for row in rows)
    by_setting: dict = {}
    for row in rows:  # the compiled search is the Python search, step for step
        by_setting.setdefault(row["lattices"], set()).add(tuple(row["outputs_sha256"]))
    assert all(len(digests) == 1 for digests in by_setting.values()) and all(row["identical_across_engines"] for row in rows)


def test_phrase_table_builds_the_same_table_in_every_run(run_benchmark, tiny_run, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    report = run_benchmark("phrase_table", "--task", "ger-eng", "--profile", "tiny", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir), "--runs", "2",
                           "--scratch", str(scratch), output="--json")
    this = report["this"]
    assert this["same_output_every_run"] is True and this["phrase_pairs"] > 0
    assert set(this["median_phase_seconds"]) == {"extract", "count", "score"}


def test_posteriors_times_l_against_the_pbmt_decoding_of_the_same_sentences(run_benchmark, tiny_run):
    report = run_benchmark("posteriors", "--lattices", str(tiny_run.one("pbmt/newstest2016-*")),
                           "--codes", str(tiny_run.one("bpe/*/codes.en")),
                           "--vocab", str(tiny_run.one("vocab/*/vocab.en.json")), "--sentences", "3", "--runs", "1",
                           "--no-heap", "--engines", "openfst", "--work-dir", str(tiny_run.work_dir))
    assert report["sentences"] == 3 and len(report["pbmt_side_by_side_s"]) == 1
    assert set(report["ratio_to_pbmt"]) == {"full (openfst)", "200-best (openfst)"}
    assert all(ratio["posteriors_and_l"] > 0 for ratio in report["ratio_to_pbmt"].values())


def test_lm_train_builds_a_model_with_a_finite_perplexity(run_benchmark):
    pytest.importorskip("kenlm")
    report = run_benchmark("lm_train", "--text", str(TINY_DATA / "train.en.gz"), "--dev", str(TINY_DATA / "dev.en.gz"),
                           "--lines", "2000", "--dev-lines", "100", "--order", "3", "--runs", "1")
    assert report["order"] == 3 and report["binary_bytes"] > 0
    assert 1 < report["dev_perplexity"] < 10 ** 5 and 0 <= report["dev_oov_rate"] < 1
    assert set(report["ngram_counts"]) == {"1", "2", "3"}


def test_text_roundtrip_gives_the_lines_back(run_benchmark):
    report = run_benchmark("text_roundtrip", "--data-dir", str(TINY_DATA.parent), "--tasks", "de-en", "en-de",
                           "--train-lines", "300", "--merges", "200")
    assert report["benchmark"] == "text_roundtrip" and [r["task"] for r in report["results"]] == ["de-en", "en-de"]
    for result in report["results"]:
        assert result["dev_lines"] > 0 and result["bleu"] > 95  # raw -> words -> subwords -> text is lossless
        assert result["differing_beyond_spaces"] <= result["differing_lines"]


def test_output_stats_reads_every_system_of_the_run(run_benchmark, tiny_run, monkeypatch):
    monkeypatch.chdir(Path.cwd())  # output_stats changes to the checkout: the session gets its directory back after
    report = run_benchmark("output_stats", "--profile", "tiny", "--tasks", "ger-eng", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir))
    rows = {row["system"]: row for row in report["rows"]}
    assert {"PBMT", "FNMT", "LNMT", "TNMT", "LTNMT", "LNMT-lat"} <= set(rows)
    for row in rows.values():
        assert 0 <= row["bleu"] <= 100 and row["length_ratio"] >= 0 and 0 <= row["repeated_share"] <= 1
        assert row["4grams"] >= row["repeated_4grams"] >= 0
