"""GraphDef reading: the corpus in both encodings, every value encoding, and bad input."""

import pytest
from google.protobuf import text_format

from hlobridge import GraphDefError, GraphError, TensorRef, load_graph
from hlobridge.frontend.functions import CALL_OPS
from hlobridge.passes.graph.functionalize_control_flow import FRAME_OPS
from hlobridge.frontend.graphdef import parse_binary, parse_text, read_graphdef
from hlobridge.frontend.proto import schema

CASES = ["cnn_infer_bn", "cnn_train", "control_flow_v1", "mlp_adam", "seed_linreg_ref",
         "seed_linreg_resource", "seed_mnist_softmax", "tf2_function_graph"]


@pytest.mark.parametrize("case", CASES)
def test_text_and_binary_give_the_same_graph(shared_graphs, case):
    text = read_graphdef(shared_graphs / case / "graph.pbtxt")
    binary = read_graphdef(shared_graphs / case / "graph.pb")
    assert text == binary
    # Wire-compatible: re-serialising reproduces TensorFlow's bytes exactly.
    assert binary.SerializeToString(deterministic=True) == (shared_graphs / case / "graph.pb").read_bytes()
    graph = load_graph(shared_graphs / case / "graph.pb")
    # calls are inlined and v1 loop frames functionalized; inputs and results keep their names
    read = {i.lstrip("^").split(":")[0] for n in binary.node for i in n.input}
    kept = {n.name for n in binary.node if n.op == "Placeholder" or n.name not in read}
    assert kept <= set(graph.nodes)
    assert not any(n.op in CALL_OPS or n.op in FRAME_OPS for n in graph.nodes.values())


def test_function_library_is_kept(shared_graphs):
    graph = load_graph(shared_graphs / "tf2_function_graph" / "graph.pbtxt")
    assert "__inference_affine_relu_11" in graph.functions
    assert len(graph.functions) == 5


def test_control_inputs_and_names_normalised(shared_graphs):
    graph = load_graph(shared_graphs / "seed_linreg_resource" / "graph.pbtxt")
    assert graph.tensor("Mean") == graph.tensor("Mean:0") == TensorRef("Mean", 0)
    with_controls = [n for n in graph.nodes.values() if n.control_inputs]
    assert with_controls and all(c in graph.nodes for n in with_controls for c in n.control_inputs)


def test_unknown_dims_are_none(shared_graphs):
    graph = load_graph(shared_graphs / "cnn_infer_bn" / "graph.pbtxt")
    assert graph.nodes["images"].attrs["shape"] == (None, 32, 32, 3)


# -- bad input: each gets a clear error naming the file and line, or the node ----------------

GOOD = 'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'


def test_wrong_field_names_file_and_line(tmp_path):
    path = tmp_path / "g.pbtxt"
    path.write_text(GOOD + 'node {\n  name: "y"\n  opp: "Relu"\n}\n')
    with pytest.raises(GraphDefError, match=r"g\.pbtxt:4:\d+: .*no field named \"opp\""):
        read_graphdef(path)


def test_unknown_dtype_names_line(tmp_path):
    path = tmp_path / "g.pbtxt"
    path.write_text('node {\n  name: "x"\n  op: "Placeholder"\n  attr { key: "dtype" value { type: DT_FLOAT99 } }\n}\n')
    with pytest.raises(GraphDefError, match=r"g\.pbtxt:4:\d+: .*DT_FLOAT99"):
        read_graphdef(path)


def test_unsupported_dtype_value_in_binary():
    gd = schema.GraphDef()
    gd.node.add(name="x", op="Placeholder").attr["dtype"].type = 11  # DT_QINT8 is fine ...
    gd.node.add(name="y", op="Placeholder").attr["dtype"].type = 77  # ... an unknown number is not
    with pytest.raises(GraphError, match="unsupported TensorFlow dtype 77"):
        load_graph(parse_binary(gd.SerializeToString()))


def test_truncated_text(tmp_path):
    path = tmp_path / "g.pbtxt"
    path.write_text(GOOD + 'node { name: "y" op: "Relu" input: "x"')
    with pytest.raises(GraphDefError, match=r"g\.pbtxt:2:\d+: "):
        read_graphdef(path)


def test_truncated_binary(tmp_path, shared_graphs):
    data = (shared_graphs / "cnn_infer_bn" / "graph.pb").read_bytes()
    path = tmp_path / "g.pb"
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(GraphDefError, match=r"g\.pb: not a valid binary GraphDef .*truncated or corrupt"):
        read_graphdef(path)


def test_missing_file(tmp_path):
    with pytest.raises(GraphDefError, match="cannot read"):
        read_graphdef(tmp_path / "nope.pbtxt")


def test_roundtrip_text_matches_tensorflow_formatting(shared_graphs):
    text = (shared_graphs / "seed_linreg_ref" / "graph.pbtxt").read_text()
    gd = parse_text(text)
    assert text_format.MessageToString(gd) == text
