"""Real Luigi taking the longest chain first (the ranks: tests/pipeline/test_list_schedule.py)."""
import luigi
import pytest

from tasks import TaskReport
from tasks.worker_priority import STAGE_MINUTES, prioritise, task_graph
from tests.tasks.helpers import build, shared_params


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
