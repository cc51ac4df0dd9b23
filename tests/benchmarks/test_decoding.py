"""Smoke tests of the decoding benchmarks: beam_speed, batch_invariance, cpu_speedups, lmbr_overhead, ct2_speed,
decode_profile, decode_processes, shrunken_ensemble, accelerated_pipeline and hf_export_agreement."""
from __future__ import annotations

import pytest

from tests.benchmarks.conftest import benchmark

RANDOM_TINY = ("--profile", "tiny", "--random-vocab", "200", "--threads", "1")


def test_beam_speed_measures_both_figures_with_identical_outputs(run_benchmark, tmp_path):
    report = run_benchmark("beam_speed", *RANDOM_TINY, "--sentences-a", "2", "--sentences-b", "4", "--beams", "1,2",
                           "--batch-sizes", "1,2", "--runs", "1")
    assert report["benchmark"] == "beam_speed" and report["machine"]["cpu_count"] >= 1
    assert [row["beam"] for row in report["figure_a"]] == [1, 2]
    assert [row["batch_sentences"] for row in report["figure_b"]] == [1, 2]
    assert all(row["batched_wpm"] > 0 and row["unbatched_wpm"] > 0 for row in report["figure_a"])
    assert all(row["identical_outputs"] for row in report["figure_a"])  # the same search, batched or not
    assert report["figure_b"][0]["sorted_speedup"] == 1.0  # against itself
    assert all((tmp_path / f"beam_speed_{figure}.png").is_file() for figure in ("beam", "sentences"))


def test_batch_invariance_compares_every_mode_with_decoding_alone(run_benchmark):
    report = run_benchmark("batch_invariance", *RANDOM_TINY, "--sentences", "6", "--batch-sizes", "2",
                           "--stream-pools", "2", "--variants", "", "--extra-beam", "0")
    modes = report["float32"]["NMT"]["modes"]
    assert {"batch2-sorted", "batch2-input", "unbatched"} <= set(modes)
    for comparison in modes.values():
        assert comparison["sentences"] == 6 and 0 <= comparison["identical"] <= 6


def test_cpu_speedups_times_each_configuration_on_a_trained_model(run_benchmark, tiny_run):
    report = run_benchmark("cpu_speedups", "--model", str(tiny_run.one("nmt-average/gru-seed1-*")), "--source",
                           str(tiny_run.one("subwords/newstest2016-*/bpe.de.gz")), "--sentences", "4", "--runs", "1",
                           "--threads", "1")
    names = [row["configuration"] for row in report["results"]]
    assert names == ["baseline", "int8", "precompute_embeddings", "all", "baseline, 1 thread"]
    assert all(row["wpm"] > 0 and row["sentences"] == 4 for row in report["results"])
    assert report["results"][0]["same_1best"] == 4 and report["results"][0]["speedup"] == 1.0


def test_lmbr_overhead_decodes_with_and_without_l(run_benchmark, tiny_run):
    report = run_benchmark("lmbr_overhead", "--model", str(tiny_run.one("nmt-average/gru-seed1-*")),
                           "--source", str(tiny_run.one("subwords/newstest2016-*/bpe.de.gz")),
                           "--lattices", str(tiny_run.one("pbmt/newstest2016-*")),
                           "--codes", str(tiny_run.one("bpe/*/codes.en")),
                           "--vocab", str(tiny_run.one("vocab/*/vocab.en.json")),
                           "--sentences", "4", "--runs", "1", "--threads", "1")
    assert set(report["runs"]) == {"plain", "lmbr"}
    assert all(run["seconds"] > 0 and run["row_steps"] > 0 for run in report["runs"].values())
    assert report["lmatrix"]["sentences"] == 4 and report["lmatrix"]["nnz"] > 0


def test_ct2_speed_compares_both_decoders_in_both_precisions(run_benchmark):
    pytest.importorskip("ctranslate2")
    report = run_benchmark("ct2_speed", *RANDOM_TINY, "--sentences", "4", "--runs", "1")
    assert set(report["results"]) == {"fp32", "int8"}
    for result in report["results"].values():
        assert result["ct2_wpm"] > 0 and result["ours_wpm"] > 0
        assert 0 <= result["same_1best_sentences"] <= 4 and len(result["ratio_per_run"]) == 1


def test_ct2_speed_isolated_runs_decode_the_same_as_in_one_process(run_benchmark):
    """--isolate: each timed run in a process of its own; the outputs are those of the one-process runs."""
    pytest.importorskip("ctranslate2")
    shared = run_benchmark("ct2_speed", *RANDOM_TINY, "--sentences", "4", "--runs", "1")
    isolated = run_benchmark("ct2_speed", *RANDOM_TINY, "--sentences", "4", "--runs", "2", "--isolate")
    assert isolated["isolated"] and not shared["isolated"]
    for precision, result in isolated["results"].items():
        assert len(result["ct2_runs_s"]) == len(result["ours_runs_s"]) == 2
        assert all(seconds > 0 for seconds in result["ct2_runs_s"] + result["ours_runs_s"])
        for key in ("same_1best_sentences", "ours_target_tokens", "ct2_target_tokens", "ours_cpu_capability"):
            assert result[key] == shared["results"][precision][key], (precision, key)


def test_ct2_speed_holds_both_decoders_to_avx2_in_their_own_processes(run_benchmark):
    pytest.importorskip("ctranslate2")
    report = run_benchmark("ct2_speed", *RANDOM_TINY, "--sentences", "2", "--runs", "1", "--isa", "avx2")
    assert report["isolated"] and report["isa_env"]["CT2_FORCE_CPU_ISA"] == "AVX2"
    assert {result["ours_cpu_capability"] for result in report["results"].values()} == {"AVX2"}


def test_decode_profile_splits_the_steps_time_into_its_four_parts(run_benchmark):
    report = run_benchmark("decode_profile", *RANDOM_TINY, "--sentences", "6", "--runs", "1")
    assert set(report["results"]) == {"fp32", "int8"} and report["machine"]["isa"] == "native"
    for precision, result in report["results"].items():
        parts = result["seconds"]
        assert set(parts) == {"matrix products", "ancestry kernels", "other operations", "python"}
        assert parts["matrix products"] > 0 and parts["ancestry kernels"] > 0  # the profile's default path
        assert sum(parts.values()) == pytest.approx(result["profiled_wall_s"], abs=0.01)
        assert result["steps"] > 0 and result["ms_per_step"] > 0 and result["wpm"] > 0
        assert result["topk_speedup"] == pytest.approx(result["plain_topk_wall_s"] / result["wall_s"], rel=0.01)
    assert "quantized::linear_dynamic" in report["results"]["int8"]["top_operators_s"]


def test_decode_profile_plain_topk_swaps_the_decoders_top_k_and_restores_it():
    import torch

    import pipeline.decode.topk as topk

    blocks = topk.row_topk
    grid = torch.zeros(1, 8 * 4 * topk.CHUNK)
    grid[0, -1] = 1.0
    with benchmark("decode_profile").plain_topk():
        assert topk.row_topk is not blocks and topk.row_topk(grid, 4)[1][0, 0].item() == grid.shape[1] - 1
    assert topk.row_topk is blocks


def test_decode_processes_child_decodes_its_part_when_told(monkeypatch, capsys):
    """A child process's work, in this process: ready, then its part decoded on "go" (spawning the benchmark's
    processes, each importing torch, takes longer than a smoke test may)."""
    import io

    import torch

    threads = torch.get_num_threads()
    monkeypatch.setattr("sys.stdin", io.StringIO("go\n"))
    benchmark("decode_processes").child(1, 0, 2, 4)
    torch.set_num_threads(threads)
    ready, seconds = capsys.readouterr().out.split()
    assert ready == "ready" and float(seconds) > 0


def test_decode_processes_reports_every_mode_against_one_thread(run_benchmark, monkeypatch):
    """The report, with the processes' wall times faked: threads x parts -> 4 / (threads x parts) seconds."""
    module = benchmark("decode_processes")
    monkeypatch.setattr(module, "in_processes", lambda args, threads, parts: 4.0 / (threads * parts))
    report = run_benchmark("decode_processes", "--threads", "2", "--runs", "3", output="--json")
    assert report["seconds"]["1 thread"] == [4.0, 4.0, 4.0]
    assert report["speedup_vs_one_thread"] == {"1 thread": 1.0, "2 threads": 2.0, "2 processes x 1 thread": 2.0}
    assert report["model"]["weights"] == "random, seed 0" and report["machine"]["cpu_count"] >= 1


def test_shrunken_ensemble_sets_the_four_models_side_by_side(run_benchmark, tiny_run):
    report = run_benchmark("shrunken_ensemble", "--system", str(tiny_run.one("nmt-system/FNMT-*/system.json")),
                           "--source", str(tiny_run.one("subwords/newstest2016-*/bpe.de.gz")),
                           "--reference", str(tiny_run.one("subwords/newstest2016-*/bpe.en.gz")),
                           "--sentences", "4", "--profile", "tiny", "--runs", "1", "--threads", "1")
    models = report["models"]
    assert set(models) == {"ensemble", "unfolded", "shrunken", "first member"}
    # unfolding is exact: the unfolded network's cross-entropy is the renormalised ensemble's
    assert models["unfolded"]["cross_entropy"] == pytest.approx(models["ensemble"]["cross_entropy"], abs=1e-3)
    assert models["shrunken"]["parameters"] < models["unfolded"]["parameters"]


def test_accelerated_pipeline_reproduces_the_pipelines_outputs(run_benchmark, tiny_run):
    report = run_benchmark("accelerated_pipeline", "--task", "ger-eng", "--profile", "tiny", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir), "--variant", "",
                           "--sentences", "4", "--runs", "1")
    assert report["sentences"] == 4 and report["source_words"] > 0
    assert report["identical_outputs"]["FNMT"] is True  # the benchmark decodes as DecodeFNMT did
    assert any(name.startswith("LNMT") and same for name, same in report["identical_outputs"].items())
    lnmt = next(name for name in report["median_seconds"] if name.startswith("LNMT"))
    assert set(report["median_seconds"][lnmt]) == {"phrase-based decoding", "posteriors + L", "neural decoding",
                                                   "total"}
    assert 0 < report["lnmt_share_of_fnmt_wpm"][lnmt]


def test_hf_export_agreement_finds_generate_on_the_exported_model_equal_to_our_full_beam_search(run_benchmark,
                                                                                                 tiny_run):
    pytest.importorskip("transformers")
    report = run_benchmark("hf_export_agreement", "--model", str(tiny_run.one("nmt-average/transformer-seed1-*")),
                           "--source", str(tiny_run.one("subwords/newstest2016-*/bpe.de.gz")), "--profile", "tiny",
                           "--sentences", "6", "--threads", "1")
    assert report["sentences"] == 6
    for name in ("ours", "ours_full_beam"):
        result = report["results"][name]
        parts = (result["same_1best"], result["generate_scores_higher"], result["generate_scores_lower"],
                 result["level_scores"])
        assert sum(parts) == 6, parts
    assert report["results"]["ours_full_beam"]["same_1best"] == 6  # the same search on an exact export
