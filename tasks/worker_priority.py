"""Which ready task a worker takes first: the one with the longest expected work still ahead of it.

Luigi hands a free worker the ready task of highest `priority` (ties: the one added first). Left at 0, the tasks
of the first report run before those of the next, so the last translation task's whole chain (its NMT training,
tuning and decodings, one after another) ran at the end of a run of all five tasks with the other worker idle. Here
every task's priority is its upward rank, as in list scheduling (HEFT, Topcuoglu et al. 2002): its own expected
minutes plus the largest rank among the tasks that need it. The heads of long chains (alignment, NMT training)
then start first on every translation task, and what is left at the end is short leaves (decodings, BLEU).

Priorities only order the work; no artifact depends on them.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import luigi

from pipeline.list_schedule import upward_ranks

#: Expected build minutes of one artifact of each stage (folder name), measured on a 2-core run of all five tasks of
#: the former small profile (its stage_times.md of 0.9.0 divided by the artifacts of each stage). Only their ratios
#: matter (a stage that a forecast's reference run did not build is scaled from its ratio to "nmt-decode"); a stage
#: not listed counts as DEFAULT_MINUTES.
STAGE_MINUTES: Mapping[str, float] = {
    "tokenized": 0.1, "truecaser": 0.1, "truecased": 0.05, "bpe": 0.9, "subwords": 0.1, "vocab": 0.02,
    "roundtrip": 0.02, "lm": 0.1, "align": 2.0, "phrases": 2.6, "mert": 1.1, "pbmt": 0.5, "lmatrix": 1.0,
    "acceptors": 0.3, "nmt": 5.5, "nmt-average": 0.02, "nmt-system": 0.02, "lmbr-tuning": 2.0,
    "search-tuning": 0.3, "rescoring-tuning": 0.4, "mbr-tuning": 1.0, "nmt-decode": 1.3, "lattice-mbr": 0.5,
    "speed": 3.5, "bleu": 0.03, "significance": 0.1,
    # the rows over the NMT's samples, from their ratios to a neural decoding on medium eng-ger (32 samples a sentence)
    "nmt-samples": 6.0, "sample-mbr-tuning": 1.5, "sample-mbr": 1.2, "mixture-tuning": 4.0,
}
DEFAULT_MINUTES = 0.1


def task_graph(roots: Iterable[luigi.Task]) -> list[luigi.Task]:
    """Every task the roots require, the roots included, each once (depth first)."""
    seen, todo, tasks = set(), list(roots), []
    while todo:
        task = todo.pop()
        if task.task_id in seen:
            continue
        seen.add(task.task_id)
        tasks.append(task)
        todo.extend(luigi.task.flatten(task.requires()))
    return tasks


def expected_minutes(task: luigi.Task) -> float:
    """A task's expected build minutes by its stage; tasks without an artifact (reports) count 0."""
    stage = getattr(task, "stage", "")
    return STAGE_MINUTES.get(stage, DEFAULT_MINUTES) if stage else 0.0


def prioritise(roots: Iterable[luigi.Task]) -> dict[str, float]:
    """Set each task's Luigi `priority` to its upward rank (in hundredths of a minute) over the graph of the roots
    and their requirements; returns {task id: rank in minutes}. Luigi keeps one instance per task id, so the
    instances the workers later reach through requires() carry these priorities."""
    seen = {task.task_id: task for task in task_graph(roots)}
    needs = {tid: [dep.task_id for dep in luigi.task.flatten(task.requires())] for tid, task in seen.items()}
    ranks = upward_ranks(needs, {tid: expected_minutes(task) for tid, task in seen.items()})
    for tid, task in seen.items():
        task.priority = round(100 * ranks[tid])
    return ranks
