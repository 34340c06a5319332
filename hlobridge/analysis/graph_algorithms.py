"""Dependency order with a stable tie-break, for anything that reorders units of work.

The Session orders clusters and lone nodes, the fusion pass orders dispatch regions and the ops
inside one; each wants producers first and, among the ready units, the one that came first
before (so the result reads like the input, and is deterministic).
"""

from __future__ import annotations

import heapq
from typing import Hashable, Iterable, Mapping


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
