"""The graph algorithms every stage shares, written once: reachability and dependency order.

`reachable` is the one worklist closure: the graph's ancestors and per-run pruning, the nodes a
lowered function needs, the members of a v1 loop frame or conditional branch, the fusion
policy's paths between ops, and TF's backwards const analysis all walk it, each with its own
notion of "next". `ranked_topological_order` orders units of work: the Session orders clusters
and lone nodes, the fusion pass orders dispatch regions and the ops inside one; each wants
producers first and, among the ready units, the one that came first before (so the result
reads like the input, and is deterministic).
"""

from __future__ import annotations

import heapq
from typing import Callable, Hashable, Iterable, Mapping


def reachable(starts: Iterable[Hashable], successors: Callable[[Hashable], Iterable[Hashable]]) -> set:
    """Every key reachable from `starts` (included) by repeatedly following `successors`.
    Order-free (a depth-first worklist); each key is expanded once."""
    seen, todo = set(), list(starts)
    while todo:
        key = todo.pop()
        if key not in seen:
            seen.add(key)
            todo.extend(successors(key))
    return seen


def ranked_topological_order(deps: Mapping[Hashable, Iterable[Hashable]], rank: Mapping) -> list:
    """Kahn's algorithm over `deps` (key -> the keys it depends on, all keys of `deps`),
    always taking the ready key of lowest `rank`. Keys on a cycle, and those after them, are
    left out: a caller that must not have one compares lengths."""
    users: dict = {k: [] for k in deps}
    waiting = {}
    for k, ds in deps.items():
        ds = set(ds)
        waiting[k] = len(ds)
        for d in ds:
            users[d].append(k)
    position = {k: i for i, k in enumerate(deps)}  # equal ranks: keys never compared
    ready = [(rank[k], position[k], k) for k, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        *_, k = heapq.heappop(ready)
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (rank[u], position[u], u))
    return order
