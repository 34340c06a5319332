"""The Graph: edges that must resolve, cycles named by their nodes (v1 loop back edges are
not cycles), unique names."""

import pytest

from hlobridge import GraphError, load_graph
from hlobridge.frontend.graphdef import parse_text

GOOD = 'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'


def test_input_that_does_not_exist():
    gd = parse_text(GOOD + 'node { name: "y" op: "Relu" input: "x" input: "^ghost" }\n'
                           'node { name: "z" op: "Relu" input: "missing:1" }')
    with pytest.raises(GraphError) as err:
        load_graph(gd)
    assert "node 'z' (Relu) reads 'missing:1', but no node 'missing' exists" in str(err.value)
    assert "node 'y' (Relu) has control input '^ghost'" in str(err.value)


def test_cycle_is_reported_with_its_nodes():
    gd = parse_text('node { name: "a" op: "Relu" input: "c" }\n'
                    'node { name: "b" op: "Relu" input: "a" }\n'
                    'node { name: "c" op: "Relu" input: "b" }\n')
    with pytest.raises(GraphError, match=r"cycle: a -> b -> c -> a"):
        load_graph(gd)


def test_v1_loop_back_edge_is_not_a_cycle(shared_graphs):
    graph = load_graph(shared_graphs / "control_flow_v1" / "graph.pbtxt")
    assert len(graph.order) == len(graph)


def test_duplicate_node_names():
    with pytest.raises(GraphError, match="duplicate node name 'x'"):
        load_graph(parse_text(GOOD + GOOD))
