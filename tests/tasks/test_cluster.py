"""Cluster mode and fault tolerance, on the tiny profile of ger-eng (PBMT, FNMT, LNMT) over a small de-en corpus:

- the heavy stages as jobs of a real single-node Slurm (decoding in 2 shards) give the same Table 1 as the local run;
- two clean runs in two work folders build identical artifacts (every file's content, timings aside);
- kill -9 of the whole run at 10 random points, rerunning each time, ends with the same results.json and the same
  artifacts;
- scancel of a running Slurm job at 10 random points fails the run with the job's log path each time, and reruns
  complete it.
Training stops after a number of updates (not seconds), so every run trains the same models however busy the machine.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.data.resolver import CHECKOUT
from pipeline.io import TMP_MARK
from tests.conftest import write_deen_folder
from tests.tasks.helpers import artifact_contents
from tests.tasks.test_nmt_tasks import quick_configs

SYSTEMS = "PBMT,FNMT,LNMT"
BATCH_STAGES = {"align", "phrases", "lm", "mert", "pbmt", "nmt", "nmt-decode"}


def fixed_configs(tmp_path: Path) -> Path:
    """The tiny profile trained by updates only, LMBR untuned (the tuning grid is tested elsewhere)."""
    folder = quick_configs(tmp_path)
    path = folder / "profiles" / "tiny.toml"
    text = re.sub(r"^budget_seconds = .*$", "budget_seconds = 3600", path.read_text(), flags=re.M)
    text = re.sub(r"^max_updates = .*$", "max_updates = 20", text, flags=re.M)
    path.write_text(re.sub(r"^tune = .*$", "tune = false", text, flags=re.M))
    return folder


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cluster")
    data = root / "data"
    write_deen_folder(data)
    return {"root": root, "data": data, "configs": fixed_configs(root)}


def command(setup: dict[str, Path], name: str) -> list[str]:
    root = setup["root"]
    return [sys.executable, "-m", "tasks.reproduce", "--tasks", "ger-eng", "--profile", "tiny", "--systems", SYSTEMS,
            "--table2-tasks", "none", "--data-dir", str(setup["data"]), "--config-dir", str(setup["configs"]),
            "--work-dir", str(root / name / "work"), "--out", str(root / name / "out"), "--processes", "1"]


def environment(setup: dict[str, Path], scheduler: str) -> dict[str, str]:
    """luigi.cfg of the checkout plus a [cluster] section (LUIGI_CONFIG_PATH adds a file on top)."""
    extra = setup["root"] / f"luigi-{scheduler}.cfg"
    # Slurm: PBMT and NMT decoding of a split in 2 jobs each, merged in order
    shards = "decode_shards = 2\n" if scheduler == "slurm" else ""
    extra.write_text(f"[cluster]\nscheduler = {scheduler}\npoll_seconds = 0.3\n{shards}")
    return dict(os.environ, LUIGI_CONFIG_PATH=str(extra), TQDM_DISABLE="1")


def start(setup: dict[str, Path], name: str, scheduler: str = "local") -> subprocess.Popen:
    return subprocess.Popen(command(setup, name), cwd=CHECKOUT, env=environment(setup, scheduler),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def complete(setup: dict[str, Path], name: str, scheduler: str = "local") -> float:
    started = time.monotonic()
    process = start(setup, name, scheduler)
    out, err = process.communicate(timeout=1800)
    assert process.returncode == 0, err[-3000:]
    return time.monotonic() - started


def scores(setup: dict[str, Path], name: str) -> list[tuple]:
    """What Table 1 shows (timings differ from run to run and are left out)."""
    records = json.loads((setup["root"] / name / "out" / "results.json").read_text())
    return [(r["task"], r["system"], r["eval_set"], r["bleu"], r["precisions"], r["signature"]) for r in records]


def assert_nothing_looks_complete_that_is_not(work: Path) -> None:
    """Every artifact folder either carries its signature (renamed into place whole) or is a marked temporary.
    (nmt-train-state holds a training run's checkpoints, each written atomically, to resume from.)"""
    for folder in work.glob("*/*/*/*"):
        if folder.name.endswith(".parts"):  # the shards of a sharded decoding: each written whole, with part.json
            for part in folder.iterdir():
                assert (part / "part.json").exists() or TMP_MARK in part.name, part
        elif folder.is_dir() and folder.parent.name != "nmt-train-state":
            assert (folder / "signature.json").exists() or TMP_MARK in folder.name, folder


@pytest.fixture(scope="module")
def reference(setup) -> dict:
    seconds = complete(setup, "reference")
    return {"seconds": seconds, "scores": scores(setup, "reference"),
            "artifacts": artifact_contents(setup["root"] / "reference" / "work"),
            "table1": table_only(setup["root"] / "reference" / "out" / "table1.md")}


def table_only(path: Path) -> str:
    """A table's markdown without what produced it (the run's date, wall time and machine follow the table)."""
    return path.read_text().split("\nProduced by:")[0]


def assert_same_artifacts(setup: dict[str, Path], name: str, reference: dict) -> None:
    built = artifact_contents(setup["root"] / name / "work")
    assert sorted(built) == sorted(reference["artifacts"])
    differing = [path for path, content in built.items() if content != reference["artifacts"][path]]
    assert not differing, f"{len(differing)} artifact files differ from the reference run's: {differing[:10]}"
    assert table_only(setup["root"] / name / "out" / "table1.md") == reference["table1"]


def test_two_clean_runs_build_identical_artifacts(setup, reference):
    """Seeded alignment (eflomal), training stopped after a number of updates, gzip without timestamps: the same
    command in another work folder writes the same content into every file of every artifact."""
    complete(setup, "again")
    assert len(reference["artifacts"]) > 100  # data, LM, alignment, phrases, MERT, lattices, L, NMT, decodings
    assert_same_artifacts(setup, "again", reference)


def test_the_reference_run_has_every_system(setup, reference):
    assert [s[1] for s in reference["scores"]] == ["PBMT", "FNMT", "LNMT", "ROUNDTRIP"]
    assert reference["scores"][0][3] > 10  # PBMT on the grammar's sentences
    out = setup["root"] / "reference" / "out"
    rows = [line.split(",") for line in (out / "significance.csv").read_text().splitlines()[1:]]
    assert sorted((r[1], r[2], r[3]) for r in rows) == [("FNMT", "PBMT", m) for m in ("BLEU", "chrF2")] + [
        ("LNMT", b, m) for b in ("FNMT", "PBMT") for m in ("BLEU", "chrF2")]
    assert all(0 < float(r[-1]) <= 1 for r in rows)  # p-values
    assert (out / "table1_chrf.csv").read_text().startswith("system,ger-eng\nPBMT,")


def test_heavy_stages_run_as_slurm_jobs_with_the_local_numbers(setup, reference, slurm_cluster):
    complete(setup, "slurm", scheduler="slurm")
    assert scores(setup, "slurm") == reference["scores"]
    logs = sorted((setup["root"] / "slurm" / "work" / "tiny" / "ger-eng" / "logs").glob("*.log"))
    assert {log.name.split(".")[0] for log in logs} == BATCH_STAGES
    sharded = [log.name for log in logs if log.name.split(".")[0] in ("pbmt", "nmt-decode")]
    assert sharded and all(re.search(r"\.00[01]\.\d+\.log$", name) for name in sharded), sharded
    assert not list((setup["root"] / "slurm" / "work").rglob("*.parts"))  # merged and removed
    for log in logs:
        assert "[job] done:" in log.read_text(), log
    assert not list((setup["root"] / "slurm" / "work").rglob("*.job"))  # no job id left behind


def test_kill_9_at_ten_random_points_then_resume(setup, reference):
    """Kill points uniform over the length of an uninterrupted run; a run that ends before its kill point is checked
    and its work folder emptied, so the kills keep landing all along the pipeline."""
    rng = random.Random(7)
    work = setup["root"] / "killed" / "work"
    kills, rounds = 0, 0
    while kills < 10:
        process = start(setup, "killed")
        try:
            process.wait(timeout=rng.uniform(1.0, reference["seconds"]))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            kills += 1
            assert_nothing_looks_complete_that_is_not(work)
        else:
            assert process.returncode == 0, process.stderr.read()[-3000:]
            assert scores(setup, "killed") == reference["scores"]
            assert_same_artifacts(setup, "killed", reference)
            assert not [p for p in work.rglob("*") if TMP_MARK in p.name]
            shutil.rmtree(work)
            rounds += 1
    complete(setup, "killed")
    assert scores(setup, "killed") == reference["scores"]
    assert_same_artifacts(setup, "killed", reference)
    assert_nothing_looks_complete_that_is_not(work)
    assert not [p for p in work.rglob("*") if TMP_MARK in p.name]  # the resumed stages cleaned their leftovers


def test_scancel_of_running_jobs_fails_with_the_log_then_resumes(setup, reference, slurm_cluster):
    rng = random.Random(11)
    for cancelled in range(10):
        process = start(setup, "scancelled", scheduler="slurm")
        job = _cancel_a_running_job(process, skip=rng.randrange(2), delay=rng.uniform(0.0, 0.5))
        if job is None:  # every batch job of the DAG has run (the longest chains go first): enough cancels seen
            assert cancelled >= 3, f"the run completed before cancel {cancelled + 1}"
            assert process.wait(timeout=600) == 0
            break
        out, err = process.communicate(timeout=600)
        assert process.returncode == 1
        message = re.search(rf"Slurm job {job} for (\S+) of ger-eng ended CANCELLED[^;]*; log: (\S+)", err)
        assert message, err[-3000:]
        assert Path(message.group(2)).exists()
        assert_nothing_looks_complete_that_is_not(setup["root"] / "scancelled" / "work")
    complete(setup, "scancelled", scheduler="slurm")
    assert scores(setup, "scancelled") == reference["scores"]
    assert_nothing_looks_complete_that_is_not(setup["root"] / "scancelled" / "work")


def _cancel_a_running_job(process: subprocess.Popen, skip: int, delay: float) -> str | None:
    """scancel the (skip + 1)-th job seen running, or the next one if that job ends before scancel reaches it."""
    while (job := _running_job(process, skip, delay)) is not None:
        if subprocess.run(["scancel", job], capture_output=True).returncode == 0:
            return job
        skip = 0
    return None


def _running_job(process: subprocess.Popen, skip: int, delay: float) -> str | None:
    """The id of the (skip + 1)-th job of this run seen running, `delay` seconds after it was seen."""
    seen: list[str] = []
    while process.poll() is None:
        running = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True,
                                 text=True).stdout.split()
        seen += [job for job in running if job not in seen]
        if len(seen) > skip and seen[skip] in running:
            time.sleep(delay)
            still = subprocess.run(["squeue", "-h", "-j", seen[skip], "-t", "RUNNING", "-o", "%i"],
                                   capture_output=True, text=True).stdout.strip()
            if still:
                return seen[skip]
            skip = len(seen)  # it ended meanwhile: take the next one
        time.sleep(0.1)
    return None


def scheduler_clients(port: int) -> set[int]:
    """The process ids of the workers a luigid on loopback knows (its /api/worker_list)."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/worker_list", timeout=10) as reply:
        return {int(worker["pid"]) for worker in json.load(reply)["response"] if "pid" in worker}


def test_two_workers_on_one_luigid_build_the_dag_once(setup, reference, tmp_path):
    """A central scheduler (luigid) on loopback; two reproduce-table processes share it and one work folder."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "logs").mkdir()
    luigid = subprocess.Popen([str(Path(sys.executable).parent / "luigid"), "--address", "127.0.0.1", "--port",
                               str(port), "--state-path", str(tmp_path / "luigid.state"), "--logdir",
                               str(tmp_path / "logs")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("luigid did not listen within 10 s")
        extra = ["--scheduler-host", "127.0.0.1", "--scheduler-port", str(port)]
        workers = [subprocess.Popen(command(setup, "shared") + extra, cwd=CHECKOUT,
                                    env=environment(setup, "local"), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(2)]
        errors = []
        for worker in workers:
            _, err = worker.communicate(timeout=1800)
            errors.append(err)
        clients = scheduler_clients(port)  # luigid forgets a worker 60 s after its last contact: ask at once
    finally:
        os.killpg(luigid.pid, signal.SIGTERM)
        luigid.wait(timeout=30)
    assert [w.returncode for w in workers] == [0, 0], errors  # both saw the DAG complete and wrote the table
    # Which worker runs which task is up to the machine's timing (one may find the DAG done or taken when it
    # arrives); what the central scheduler guarantees is that both are its clients and no task runs twice.
    assert {w.pid for w in workers} <= clients, "both workers scheduled through luigid"
    started = [line.split(" ", 1)[1] for err in errors for line in err.splitlines() if " [start] " in line]
    assert started, "the DAG was built"
    assert len(started) == len(set(started)), "a task ran twice"
    assert scores(setup, "shared") == reference["scores"]
