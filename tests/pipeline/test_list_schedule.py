"""List scheduling: upward ranks against a brute-force longest path, and the makespan of the schedule against a
brute-force simulation of workers taking the ready job of highest rank."""
import random

import pytest

from pipeline.list_schedule import schedule_minutes, upward_ranks


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


def _simulated(needs, minutes, workers):
    """Brute force, minute by hundredth: at each tick free workers take the ready jobs of highest rank (ties: the
    node named first), and jobs finish when their minutes have passed."""
    ranks = upward_ranks(needs, minutes)
    done, running, now, step = set(), {}, 0, 0.01
    nodes = list(needs)  # ties go to the node named first
    while len(done) < len(nodes):
        for node, end in list(running.items()):
            if end <= now + 1e-9:
                done.add(node)
                del running[node]
        ready = [n for n in nodes if n not in done and n not in running
                 and all(i in done for i in needs.get(n, ()))]
        ready.sort(key=lambda n: (-ranks[n], nodes.index(n)))
        for node in ready[:workers - len(running)]:
            running[node] = now + minutes.get(node, 0.0)
            if minutes.get(node, 0.0) == 0.0:
                done.add(node)
                del running[node]
        if len(done) == len(nodes):
            break
        if not running and not ready:
            break
        if running:
            now = round(now + step, 2)
    return now


@pytest.mark.parametrize("seed", range(12))
def test_the_makespan_is_that_of_workers_taking_the_highest_rank_first(seed):
    rng = random.Random(seed)
    nodes = list(range(rng.randint(1, 9)))
    needs = {n: rng.sample(nodes[:n], rng.randint(0, min(n, 2))) for n in nodes}
    minutes = {n: rng.choice([0.5, 1.0, 2.0, 3.5]) for n in nodes}
    for workers in (1, 2, 3):
        assert schedule_minutes(needs, minutes, workers) == pytest.approx(_simulated(needs, minutes, workers), abs=0.02)


def test_one_worker_sums_and_enough_workers_take_the_longest_chain():
    needs = {"train": ["data"], "tune": ["train"], "pbmt": ["data"], "data": []}
    minutes = {"data": 1.0, "train": 10.0, "tune": 2.0, "pbmt": 3.0}
    assert schedule_minutes(needs, minutes, 1) == 16.0
    assert schedule_minutes(needs, minutes, 2) == 13.0
