"""List scheduling of a DAG of jobs with known minutes (HEFT, Topcuoglu et al. 2002): each job's upward rank (its
minutes plus the largest rank among the jobs that need it), and the makespan when free workers take the ready job of
highest rank. tasks/worker_priority.py orders Luigi's workers by the ranks; pipeline/run_estimate.py forecasts a run's
wall time with the makespan."""
from __future__ import annotations

import heapq
from typing import Hashable, Mapping, Sequence


def upward_ranks(needs: Mapping[Hashable, Sequence[Hashable]],
                 minutes: Mapping[Hashable, float]) -> dict[Hashable, float]:
    """{node: its minutes + the largest rank of the nodes that need it} over a DAG given as {node: its inputs}.
    Every node named anywhere gets a rank (a node without minutes counts 0)."""
    users: dict[Hashable, list[Hashable]] = {}
    for node, inputs in needs.items():
        users.setdefault(node, [])
        for needed in inputs:
            users.setdefault(needed, []).append(node)
    ranks: dict[Hashable, float] = {}
    for start in users:
        todo = [(start, False)]
        while todo:  # iterative depth first over the users: a paper run's graphs are deep
            node, ready = todo.pop()
            if node in ranks:
                continue
            if not ready:
                todo.append((node, True))
                todo.extend((user, False) for user in users[node] if user not in ranks)
                continue
            ranks[node] = minutes.get(node, 0.0) + max((ranks[user] for user in users[node]), default=0.0)
    return ranks


def schedule_minutes(needs: Mapping[Hashable, Sequence[Hashable]], minutes: Mapping[Hashable, float],
                     workers: int) -> float:
    """The makespan of the DAG {node: its inputs} on `workers` workers, each ready node taken by a free worker in
    order of its upward rank (its minutes plus the largest rank of the nodes that need it)."""
    ranks = upward_ranks(needs, minutes)
    waiting = {node: set(inputs) for node, inputs in needs.items()}
    for node in ranks:
        waiting.setdefault(node, set())
    users: dict[Hashable, list[Hashable]] = {}
    for node, inputs in waiting.items():
        for needed in inputs:
            users.setdefault(needed, []).append(node)
    order = {node: k for k, node in enumerate(waiting)}
    ready = [(-ranks[n], order[n], n) for n, inputs in waiting.items() if not inputs]
    heapq.heapify(ready)
    running: list[tuple[float, int, Hashable]] = []  # (finish time, order, node)
    now = 0.0
    while ready or running:
        while ready and len(running) < workers:
            _, k, node = heapq.heappop(ready)
            heapq.heappush(running, (now + minutes.get(node, 0.0), k, node))
        now, _, done = heapq.heappop(running)
        finished = [done]
        while running and running[0][0] == now:  # every job ending now frees its worker before any is handed out
            finished.append(heapq.heappop(running)[2])
        for done in finished:
            for user in users.get(done, []):
                waiting[user].discard(done)
                if not waiting[user]:
                    heapq.heappush(ready, (-ranks[user], order[user], user))
    return now
