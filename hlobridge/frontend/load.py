"""The one place a GraphDef becomes the Graph hlobridge runs: parse -> inline -> functionalize.

TensorFlow's XLA JIT sees a graph after the function inliner and, for v1 control flow, after
functionalization; so does every stage here. `load_graph` accepts what users hold: a path
(`.pbtxt` or `.pb`), a GraphDef message, or a Graph (returned as is).
"""

from __future__ import annotations

import os

from hlobridge import flags
from hlobridge.passes.graph.functionalize_control_flow import functionalize
from hlobridge.passes.graph.hoist_loop_reads import hoist_loop_reads

from .functions import FunctionLibrary, inline_calls
from .graph import Graph, node_from_def
from .graphdef import read_graphdef
from .proto import schema


def graph_from_graphdef(graph_def, source: str = "<graphdef>") -> Graph:
    """The graph as hlobridge runs it: function calls inlined (functions.py), v1 control flow
    functionalized where it can be (passes/graph/functionalize_control_flow.py); with
    HLOBRIDGE_FLAGS=--hoist-loop-reads, variables that a loop only reads are read before it
    (passes/graph/hoist_loop_reads.py: opt-in, it breaks two training graphs' gradients)."""
    library = FunctionLibrary(graph_def.library)
    graph = Graph((node_from_def(nd) for nd in graph_def.node), graph_def.library, source, library)
    graph = functionalize(inline_calls(graph))
    return hoist_loop_reads(graph) if flags.from_environment().hoist_loop_reads else graph


def load_graph(source, cache_dir=None) -> Graph:
    """A Graph from a path, a GraphDef message, or a Graph (returned as is). `cache_dir` keeps
    a large text GraphDef's parsed form (graphdef.read_graphdef)."""
    if isinstance(source, Graph):
        return source
    if isinstance(source, (str, os.PathLike)):
        return graph_from_graphdef(read_graphdef(source, cache_dir), str(source))
    if isinstance(source, schema.GraphDef):
        return graph_from_graphdef(source)
    raise TypeError(f"expected a path, GraphDef or Graph, got {type(source).__name__}")
