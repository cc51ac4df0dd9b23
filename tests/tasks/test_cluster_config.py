"""luigi.cfg's [cluster] section: which scheduler, and what each stage's jobs ask for."""
import re

import luigi.configuration
import pytest

from pipeline.cluster.slurm import JobRequest
from pipeline.errors import ConfigError
from tasks import TrainNMT, TrainLM
from tasks.cluster import job_request, scheduler, shards, submits
from tasks.smt import DecodePBMT


@pytest.fixture
def cluster_config():
    config = luigi.configuration.get_config()
    sections = ("cluster", "cluster.nmt")
    saved = {s: dict(config.items(s)) if config.has_section(s) else None for s in sections}
    yield config
    for section, items in saved.items():
        config.remove_section(section)
        if items is not None:
            config.add_section(section)
            for key, value in items.items():
                config.set(section, key, value)


PARAMS = {"task_name": "ger-eng", "profile": "tiny", "work_dir": "w", "processes": 3}


def test_requests_come_from_the_task_then_cluster_then_the_stage(cluster_config):
    cluster_config.set("cluster", "scheduler", "slurm")
    cluster_config.set("cluster", "partition", "batch")
    cluster_config.set("cluster", "time_minutes", "60")
    cluster_config.set("cluster.nmt", "cores", "8")
    cluster_config.set("cluster.nmt", "time_minutes", "600")
    cluster_config.set("cluster.nmt", "gpus", "1")
    nmt, lm = TrainNMT(architecture="gru", seed=1, **PARAMS), TrainLM(**PARAMS)
    assert job_request(nmt) == JobRequest(cores=8, memory_mb=nmt.memory_mb, time_minutes=600, partition="batch",
                                          gpus=1)
    assert job_request(lm) == JobRequest(cores=lm.needs()["cpu"], memory_mb=lm.memory_mb, time_minutes=60,
                                         partition="batch", gpus=0)
    assert submits(nmt) and submits(lm)
    cluster_config.set("cluster", "decode_shards", "3")
    assert shards(DecodePBMT(split="dev", **PARAMS)) == 3 and shards(lm) == 1


def test_nmt_training_goes_to_a_gpu_partition_with_gres_while_the_rest_stays_on_cpu_nodes(cluster_config):
    cluster_config.set("cluster", "scheduler", "slurm")
    cluster_config.set("cluster", "partition", "cpu")
    cluster_config.set("cluster.nmt", "partition", "gpu")
    cluster_config.set("cluster.nmt", "gres", "gpu:a100:1")
    nmt = job_request(TrainNMT(architecture="transformer", seed=1, **PARAMS)).sbatch_options()
    lm = job_request(TrainLM(**PARAMS)).sbatch_options()
    assert "--partition=gpu" in nmt and "--gres=gpu:a100:1" in nmt and not any("--gpus" in o for o in nmt)
    assert "--partition=cpu" in lm and not any(o.startswith(("--gres", "--gpus")) for o in lm)


def test_nmt_training_may_ask_for_several_nodes_and_no_other_stage(cluster_config):
    cluster_config.set("cluster", "scheduler", "slurm")
    cluster_config.set("cluster.nmt", "nodes", "2")
    cluster_config.set("cluster.nmt", "gpus", "4")
    request = job_request(TrainNMT(architecture="transformer", seed=1, **PARAMS))
    assert (request.nodes, request.gpus) == (2, 4) and "--gpus-per-node=4" in request.sbatch_options()
    cluster_config.set("cluster", "nodes", "2")
    with pytest.raises(ConfigError, match="nodes = 2 for stage lm: only nmt runs on several nodes"):
        job_request(TrainLM(**PARAMS))


@pytest.mark.parametrize("section, key, value, message", [
    ("cluster", "scheduler", "pbs", "scheduler = 'pbs': unknown (known: local, slurm)"),
    ("cluster", "scheduler", "sge", "scheduler = 'sge': not wired in yet"),
    ("cluster.nmt", "cores", "many", "[cluster.nmt] cores = 'many': not a whole number"),
    ("cluster", "decode_shards", "0", "decode_shards = '0': must be a whole number >= 1"),
])
def test_bad_cluster_settings_are_clear_errors(cluster_config, section, key, value, message):
    cluster_config.set("cluster", "scheduler", "slurm")
    cluster_config.set(section, key, value)
    with pytest.raises(ConfigError, match=re.escape(message)):
        scheduler()
        job_request(TrainNMT(architecture="gru", seed=1, **PARAMS))
        shards(DecodePBMT(split="dev", **PARAMS))


def test_local_runs_everything_here(cluster_config):
    cluster_config.set("cluster", "scheduler", "local")
    assert scheduler() == "local" and not submits(TrainLM(**PARAMS))
