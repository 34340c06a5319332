"""The TF graph before and after clustering, as GraphDef text: what TensorFlow writes with
`--tf_xla_clustering_debug` (`before_mark_for_compilation.pbtxt`, `mark_for_compilation.pbtxt`).

"After" is the same GraphDef with an `_XlaCluster` attribute (the cluster's name) on every
clustered node, as TF's pass sets it, and an `_hlobridge_reason` attribute (a reason code of
`mark_for_compilation.REASONS`) on every node that was considered and left out, so that a
dump answers "why not?" as `hlobridge-explain` does. Both load back with `load_graph`.

A Session plan clusters only the nodes its fetches need, with fed tensors cut. The dump
holds those nodes plus whatever they read from outside the plan (a fed placeholder and its
inputs, if any), so that the file is a complete graph; such nodes are marked
`_hlobridge_reason: "outside_plan"`.

`hlobridge-explain --dump-to DIR` writes them for a graph; a Session writes them for each
new plan when HLOBRIDGE_FLAGS has `--dump-to=DIR` (into DIR/NNN-mark_for_compilation/, beside
the numbered directories of its cluster compiles).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from google.protobuf import text_format

from hlobridge.passes.graph.mark_for_compilation import Clustering

from .. import flags
from .dump import numbered_subdirectory
from ..errors import HlobridgeError
from ..frontend.graph import Graph
from .graphviz import clustered_graph_dot
from ..frontend.proto.schema import GraphDef

CLUSTER_ATTR = "_XlaCluster"
REASON_ATTR = "_hlobridge_reason"
OUTSIDE_PLAN = "outside_plan"

BEFORE_STEM = "before_mark_for_compilation"
AFTER_STEM = "mark_for_compilation"


def _dumped_nodes(graph: Graph, considered: set[str]) -> set[str]:
    """`considered` plus everything its nodes read from outside it (so edges resolve)."""
    outside = {p for n in considered for p in [r.node for r in graph.nodes[n].inputs] + graph.nodes[n].control_inputs
               if p not in considered}
    return considered | graph.ancestors(outside)


def _graphdef(graph: Graph, names: set[str]) -> GraphDef:
    gd = GraphDef()
    gd.node.extend(graph.nodes[n].node_def for n in graph.nodes if n in names)  # GraphDef order
    gd.library.CopyFrom(graph.library)
    return gd


def before_graphdef(graph: Graph, nodes=None) -> GraphDef:
    """The graph (or the plan's `nodes` and what they read) as clustering received it."""
    considered = set(graph.nodes) if nodes is None else set(nodes)
    return _graphdef(graph, _dumped_nodes(graph, considered))


def after_graphdef(graph: Graph, clustering: Clustering, nodes=None) -> GraphDef:
    """`before_graphdef` with `_XlaCluster` on clustered nodes and `_hlobridge_reason` on the rest."""
    considered = set(graph.nodes) if nodes is None else set(nodes)
    gd = before_graphdef(graph, considered)
    for nd in gd.node:
        cluster = clustering.cluster_of.get(nd.name)
        if cluster is not None:
            nd.attr[CLUSTER_ATTR].s = cluster.encode()
        elif nd.name in clustering.reasons:
            nd.attr[REASON_ATTR].s = clustering.reasons[nd.name].encode()
        elif nd.name not in considered:
            nd.attr[REASON_ATTR].s = OUTSIDE_PLAN.encode()
    return gd


def unique_path(directory: Path, stem: str, suffix: str) -> Path:
    """`stem.suffix`, or `stem_1.suffix`, `stem_2.suffix`, ... if taken (as TF's DumpGraphToFile)."""
    path, i = directory / f"{stem}{suffix}", 0
    while path.exists():
        i += 1
        path = directory / f"{stem}_{i}{suffix}"
    return path


def dump_clustering(directory: str | os.PathLike, graph: Graph, clustering: Clustering,
                    nodes=None) -> list[Path]:
    """Write the before/after `.pbtxt` pair and the clustered graph as Graphviz `.dot`
    into `directory`; returns the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, gd in ((BEFORE_STEM, before_graphdef(graph, nodes)),
                     (AFTER_STEM, after_graphdef(graph, clustering, nodes))):
        path = unique_path(directory, stem, ".pbtxt")
        path.write_text(text_format.MessageToString(gd))
        written.append(path)
    dot = written[-1].with_suffix(".dot")
    dot.write_text(clustered_graph_dot(graph, clustering, nodes))
    written.append(dot)
    return written


def dump_if_flags_ask(graph: Graph, clustering: Clustering, nodes) -> Path | None:
    """The Session's hook: with HLOBRIDGE_FLAGS' --dump-to (and a --dump-pass that matches
    "mark_for_compilation", if any), dump this plan's clustering; returns the directory."""
    env = flags.from_environment()
    if not env.dump_to:
        return None
    try:
        if env.dump_pass and not re.search(env.dump_pass, AFTER_STEM):
            return None
    except re.error as e:
        raise HlobridgeError(f"--dump-pass: bad regular expression '{env.dump_pass}': {e}") from None
    directory = numbered_subdirectory(Path(env.dump_to), AFTER_STEM)
    dump_clustering(directory, graph, clustering, nodes)
    return directory
