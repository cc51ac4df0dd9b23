"""Stage times read back from the signatures of a run's artifacts, and the least wall time they need."""
import itertools
import json
import random

from pipeline.report.stage_times import (least_wall_time, longest_chain, stage_seconds, stage_table, task_times,
                                         write_stage_times)


def signature(folder, seconds):
    folder.mkdir(parents=True)
    (folder / "signature.json").write_text(json.dumps({"seconds": seconds}))
    return folder


def test_stage_times_sum_the_runs_artifacts_per_stage_in_pipeline_order(tmp_path):
    profile = tmp_path / "medium"
    seed1 = signature(profile / "ger-eng" / "nmt" / "gru-seed1-aa", 300.0)
    seed2 = signature(profile / "ger-eng" / "nmt" / "gru-seed2-bb", 306.0)
    align = signature(profile / "ger-eng" / "align" / "align-cc", 60.0)
    custom = signature(profile / "ger-eng" / "custom" / "x-dd", 6.0)
    signature(profile / "ger-eng" / "nmt" / "gru-seed1-old", 999.0)  # obsolete: not in the run's graph
    unfinished = profile / "ger-eng" / "pbmt" / "dev-ee"
    unfinished.mkdir(parents=True)
    other = signature(profile / "eng-ger" / "align" / "align-ff", 30.0)
    graph = {align: [], seed1: [], seed2: [], custom: [align, seed2], unfinished: [custom], other: []}
    times = stage_seconds(graph, ["ger-eng", "eng-ger"])
    assert times == {"ger-eng": {"nmt": 606.0, "align": 60.0, "custom": 6.0}, "eng-ger": {"align": 30.0}}
    header, rows = stage_table(times)
    assert header == ["stage (minutes)", "ger-eng", "eng-ger", "all tasks"]
    assert rows == [["alignment", 1.0, 0.5, 1.5], ["NMT training", 10.1, 0.0, 10.1], ["custom", 0.1, 0.0, 0.1],
                    ["all stages", 11.2, 0.5, 11.7]]
    total, chain = longest_chain(graph)
    assert total == 312.0 and chain[:2] == [seed2, custom] and chain[2:] in ([], [unfinished])  # unfinished: 0 s
    times = task_times(graph, ["ger-eng", "eng-ger"])
    assert times["ger-eng"]["chain"] == ["ger-eng nmt", "ger-eng custom"] and times["ger-eng"]["chain_seconds"] == 312.0
    assert times["eng-ger"] == {"stages": {"align": 30.0}, "chain_seconds": 30.0, "chain": ["eng-ger align"]}
    paths = write_stage_times(tmp_path / "out", times, ["ger-eng", "eng-ger"], "title", workers=3)
    assert [p.name for p in paths] == ["stage_times.md", "stage_times.csv", "stage_times.png"]
    assert (tmp_path / "out" / "stage_times.csv").read_text().splitlines()[1] == "alignment,1.0,0.5,1.5"
    summary = (tmp_path / "out" / "stage_times.md").read_text().splitlines()[-1]
    assert summary.startswith("11.7 minutes of work; the longest chain of builds 5.2 minutes (ger-eng nmt -> "
                              "ger-eng custom")
    assert summary.endswith("so at least 5.2 minutes of wall time on 3 worker(s) of the same speed.")
    assert (tmp_path / "out" / "stage_times.png").read_bytes()[:4] == b"\x89PNG"


def test_longest_chain_equals_the_heaviest_path_found_by_brute_force(tmp_path):
    rng = random.Random(7)
    for trial in range(10):
        folders = [signature(tmp_path / str(trial) / "t" / "s" / f"a{k}", float(rng.randint(1, 50))) for k in range(7)]
        graph = {f: [g for g in folders[:k] if rng.random() < 0.4] for k, f in enumerate(folders)}
        seconds = {f: float(json.loads((f / "signature.json").read_text())["seconds"]) for f in folders}
        best = 0.0
        for size in range(1, len(folders) + 1):
            for path in itertools.combinations(folders, size):  # in build order: each built from the one before
                if all(path[i] in graph[path[i + 1]] for i in range(size - 1)):
                    best = max(best, sum(seconds[f] for f in path))
        total, chain = longest_chain(graph)
        assert total == best == sum(seconds[f] for f in chain)
        assert all(chain[i] in graph[chain[i + 1]] for i in range(len(chain) - 1))


def test_a_task_without_times_is_named_not_shown_as_zeros(tmp_path):
    align = signature(tmp_path / "medium" / "ger-eng" / "align" / "align-aa", 120.0)
    gone = tmp_path / "elsewhere" / "medium" / "eng-ger" / "align" / "align-bb"  # a merged task's deleted work folder
    times = task_times({align: [], gone: []}, ["ger-eng", "eng-ger"])
    assert list(times) == ["ger-eng"]
    write_stage_times(tmp_path / "out", times, ["ger-eng", "eng-ger"], "title")
    csv = (tmp_path / "out" / "stage_times.csv").read_text().splitlines()
    assert csv[0] == "stage (minutes),ger-eng,all tasks" and csv[1] == "alignment,2.0,2.0"
    assert (tmp_path / "out" / "stage_times.md").read_text().splitlines()[-1] == (
        "No stage times for eng-ger: this report holds none of their builds.")


def test_the_least_wall_time_comes_from_the_kept_times_of_every_task():
    """Merged tasks from several runs: the work is the sum, the longest chain the longest task's."""
    times = {"ger-eng": {"stages": {"nmt": 600.0, "align": 60.0}, "chain_seconds": 600.0, "chain": ["ger-eng nmt"]},
             "jpn-eng": {"stages": {"nmt": 1200.0}, "chain_seconds": 1200.0, "chain": ["jpn-eng bpe", "jpn-eng nmt"]},
             "chi-eng": {"stages": {"nmt": 60.0}, "chain_seconds": None, "chain": []}}  # its chain not kept
    assert least_wall_time(times, 2) == (
        "32.0 minutes of work; the longest chain of builds 20.0 minutes (jpn-eng bpe -> jpn-eng nmt); so at least "
        "20.0 minutes of wall time on 2 worker(s) of the same speed.")
    assert least_wall_time(times, 1).endswith("so at least 32.0 minutes of wall time on 1 worker(s) of the same speed.")
