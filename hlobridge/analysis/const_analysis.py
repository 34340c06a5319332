"""TensorFlow's backwards const analysis: which inputs of a cluster must be compile-time
constants.

Some op inputs are read at compile time: a Slice's size, a Reshape's shape, a reduction's axes
(`OpDef.const_inputs`). When such an input is computed inside a cluster, what it reads must be
constant in turn, back to the cluster's boundary: a StridedSlice's end packed from a fed index
makes the fed index a constant input. The cluster then compiles once per value of those inputs,
as XLA's [constants] arguments do.
"""

from __future__ import annotations

from ..frontend.graph import Graph, TensorRef
from ..ops import registry
from .graph_algorithms import reachable

# Ops whose result depends on their input's shape only: a constant they compute needs no value.
SHAPE_ONLY = frozenset({"Shape", "ShapeN", "Size", "Rank"})


def constant_inputs(graph: Graph, nodes) -> set[TensorRef]:
    """The inputs of the cluster `nodes` that it must read as compile-time constants: those
    read by an input a member needs as a constant, directly or through the members computing
    it (not through a shape-only op)."""
    members = set(nodes)
    wanted = [r for n in nodes for i, r in enumerate(graph.nodes[n].inputs)
              if i in registry.lookup(graph.nodes[n].op).const_inputs]

    def through(ref: TensorRef) -> list[TensorRef]:
        if ref.node not in members or graph.nodes[ref.node].op in SHAPE_ONLY:
            return []
        return graph.nodes[ref.node].inputs

    return {r for r in reachable(wanted, through) if r.node not in members}
