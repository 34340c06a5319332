"""The loader: parse -> inline -> functionalize, and the FunctionLibrary it gives the graph."""

import re

import pytest

from hlobridge.errors import GraphError
from hlobridge.frontend.functions import FunctionLibrary, library_of
from hlobridge.frontend.graph import Graph, Node
from hlobridge.frontend.load import load_graph


def test_a_loaded_graph_holds_the_library_its_loader_made(shared_graphs):
    graph = load_graph(shared_graphs / "tf2_function_graph" / "graph.pbtxt")
    assert isinstance(graph.function_library, FunctionLibrary)
    assert library_of(graph) is graph.function_library
    assert not any(n.op in ("PartitionedCall", "StatefulPartitionedCall") for n in graph.nodes.values())


def test_a_hand_built_graph_gets_an_empty_library():
    graph = Graph([Node("c", "NoOp", [], [], "", {})])
    assert graph.function_library is None
    assert "anything" not in library_of(graph)


def test_v1_loops_are_functionalized_at_load(shared_graphs):
    graph = load_graph(shared_graphs / "control_flow_v1" / "graph.pbtxt")
    ops = {n.op for n in graph.nodes.values()}
    assert "While" in ops and not ops & {"Enter", "Exit", "NextIteration", "LoopCond"}


def _v1_graph(mutate):
    import numpy as np
    from hlobridge.frontend.graph_builder import GraphBuilder
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, ())
    p = b.placeholder("p", np.bool_, ())
    args = {"Switch": [x, p], "Enter": [x], "Merge": [x]}
    attrs = {"Enter": {"T": np.dtype(np.float32), "frame_name": "f"}}
    for op in ("Switch", "Enter", "Merge"):
        inputs, extra = mutate(op, list(args[op]), dict(attrs.get(op, {})))
        b.op(op, inputs, name=op.lower(), **extra)
    return b.graph_def


@pytest.mark.parametrize("op,mutate,message", [
    ("Switch", lambda i, a: (i[:1], a), "node 'switch' (Switch) needs 2 data input(s), has 1"),
    ("Enter", lambda i, a: (i + i, a), "node 'enter' (Enter) needs 1 data input(s), has 2"),
    ("Merge", lambda i, a: ([], a), "node 'merge' (Merge) has no data inputs"),
    ("Enter", lambda i, a: (i, {"T": a["T"]}), "node 'enter' (Enter) needs a string attr 'frame_name'"),
])
def test_malformed_v1_control_flow_is_a_graph_error(op, mutate, message):
    # found by tools/fuzz_graphs.py: IndexError / TypeError inside functionalize and deadness
    gd = _v1_graph(lambda o, i, a: mutate(i, a) if o == op else (i, a))
    with pytest.raises(GraphError, match=re.escape(message)):
        load_graph(gd)


@pytest.mark.parametrize("mutate,message", [
    (lambda f: f.ret.__setitem__(f.signature.output_arg[0].name, "nowhere:0"), "returns nowhere:0, but the body"),
    (lambda f: f.ret.__setitem__(f.signature.output_arg[0].name, "x:y:z:0"), "which is not 'node:output_arg:index'"),
    (lambda f: f.signature.control_output.append("effect"), "output 'effect' has no entry in the function's ret map"),
])
def test_a_function_returning_what_its_body_lacks_is_a_graph_error(shared_graphs, mutate, message):
    # found by tools/fuzz_graphs.py: KeyError '' from a control_output without a control_ret
    from hlobridge.frontend.graphdef import read_graphdef
    gd = read_graphdef(shared_graphs / "tf2_function_graph" / "graph.pb")
    fdef = next(f for f in gd.library.function if f.signature.output_arg)
    mutate(fdef)
    with pytest.raises(GraphError, match=re.escape(message)):
        library_of(load_graph(gd)).get(fdef.signature.name)
