"""The loader: parse -> inline -> functionalize, and the FunctionLibrary it gives the graph."""

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
