"""GraphDef reading: the corpus in both encodings, every value encoding, and bad input."""

import ml_dtypes
import numpy as np
import pytest
from google.protobuf import text_format

from hlobridge import GraphDefError, GraphError, TensorRef, load_graph
from hlobridge.frontend import tensor_proto
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


def _const(dtype_enum, shape, **fields):
    proto = schema.TensorProto(dtype=dtype_enum)
    for d in shape:
        proto.tensor_shape.dim.add(size=d)
    for k, v in fields.items():
        if isinstance(v, bytes):
            setattr(proto, k, v)
        else:
            getattr(proto, k).extend(v)
    return proto


DT = schema.DATA_TYPE_VALUES


@pytest.mark.parametrize("proto,want", [
    (_const(DT["DT_FLOAT"], [2, 2], float_val=[1.5]), np.full((2, 2), 1.5, np.float32)),  # splat
    (_const(DT["DT_FLOAT"], [3], float_val=[1, 2]), np.array([1, 2, 2], np.float32)),  # last repeats
    (_const(DT["DT_INT32"], [2], int_val=[]), np.zeros(2, np.int32)),  # no values: zeros
    (_const(DT["DT_INT64"], [2], int64_val=[-1, 1 << 40]), np.array([-1, 1 << 40], np.int64)),
    (_const(DT["DT_DOUBLE"], [1], double_val=[0.1]), np.array([0.1])),
    (_const(DT["DT_BOOL"], [2], bool_val=[True, False]), np.array([True, False])),
    (_const(DT["DT_HALF"], [2], half_val=[0x3C00, 0xC000]), np.array([1, -2], np.float16)),
    (_const(DT["DT_BFLOAT16"], [2], half_val=[0x3F80, 0x4040]), np.array([1, 3], ml_dtypes.bfloat16)),
    (_const(DT["DT_UINT8"], [2], int_val=[255, 7]), np.array([255, 7], np.uint8)),
    (_const(DT["DT_INT8"], [2], int_val=[-128, 7]), np.array([-128, 7], np.int8)),
    (_const(DT["DT_INT16"], [1], int_val=[-300]), np.array([-300], np.int16)),
    (_const(DT["DT_UINT16"], [1], int_val=[60000]), np.array([60000], np.uint16)),
    (_const(DT["DT_UINT32"], [1], uint32_val=[4000000000]), np.array([4000000000], np.uint32)),
    (_const(DT["DT_UINT64"], [1], uint64_val=[1 << 63]), np.array([1 << 63], np.uint64)),
    (_const(DT["DT_COMPLEX64"], [1], scomplex_val=[1, 2]), np.array([1 + 2j], np.complex64)),
    (_const(DT["DT_STRING"], [2], string_val=[b"a", b"bc"]), np.array([b"a", b"bc"], object)),
    (_const(DT["DT_FLOAT"], [2], tensor_content=np.array([3, 4], "<f4").tobytes()),
     np.array([3, 4], np.float32)),
    (_const(DT["DT_BFLOAT16"], [2], tensor_content=np.array([1, 2], ml_dtypes.bfloat16).tobytes()),
     np.array([1, 2], ml_dtypes.bfloat16)),
])
def test_tensor_value_encodings(proto, want):
    got = tensor_proto.to_numpy(proto)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("array", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, 2], ml_dtypes.bfloat16),
    np.array([True, False]), np.array(7, np.int64), np.array([b"x", b"yz"], object),
])
def test_tensor_roundtrip(array):
    back = tensor_proto.to_numpy(tensor_proto.from_numpy(array))
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)


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


def test_roundtrip_text_matches_tensorflow_formatting(shared_graphs):
    text = (shared_graphs / "seed_linreg_ref" / "graph.pbtxt").read_text()
    gd = parse_text(text)
    assert text_format.MessageToString(gd) == text
