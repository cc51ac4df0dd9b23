"""Smoke test of hf_export_hybrid on the session's tiny de-en pipeline (tuned): TNMT, LTNMT, TNMT-lat and LTNMT-lat
decoded again with their Transformer exported to `transformers` must give the pipeline's own outputs (TNMT's model,
trained for 30 updates, says little; L and the lattices carry the others), and our models' scores."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")


def test_the_exported_transformer_translates_as_the_pipelines_systems(run_benchmark, exported_systems):
    task = exported_systems[0]["TNMT"]
    report = run_benchmark("hf_export_hybrid", "--profile", "tiny", "--task", "ger-eng", "--work-dir", task.work_dir,
                           "--data-dir", task.data_dir, "--config-dir", task.config_dir, "--cache-dir",
                           task.cache_dir, "--systems", "TNMT,LTNMT,TNMT-lat,LTNMT-lat", "--threads", "1",
                           "--outputs", "--ours")
    assert report["benchmark"] == "hf_export_hybrid" and report["machine"]["cpu_count"] >= 1
    rows = {row["system"]: row for row in report["systems"]}
    assert list(rows) == ["TNMT", "LTNMT", "TNMT-lat", "LTNMT-lat"]
    for system, row in rows.items():
        assert row["split"] == "newstest2016" and row["sentences"] == 9
        assert row["outputs"]["exported"] == row["outputs"]["pipeline"], system
        assert row["identical_lines"] == 9 and row["bleu_difference"] == 0 and row["within_0.1_bleu"]
        assert row["bleu_pipeline"] == row["bleu_exported"] and row["wpm_exported"] > 0
        # our models decoding here: the same subwords, and scores equal up to float rounding
        assert row["ours_here"]["identical_bpe_lines"] == 9 and row["ours_here"]["wpm"] > 0
        assert row["ours_here"]["max_score_difference"] < 1e-3, system
    assert rows["LTNMT"]["lmbr"]["nmt_lambda"] > 0 and "lattice_weight" in rows["TNMT-lat"]


def test_a_system_not_built_is_named_with_what_to_run(run_benchmark, tmp_path):
    with pytest.raises(SystemExit, match="TNMT is not built.*reproduce-table"):
        run_benchmark("hf_export_hybrid", "--profile", "tiny", "--task", "ger-eng", "--work-dir",
                      str(tmp_path / "work"), "--systems", "TNMT", "--sentences", "3")
