"""benchmarks/tuning_bootstrap.py on the session's tiny system: the rescoring rows' choice of mu on resampled tuning
sentences, and the devtest BLEU of the choices."""
from __future__ import annotations

import pytest


def test_tuning_bootstrap_reports_each_mus_share_and_decodes_the_chosen_ones(tiny_run, exported_systems,
                                                                            run_benchmark, tmp_path):
    import luigi

    from tasks.evaluate import EvaluateSystem
    from tests.benchmarks.conftest import benchmark

    task = exported_systems[0]["FNMT"]
    params = {"task_name": "ger-eng", "profile": "tiny", "work_dir": str(tiny_run.work_dir),
              "config_dir": str(tiny_run.config_dir), "data_dir": task.data_dir, "cache_dir": task.cache_dir,
              "processes": 1}
    report = run_benchmark("tuning_bootstrap", "--profile", "tiny", "--task", "ger-eng", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(tiny_run.config_dir), "--data-dir",
                           task.data_dir, "--cache-dir", task.cache_dir, "--processes", "1",
                           "--systems", "FNMT-lat", "LTNMT-lat", "--samples", "40", "--min-share", "0")
    assert report["benchmark"] == "tuning_bootstrap" and report["complete"] is True and report["samples"] == 40
    for system in ("FNMT-lat", "LTNMT-lat"):
        found = report["systems"][system]
        shares = [row["share"] for row in found["points"]]
        assert sum(shares) == pytest.approx(1.0) and found["sentences"] == 10
        # the tiny profile tunes every mu on every sentence: the choice on the sentences as they are is the tuned one
        assert found["chosen_as_is"] == found["chosen"]
        decoded = {row["lattice_weight"]: row["devtest_bleu"] for row in found["points"]}  # --min-share 0: all
        assert found["spread"] == round(max(decoded.values()) - min(decoded.values()), 2)
        assert found["share_within_tolerance"] == pytest.approx(sum(
            row["share"] for row in found["points"] if abs(row["devtest_bleu"] - decoded[found["chosen"]]) <= 0.3))
        table = EvaluateSystem(system=system, split="newstest2016", **params)
        assert luigi.build([table], local_scheduler=True, log_level="WARNING")
        assert decoded[found["chosen"]] == round(table.signature()["stats"]["bleu"]["score"], 2)
        # a one-point grid of the tuned mu (the copy the other mu are decoded with) gives the table's own row
        configs = benchmark("tuning_bootstrap").point_configs(tiny_run.config_dir, tmp_path / system, "tiny",
                                                              found["chosen"])
        again = EvaluateSystem(system=system, split="newstest2016", **{**params, "config_dir": str(configs)})
        assert luigi.build([again], local_scheduler=True, log_level="WARNING")
        assert again.artifact_dir() != table.artifact_dir()
        assert again.signature()["stats"]["bleu"]["score"] == table.signature()["stats"]["bleu"]["score"]


@pytest.mark.parametrize("evidence", [False, True])
def test_tuning_bootstrap_repeats_the_search_choice_and_imposes_each_search(tiny_run, exported_systems,
                                                                           run_benchmark, tmp_path, evidence):
    """LTNMT's search, tuned on a window of its own over both searches (and, with search_evidence, over two
    evidence spaces): each candidate's share of the resampled choices, and the devtest BLEU of each search over the
    tuned evidence space (another space would tune LMBR again: left undecoded); imposing the tuned search gives
    the table's own row."""
    import shutil

    import luigi

    from tasks.evaluate import EvaluateSystem
    from tests.benchmarks.conftest import benchmark

    configs = tmp_path / "configs"
    shutil.copytree(tiny_run.config_dir, configs)
    module = benchmark("tuning_bootstrap")
    keys = {"grid_search": '["free", "anchored"]', "search_sentences": "10"}
    if evidence:
        keys.update(search_evidence="true", grid_nbest="[0, 3]")
    module.set_profile_keys(configs / "profiles" / "tiny.toml", "lmbr", keys)
    task = exported_systems[0]["FNMT"]
    params = {"task_name": "ger-eng", "profile": "tiny", "work_dir": str(tiny_run.work_dir),
              "config_dir": str(configs), "data_dir": task.data_dir, "cache_dir": task.cache_dir, "processes": 1}
    table = EvaluateSystem(system="LTNMT", split="newstest2016", **params)
    assert luigi.build([table], local_scheduler=True, log_level="WARNING")
    report = run_benchmark("tuning_bootstrap", "--profile", "tiny", "--task", "ger-eng", "--work-dir",
                           str(tiny_run.work_dir), "--config-dir", str(configs), "--data-dir", task.data_dir,
                           "--cache-dir", task.cache_dir, "--processes", "1", "--systems", "LTNMT",
                           "--samples", "40", "--min-share", "0")
    found = report["systems"]["LTNMT"]
    points = found["points"]
    assert found["sentences"] == 10 and sum(row["share"] for row in points) == pytest.approx(1.0)
    assert len(points) == (4 if evidence else 2) and {row["search"] for row in points} == {"free", "anchored"}
    assert ("nbest" in found["chosen"]) == evidence and all(("nbest" in row) == evidence for row in points)
    top = max(row["tune_bleu"] for row in points)
    if sum(row["tune_bleu"] == top for row in points) == 1:  # no tie: the choice as the sentences are is tuned
        tuned = next(row for row in points if row["tune_bleu"] == top)
        assert found["chosen"] == found["chosen_as_is"] == {k: tuned[k] for k in ("search", "nbest") if k in tuned}
    chosen = found["chosen"]["search"]
    same_space = [row for row in points if row.get("nbest") == found["chosen"].get("nbest")]
    assert len(same_space) == 2 and all("devtest_bleu" in row for row in same_space)  # --min-share 0: both
    assert all("devtest_bleu" not in row and row["undecoded"] for row in points if row not in same_space)
    decoded = {row["search"]: row["devtest_bleu"] for row in same_space}
    assert decoded[chosen] == round(table.signature()["stats"]["bleu"]["score"], 2)
    assert found["spread"] == round(abs(decoded["free"] - decoded["anchored"]), 2)
    assert found["share_within_tolerance"] == pytest.approx(sum(
        row["share"] for row in same_space if abs(row["devtest_bleu"] - decoded[chosen]) <= 0.3))
    if not evidence:  # the copy that imposes the tuned search (no TuneSearch) decodes the table's own row
        imposed = module.search_configs(configs, tmp_path / "imposed", "tiny", chosen)
        again = EvaluateSystem(system="LTNMT", split="newstest2016", **{**params, "config_dir": str(imposed)})
        assert luigi.build([again], local_scheduler=True, log_level="WARNING")
        assert again.artifact_dir() != table.artifact_dir()
        assert again.signature()["stats"]["bleu"]["score"] == table.signature()["stats"]["bleu"]["score"]
