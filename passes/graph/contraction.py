"""Edge contraction on a DAG without making a cycle: the graph mark_for_compilation grows
clusters in.

Each node is a cluster (union-find over the graph's nodes, the root naming the cluster);
contracting an edge a -> b merges the two unless b is reachable from a some other way, which
would put a path that leaves the cluster between two of its members. TensorFlow's
GraphCycles answers that question the same way: it keeps a topological order of the
contracted graph (Pearce and Kelly's dynamic order, "A dynamic topological sort algorithm for
directed acyclic graphs", 2007), so a search for b from a only visits nodes ordered before b,
and inserting the merged node's edges reorders only the nodes between the two ends of an edge
that points backwards. A search over every successor instead made clustering quadratic:
9 of ResNet-50 training's 36 s cold start.
"""

from __future__ import annotations

from hlobridge.frontend.graph import Graph, TensorRef

BACK_EDGE_OPS = ("NextIteration", "RefNextIteration")  # a v1 loop's back edge is not an ordering


class Contraction:
    """Union-find over `nodes` plus the contracted graph and a topological order of it.
    `nodes` come in a topological order (Graph.order, which also leaves out loops' back edges):
    their positions start as that order."""

    def __init__(self, graph: Graph, nodes: list[str], cut: set[TensorRef]):
        self.rank = {n: i for i, n in enumerate(nodes)}  # graph order: which root a merge keeps
        self.parent = {n: n for n in nodes}
        self.members = {n: [n] for n in nodes}
        self.succ: dict[str, set[str]] = {n: set() for n in nodes}
        self.pred: dict[str, set[str]] = {n: set() for n in nodes}
        for n in nodes:
            node = graph.nodes[n]
            preds = {r.node for r in node.inputs if r not in cut} | set(node.control_inputs)
            for p in preds:
                if p in self.rank and graph.nodes[p].op not in BACK_EDGE_OPS:
                    self.succ[p].add(n)
                    self.pred[n].add(p)
        self.position = dict(self.rank)  # of roots only: a merged node's goes

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def try_merge(self, a: str, b: str) -> bool:
        """Contract the edge between clusters a -> b (or b -> a) unless that makes a cycle."""
        if b in self.succ[a]:
            src, dst = a, b
        elif a in self.succ[b]:
            src, dst = b, a
        else:
            return False  # not adjacent (the edge was cut by a feed)
        if self._reachable_avoiding_edge(src, dst):
            return False
        keep, gone = (a, b) if self.rank[a] <= self.rank[b] else (b, a)
        succs, preds = self.succ.pop(gone), self.pred.pop(gone)
        del self.position[gone]
        for s in succs:
            self.pred[s].discard(gone)
        for p in preds:
            self.succ[p].discard(gone)
        for s in succs - {keep}:
            self._insert_edge(keep, s)
        for p in preds - {keep}:
            self._insert_edge(p, keep)
        self.parent[gone] = keep
        self.members[keep] += self.members.pop(gone)
        return True

    def _reachable_avoiding_edge(self, a: str, b: str) -> bool:
        """Is b reachable from a other than by the direct edge a->b? Every such path runs
        through nodes ordered between a and b (neither end is), so the walk looks no further;
        it starts from whichever end has fewer edges to follow (a growing cluster has many)."""
        low, high = self.position[a], self.position[b]
        if len(self.succ[a]) <= len(self.pred[b]):
            start, goal, edges, within = a, b, self.succ, lambda n: self.position[n] < high
        else:
            start, goal, edges, within = b, a, self.pred, lambda n: self.position[n] > low
        return any(goal in edges[n] for n in self._walk(start, edges, within) if n != start)

    def _insert_edge(self, x: str, y: str) -> None:
        """Add x -> y, known not to close a cycle; if y is ordered before x, reorder the nodes
        between them (Pearce-Kelly): those reachable from y move after those reaching x."""
        self.succ[x].add(y)
        self.pred[y].add(x)
        low, high = self.position[y], self.position[x]
        if high < low:
            return
        forward = list(self._walk(y, self.succ, lambda n: self.position[n] < high))
        backward = list(self._walk(x, self.pred, lambda n: self.position[n] > low))
        moved = sorted(backward, key=self.position.__getitem__) + sorted(forward, key=self.position.__getitem__)
        for n, slot in zip(moved, sorted(self.position[n] for n in moved)):
            self.position[n] = slot

    @staticmethod
    def _walk(start: str, edges: dict, within):
        """`start`, then the nodes reachable from it along `edges` through nodes `within` the
        bound, as they are found (a search can stop at the first that answers it)."""
        yield start
        seen, todo = {start}, [start]
        while todo:
            for n in edges[todo.pop()]:
                if n not in seen and within(n):
                    seen.add(n)
                    todo.append(n)
                    yield n
