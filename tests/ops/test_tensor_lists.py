"""TensorList ops (ops/lists/tensor_lists.py): small graphs compiled and on their kernels, TensorFlow's
errors on the kernels, and the clustering rule that keeps a list inside one cluster.

Lists are variant tensors, not arrays, so they have no single-node tensor-in/tensor-out case:
each compiling op is checked here in a graph that makes, uses and stacks a list, against its
kernels; TensorFlow's own numbers for all of them are the conformance cases tensor_list_ops,
tensor_array_loop, keras_lstm_text, keras_bidirectional_gru, train_lstm and train_gru
(tests/e2e/test_conformance.py)."""

import warnings

import numpy as np
import pytest

import hlobridge
from hlobridge.errors import HlobridgeError, InputError, JitFallbackWarning
from hlobridge.frontend.graph_builder import GraphBuilder

F32, I32 = np.float32, np.int32
X = np.arange(12, dtype=F32).reshape(4, 3) / 7.0

COVERED_OPS = ("EmptyTensorList", "TensorListReserve", "TensorListFromTensor", "TensorListSplit",
               "TensorListGetItem", "TensorListSetItem", "TensorListPushBack", "TensorListPopBack",
               "TensorListStack", "TensorListGather", "TensorListConcatV2", "TensorListConcat",
               "TensorListLength", "TensorListElementShape")

_ES = {"element_dtype": F32, "shape_type": I32}


def _list_graph():
    """Every compiled list op on x [4, 3]; fetches named after what they show."""
    b = GraphBuilder()
    x = b.placeholder("x", F32, (4, 3))
    c = lambda name, v: b.const(name, np.asarray(v, I32))  # noqa: E731
    lst = b.op("TensorListFromTensor", [x, c("es3", [3])], **_ES)
    item0 = b.op("StridedSlice", [x, c("b0", [0]), c("e0", [1]), c("s0", [1])], T=F32, Index=I32,
                 shrink_axis_mask=1)
    lst = b.op("TensorListSetItem", [lst, c("i1", 1), item0], element_dtype=F32)
    out = {"stack": b.op("TensorListStack", [lst, c("es3b", [3])], element_dtype=F32, num_elements=4),
           "get": b.op("TensorListGetItem", [lst, c("i2", 2), c("es3c", [3])], element_dtype=F32, Tshape=I32),
           "gather": b.op("TensorListGather", [lst, c("idx", [3, 1]), c("es3d", [3])], element_dtype=F32),
           "length": b.op("TensorListLength", [lst]),
           "shape": b.op("TensorListElementShape", [lst], shape_type=I32)}
    reserved = b.op("TensorListReserve", [c("unknown", [-1]), c("n", 3)], **_ES)
    reserved = b.op("TensorListSetItem", [reserved, c("i0", 0), item0], element_dtype=F32)
    out["reserved"] = b.op("TensorListStack", [reserved, c("es3e", [3])], element_dtype=F32)
    pushed = b.op("EmptyTensorList", [c("es3f", [3]), c("max", 4)], **_ES)
    pushed = b.op("TensorListPushBack", [pushed, item0], element_dtype=F32)
    pushed = b.op("TensorListPushBack", [pushed, item0], element_dtype=F32)
    pushed, out["popped"] = b.op("TensorListPopBack", [pushed, c("es3g", [3])], element_dtype=F32, num_outputs=2)
    out["after_pop"] = b.op("TensorListStack", [pushed, c("es3h", [3])], element_dtype=F32)
    split = b.op("TensorListSplit", [x, c("es_split", [-1, 3]), c("lengths", [2, 2])], **_ES)
    out["concat"], out["lengths"] = b.op("TensorListConcatV2", [split, c("es_cat", [-1, 3]), b.const("lead", np.zeros(0, np.int64))],
                                         num_outputs=2, **_ES)
    out["concat_v1"], _ = b.op("TensorListConcat", [split], element_dtype=F32, num_outputs=2)
    return b.graph(), out


def _run(jit):
    graph, out = _list_graph()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        sess = hlobridge.Session(graph, jit=jit, cache_dir=False, min_cluster_size=1)
        return sess, dict(zip(out, sess.run(list(out.values()), {"x:0": X})))


def test_list_ops_compile_and_match_their_kernels():
    _, want = _run("off")
    sess, got = _run("auto")
    assert sess.compile_events and all(e.source != "fallback" for e in sess.compile_events)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
    np.testing.assert_array_equal(want["stack"], np.stack([X[0], X[0], X[2], X[3]]))
    np.testing.assert_array_equal(want["reserved"], np.stack([X[0], 0 * X[0], 0 * X[0]]))
    np.testing.assert_array_equal(want["after_pop"], X[:1])
    np.testing.assert_array_equal(want["concat"], X)
    assert want["length"] == 4 and list(want["shape"]) == [3] and list(want["lengths"]) == [2, 2]


def _one_list_graph(index, pops=0):
    b = GraphBuilder()
    x = b.placeholder("x", F32, (2, 3))
    lst = b.op("TensorListFromTensor", [x, b.const("es", np.array([3], I32))], **_ES)
    for i in range(pops):
        lst, _ = b.op("TensorListPopBack", [lst, b.const(f"pes{i}", np.array([3], I32))], element_dtype=F32,
                      num_outputs=2)
    b.op("TensorListGetItem", [lst, b.const("i", np.array(index, I32)), b.const("es2", np.array([3], I32))],
         name="get", element_dtype=F32, Tshape=I32)
    return b.graph()


def test_index_out_of_range_is_tensorflows_error_on_the_kernel():
    sess = hlobridge.Session(_one_list_graph(5), jit="off")
    with pytest.raises(InputError, match=r"node 'get' \(TensorListGetItem\).*element 5 in a list with 2 elements"):
        sess.run("get:0", {"x:0": X[:2]})


def test_pop_from_an_empty_list_is_an_error_naming_the_node():
    with pytest.raises(HlobridgeError, match=r"TensorListPopBack.*pop from an empty list"):
        hlobridge.Session(_one_list_graph(0, pops=3), jit="off").run("get:0", {"x:0": X[:2]})


def _fetched_list_graph():
    b = GraphBuilder()
    x = b.placeholder("x", F32, (4, 3))
    lst = b.op("TensorListFromTensor", [b.op("Tanh", [x], T=F32), b.const("es", np.array([3], I32))],
               name="lst", **_ES)
    b.op("TensorListStack", [lst, b.const("es2", np.array([3], I32))], name="stack", element_dtype=F32)
    return b.graph()


def test_a_fetched_list_keeps_its_group_out_of_clusters():
    sess = hlobridge.Session(_fetched_list_graph(), jit="auto", cache_dir=False, min_cluster_size=1)
    clustering = sess.clustering(["lst:0", "stack:0"], {"x:0": X})
    assert clustering.reasons["lst"] == clustering.reasons["stack"] == "variant_boundary"
    assert "Tanh" not in clustering.reasons  # the tensor side still compiles
    lst, stacked = sess.run(["lst:0", "stack:0"], {"x:0": X})
    np.testing.assert_allclose(stacked, np.tanh(X), rtol=1e-6)


def test_a_list_of_unknown_capacity_stays_on_its_kernels():
    b = GraphBuilder()
    x = b.placeholder("x", F32, (3,))
    lst = b.op("EmptyTensorList", [b.const("es", np.array([3], I32)), b.const("max", np.array(-1, I32))], **_ES)
    lst = b.op("TensorListPushBack", [lst, x], element_dtype=F32)
    b.op("TensorListGetItem", [lst, b.const("i", np.array(0, I32)), b.const("es2", np.array([3], I32))],
         name="get", element_dtype=F32, Tshape=I32)
    sess = hlobridge.Session(b.graph(), jit="auto", cache_dir=False, min_cluster_size=1)
    assert sess.clustering("get:0", {"x:0": X[0]}).reasons["get"] == "list_size_unknown"
    np.testing.assert_array_equal(sess.run("get:0", {"x:0": X[0]}), X[0])
