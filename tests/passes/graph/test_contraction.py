"""Edge contraction in a kept topological order (passes/graph/contraction.py) decides exactly
what a search over every successor decides, on random graphs, and never closes a cycle."""

import numpy as np
import pytest

from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.passes.graph import contraction
from hlobridge.passes.graph.mark_for_compilation import ClusterOptions, mark_for_compilation

F32 = np.float32


class _UnboundedSearch(contraction.Contraction):
    """The reference: is b reachable from a other than by the direct edge, searching every
    successor (what clustering did before it kept an order)."""

    def _reachable_avoiding_edge(self, a, b):
        todo = [s for s in self.succ[a] if s != b]
        seen = set(todo)
        while todo:
            x = todo.pop()
            if x == b:
                return True
            for s in self.succ[x] - seen:
                seen.add(s)
                todo.append(s)
        return False


def _random_graph(seed: int, n: int = 60):
    """A DAG of AddV2s over a placeholder, each reading two earlier tensors, with a control
    edge now and then; a tenth of them go through an uncompilable AsString/StringToNumber pair,
    which makes paths that leave any cluster."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    tensors = [b.placeholder("x", F32, (2,))]
    for i in range(n):
        x, y = (tensors[j] for j in rng.integers(0, len(tensors), size=2))
        controls = [tensors[int(rng.integers(1, len(tensors)))].split(":")[0]] \
            if len(tensors) > 1 and rng.random() < 0.1 else []
        t = b.op("AddV2", [x, y], name=f"a{i}", T=F32, control_inputs=controls)
        if rng.random() < 0.1:
            s = b.op("AsString", [t], name=f"s{i}", T=F32)
            t = b.op("StringToNumber", [s], name=f"n{i}", out_type=F32)
        tensors.append(t)
    return b.graph()


def _clusters(graph, monkeypatch, kind):
    monkeypatch.setattr("hlobridge.passes.graph.mark_for_compilation.Contraction", kind)
    clustering = mark_for_compilation(graph, options=ClusterOptions(min_cluster_size=1))
    return clustering, sorted(sorted(c.nodes) for c in clustering.clusters)


def _acyclic(graph, clustering) -> bool:
    """The graph with each cluster as one node has no cycle (Kahn's order reaches every unit)."""
    unit = {n: clustering.cluster_of.get(n, n) for n in graph.nodes}
    edges = {(unit[p], unit[n]) for n, node in graph.nodes.items()
             for p in [*(r.node for r in node.inputs), *node.control_inputs] if unit[p] != unit[n]}
    waiting = {u: 0 for u in set(unit.values())}
    for _, v in edges:
        waiting[v] += 1
    ready = [u for u, k in waiting.items() if k == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        for a, v in edges:
            if a == u:
                waiting[v] -= 1
                if waiting[v] == 0:
                    ready.append(v)
    return seen == len(waiting)


@pytest.mark.parametrize("seed", range(40))
def test_same_clusters_as_an_unbounded_search(seed, monkeypatch):
    graph = _random_graph(seed)
    kept, ours = _clusters(graph, monkeypatch, contraction.Contraction)
    _, reference = _clusters(graph, monkeypatch, _UnboundedSearch)
    assert ours == reference
    assert _acyclic(graph, kept)
