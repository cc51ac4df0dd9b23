"""Upward ranks against a brute-force longest path, and real Luigi taking the longest chain first."""
import random

import luigi
import pytest

from tasks import TaskReport
from tasks.worker_priority import STAGE_MINUTES, prioritise, task_graph, upward_ranks
from tests.tasks.helpers import build, shared_params


def _longest_path_to_a_sink(node, users, minutes):
    """Brute force: every path from node through its users, the heaviest one."""
    return minutes.get(node, 0.0) + max((_longest_path_to_a_sink(u, users, minutes) for u in users.get(node, ())),
                                        default=0.0)


@pytest.mark.parametrize("seed", range(20))
def test_upward_ranks_are_the_heaviest_path_to_a_sink(seed):
    rng = random.Random(seed)
    nodes = list(range(rng.randint(1, 12)))
    needs = {n: rng.sample(nodes[:n], rng.randint(0, min(n, 3))) for n in nodes}  # inputs come earlier: a DAG
    minutes = {n: rng.choice([0.0, 0.5, 1.0, 5.5]) for n in nodes if rng.random() < 0.9}
    users = {}
    for node, inputs in needs.items():
        for needed in inputs:
            users.setdefault(needed, []).append(node)
    ranks = upward_ranks(needs, minutes)
    assert set(ranks) == set(nodes)
    for node in nodes:
        assert ranks[node] == pytest.approx(_longest_path_to_a_sink(node, users, minutes))


def test_a_node_named_only_as_an_input_is_ranked():
    assert upward_ranks({"decode": ["train"]}, {"train": 5.0, "decode": 1.0}) == {"decode": 1.0, "train": 6.0}


class _Step(luigi.Task):
    """A toy stage: `stage` picks its expected minutes; running appends its name to the shared log."""
    name = luigi.Parameter()
    stage = luigi.Parameter()
    inputs = luigi.TupleParameter(default=())
    log = []  # the order of runs, read by the test (cleared before each build)

    def requires(self):
        return [_Step(name=n, stage=s, inputs=()) for n, s in self.inputs]

    def complete(self):
        return self.name in _Step.log

    def run(self):
        _Step.log.append(self.name)


def test_luigi_starts_the_longest_chain_first():
    # The first root is a short chain, the second a long one (NMT training before its decoding). Luigi alone takes
    # the first root's work first; with upward ranks the training goes before everything else.
    short = _Step(name="bleu", stage="bleu", inputs=(("tok", "tokenized"),))
    long = _Step(name="decode", stage="nmt-decode", inputs=(("train", "nmt"),))
    _Step.log.clear()
    build(short, long)
    assert _Step.log.index("tok") < _Step.log.index("train")

    short = _Step(name="bleu2", stage="bleu", inputs=(("tok2", "tokenized"),))
    long = _Step(name="decode2", stage="nmt-decode", inputs=(("train2", "nmt"),))
    ranks = prioritise([short, long])
    assert ranks[long.task_id] == pytest.approx(STAGE_MINUTES["nmt-decode"])
    assert ranks[_Step(name="train2", stage="nmt").task_id] == pytest.approx(STAGE_MINUTES["nmt"] +
                                                                              STAGE_MINUTES["nmt-decode"])
    _Step.log.clear()
    build(short, long)
    assert _Step.log == ["train2", "decode2", "tok2", "bleu2"]


def test_a_report_trains_its_models_before_it_scores(tmp_path, data_dir):
    report = TaskReport(eval_set="devtest", systems=("PBMT", "FNMT", "LNMT"), **shared_params(tmp_path, data_dir))
    ranks = prioritise([report])
    by_stage = {}
    for task in task_graph([report]):
        assert task.priority == round(100 * ranks[task.task_id])
        by_stage.setdefault(getattr(task, "stage", ""), []).append(ranks[task.task_id])
    assert min(by_stage["nmt"]) > max(by_stage["nmt-decode"]) > max(by_stage["bleu"])
    assert min(by_stage["align"]) > max(by_stage["lmatrix"])
