"""`explain`: which ops compile, in which clusters, and why every other op does not.

TensorFlow only logs its clustering decisions (`--tf_xla_clustering_debug`); here they are
a value: `explain(graph)` returns the clusters and a reason code per left-out node, printable
as text or JSON (`hlobridge-explain graph.pbtxt [--json]`).

Without `fetches` the whole graph is clustered, with every placeholder as an input. With
`fetches` (and optionally the names of fed tensors) it shows the clustering a
`Session.run` of those fetches uses: the session clusters each pruned plan, as TF does.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from hlobridge.passes.graph.mark_for_compilation import (REASONS, VARIABLES, ClusterOptions, Clustering,
                                                         mark_for_compilation)

from ..compile.backend import resolve
from ..frontend.graph import Graph
from ..frontend.load import load_graph


@dataclass
class Explanation:
    """What `explain` returns: the clustering of `graph` and why each left-out node is out;
    `str()` is the text report, `to_json()` the JSON one."""

    graph: Graph
    options: ClusterOptions
    clustering: Clustering
    nodes: list[str]  # the nodes that were considered, in graph order
    # cluster -> fusion mode -> IREE's dispatch statistics (explain(..., dispatches=...))
    dispatches: dict | None = None
    backend: str = "iree"  # who compiles the clusters (compile/backend.py), as the Session would decide it
    dynamic: dict | None = None  # cluster -> whether it lowers with ? dims (explain(..., dynamic=True))

    def to_dict(self) -> dict:
        """The explanation as plain data: options, summary, clusters (ops, inputs, variables, outputs)
        and the left-out nodes with their reason codes and messages."""
        g = self.graph
        clusters = []
        for c in self.clustering.clusters:
            variables = [str(r) for r in c.inputs if g.nodes[r.node].op in VARIABLES]
            clusters.append({
                "name": c.name, "device": c.device, "size": len(c.nodes),
                "backend": resolve(self.backend, "cuda" if "GPU" in (c.device or "").upper() else "llvm-cpu"),
                "ops": c.op_histogram(g),
                "inputs": [str(r) for r in c.inputs if str(r) not in variables],
                "variables": variables,
                "outputs": [str(r) for r in c.outputs],
                "nodes": list(c.nodes),
            })
            if self.dispatches is not None:
                clusters[-1]["dispatches"] = self.dispatches.get(c.name, {})
            if self.dynamic is not None:
                clusters[-1]["dynamic"] = self.dynamic.get(c.name, {})
        left_out = [{"node": n, "op": g.nodes[n].op, "reason": code, "message": REASONS[code]}
                    for n in self.nodes if (code := self.clustering.reasons.get(n))]
        return {"graph": g.source, "jit": self.options.jit,
                "min_cluster_size": self.options.min_cluster_size,
                "max_cluster_size": self.options.max_cluster_size,
                "summary": {"nodes": len(self.nodes),
                            "compiled": sum(len(c.nodes) for c in self.clustering.clusters),
                            "clusters": len(clusters),
                            "left_out_by_reason": dict(Counter(e["reason"] for e in left_out))},
                "clusters": clusters, "left_out": left_out}

    def to_json(self) -> str:
        """`to_dict()` as indented JSON: what `hlobridge-explain --json` prints."""
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        d = self.to_dict()
        s = d["summary"]
        lines = [f"{d['graph']} (jit={d['jit']}): {s['compiled']} of {s['nodes']} nodes compiled "
                 f"in {s['clusters']} cluster(s)"]
        for c in d["clusters"]:
            ops = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in c["ops"].items())
            lines.append(f"\n{c['name']} on {c['device']} ({c['backend']}): {c['size']} ops ({ops})")
            lines.append(f"  inputs:    {', '.join(c['inputs']) or '-'}")
            if c["variables"]:
                lines.append(f"  variables: {', '.join(c['variables'])}")
            lines.append(f"  outputs:   {', '.join(c['outputs']) or '-'}")
            if "dispatches" in c:
                lines.append(f"  dispatches: {_format_dispatches(c['dispatches'])}")
            if "dynamic" in c:
                lines.append(f"  dynamic:   {_format_dynamic(c['dynamic'])}")
        if d["left_out"]:
            lines.append("\nnot compiled:")
            width = max(len(f"{e['node']} ({e['op']})") for e in d["left_out"])
            for e in d["left_out"]:
                lines.append(f"  {e['node'] + ' (' + e['op'] + ')':<{width}}  {e['reason']}: {e['message']}")
        return "\n".join(lines)


def _format_dynamic(dyn: dict) -> str:
    """'dynamic (x:0 float32[?,4])', 'static', or the status and the message naming the node."""
    if "message" in dyn:
        return f"{dyn.get('status')}: {dyn['message']}"
    text = f"{dyn.get('status')} ({', '.join(dyn['inputs'])})" if dyn.get("inputs") else str(dyn.get("status"))
    return f"{text}; batch padding: {dyn['batch_padding']}" if "batch_padding" in dyn else text


def _format_dispatches(by_mode: dict) -> str:
    """'hlobridge 13 (13 executables), iree 19 (19 executables)' or the error."""
    if "error" in by_mode:
        return f"unknown: {by_mode['error']}"
    return ", ".join(f"{mode} {s['dispatches']} ({s['executables']} executables)" if "error" not in s
                     else f"{mode} failed: {s['error'].splitlines()[0]}" for mode, s in by_mode.items())


def explain(graph, *, jit: str = "auto", fetches=None, feeds=(), min_cluster_size: int = 4,
            max_cluster_size: int | None = None, dispatches=None, input_shapes=None,
            compile_options=None, backend: str = "iree", data_parallel=False, dynamic: bool = False) -> Explanation:
    """Cluster `graph` as a Session with these options would, and say why for the rest.

    `data_parallel` (True, or gradient tensor names, as Session takes it) explains the graph a
    data-parallel Session runs: its gradient all-reduces show as left-out `collective` nodes
    (hlobridge/distributed/data_parallel.py), between the clusters on either side.
    `dispatches` (fusion modes, e.g. ("hlobridge", "iree", "none")) also compiles every
    cluster under each mode and reports IREE's dispatch counts (cluster_dispatches.py);
    `input_shapes` ({tensor: dims}) fixes placeholder or fed shapes for that. `backend` is the
    Session's ("iree", "xla", "auto"): each cluster says which backend would compile it.
    `dynamic` lowers each cluster with its unknown dims left `?` and says whether that works, or
    which node stops it (reason code `dynamic_dim_unsupported`, cluster_dynamic.py)."""
    graph = load_graph(graph)
    if data_parallel:
        from ..distributed.data_parallel import rewrite
        graph = rewrite(graph, rank=0, gradients=None if data_parallel is True else list(data_parallel))
    options = ClusterOptions(jit, min_cluster_size, max_cluster_size)
    cut = {graph.tensor(f) for f in feeds}
    if fetches is None:
        nodes, fetched = None, []
    else:
        names = [fetches] if isinstance(fetches, str) else list(fetches)
        fetched = [graph.tensor(f) for f in names if ":" in f]
        targets = [graph.node(f).name for f in names if ":" not in f] + [r.node for r in fetched]
        nodes = graph.prune(targets, cut)
    clustering = mark_for_compilation(graph, nodes, cut=cut, fetched=fetched, options=options)
    considered = [n for n in graph.order if nodes is None or n in nodes]
    counts = None
    if dispatches:
        from .cluster_dispatches import cluster_dispatches
        counts = cluster_dispatches(graph, clustering, nodes, cut=cut, input_shapes=input_shapes,
                                    modes=tuple(dispatches), options=compile_options)
    dyn = None
    if dynamic:
        from .cluster_dynamic import cluster_dynamic
        dyn = cluster_dynamic(graph, clustering, nodes, cut=cut)
    return Explanation(graph, options, clustering, considered, counts, backend, dyn)

