"""TF1 TensorArrays and stacks (ops/lists/tensor_arrays.py) on their reference kernels: TensorFlow's
semantics (fixed and dynamic sizes, writes once, clear_after_read, zeros for unwritten
indices, aggregating gradient arrays by source, close) and its errors, naming the node; and
under jit="auto" the XLA-style compiled arrays against the kernels, with the clustering
reasons of the arrays that stay on kernels.

TensorFlow's own numbers for these ops in real graphs are the conformance cases
tf1_dynamic_rnn_lstm, tf1_tensor_array_loop, tf1_tensor_array_ops and train_tf1_dynamic_rnn
(tests/e2e/test_conformance.py)."""

import numpy as np
import pytest

import hlobridge
from hlobridge.errors import InputError
from hlobridge.frontend.graph_builder import GraphBuilder, Shape

F32, I32 = np.float32, np.int32
X = np.arange(12, dtype=F32).reshape(4, 3) / 7.0


class _TA:
    """Builds TensorArray ops on one array, threading its flow as TF's Python wrapper does."""

    def __init__(self, b: GraphBuilder, name: str, size: int, **attrs):
        self.b = b
        attrs = {"dtype": F32, **attrs}
        if "element_shape" in attrs:
            attrs["element_shape"] = Shape(attrs["element_shape"])
        self.handle, self.flow = b.op("TensorArrayV3", [b.const(f"{name}_size", np.array(size, I32))], name=name,
                                      num_outputs=2, **attrs)
        self.name = name
        self.n = 0

    def _c(self, v):
        self.n += 1
        return self.b.const(f"{self.name}_c{self.n}", np.asarray(v))

    def write(self, index, value, name=None):
        self.flow = self.b.op("TensorArrayWriteV3", [self.handle, self._c(np.array(index, I32)), value, self.flow],
                              name=name, T=F32)
        return self

    def scatter(self, indices, value):
        self.flow = self.b.op("TensorArrayScatterV3", [self.handle, self._c(np.array(indices, I32)), value,
                                                       self.flow], T=F32)
        return self

    def split(self, value, lengths):
        self.flow = self.b.op("TensorArraySplitV3", [self.handle, value, self._c(np.array(lengths, np.int64)),
                                                     self.flow], T=F32)
        return self

    def read(self, index, name=None):
        return self.b.op("TensorArrayReadV3", [self.handle, self._c(np.array(index, I32)), self.flow], name=name,
                         dtype=F32)

    def gather(self, indices, name=None, **attrs):
        return self.b.op("TensorArrayGatherV3", [self.handle, self._c(np.array(indices, I32)), self.flow],
                         name=name, **{"dtype": F32, **attrs})

    def concat(self, name=None):
        return self.b.op("TensorArrayConcatV3", [self.handle, self.flow], name=name, dtype=F32, num_outputs=2)

    def size(self, name=None):
        return self.b.op("TensorArraySizeV3", [self.handle, self.flow], name=name)

    def grad(self, source, flow=None):
        g = object.__new__(_TA)
        g.b, g.name, g.n = self.b, f"{self.name}_grad_{source}", 0
        g.handle, g.flow = self.b.op("TensorArrayGradV3", [self.handle, flow or self.flow], source=source,
                                     num_outputs=2)
        return g


def _session(b, jit="off"):
    return hlobridge.Session(b.graph(), jit=jit, cache_dir=False, min_cluster_size=1)


def _ops_graph():
    b = GraphBuilder()
    x = b.placeholder("x", F32, (4, 3))
    a = _TA(b, "a", 4, clear_after_read=False).scatter([0, 1, 2, 3], b.op("Tanh", [x], T=F32))
    out = {"gathered": a.gather([3, 0, 3], name="gathered"), "read": a.read(1, name="read"),
           "size": a.size(name="size")}
    s = _TA(b, "s", 3, element_shape=(None, 2)).split(b.op("Reshape", [x, b.const("to62", np.array([6, 2], I32))],
                                                           T=F32, Tshape=I32), [1, 3, 2])
    out["concat"], out["lengths"] = s.concat(name="concat")
    return b, out


def test_ops_agree_with_and_without_jit_and_uneven_splits_stay_on_kernels():
    b, out = _ops_graph()
    names = list(out)
    for jit in ("off", "auto"):
        sess = _session(b, jit)
        got = dict(zip(names, sess.run([out[k] for k in names], {"x:0": X})))
        np.testing.assert_allclose(got["gathered"], np.tanh(X)[[3, 0, 3]], rtol=1e-6)
        np.testing.assert_allclose(got["read"], np.tanh(X)[1], rtol=1e-6)
        assert got["size"] == 4 and got["size"].dtype == I32
        np.testing.assert_array_equal(got["concat"], X.reshape(6, 2))
        assert got["lengths"].tolist() == [1, 3, 2] and got["lengths"].dtype == np.int64
    clustering = sess.clustering([out[k] for k in names], {"x:0": X})
    assert {"a", "gathered", "read", "size", "Tanh"} <= set(clustering.cluster_of)  # XLA-style, one cluster
    assert len({clustering.cluster_of[n] for n in ("a", "gathered", "read", "size")}) == 1
    # split with unequal lengths: XLA compiles only equal ones (the elements' shape is unknown)
    assert clustering.reasons["s"] == clustering.reasons["concat"] == "list_size_unknown"


COVERED_OPS = ("TensorArrayV3", "TensorArrayReadV3", "TensorArrayWriteV3", "TensorArrayGatherV3",
               "TensorArrayScatterV3", "TensorArrayConcatV3", "TensorArraySplitV3", "TensorArraySizeV3",
               "TensorArrayCloseV3")


def test_compiled_arrays_match_their_kernels():
    b = GraphBuilder()
    x = b.placeholder("x", F32, (4, 3))
    rows = b.op("Unpack", [b.op("Tanh", [x], T=F32)], T=F32, num=4, axis=0, num_outputs=4)
    a = _TA(b, "a", 5, element_shape=(3,), clear_after_read=False).scatter([4, 1, 0, 2], x).write(3, rows[1])
    out = {"read": a.read(3, name="read"), "gather": a.gather([0, 3, 4], name="gather"), "size": a.size(name="size")}
    whole = _TA(b, "w", 4).scatter([0, 1, 2, 3], x)  # the whole buffer at once
    out["whole"] = whole.gather([3, 2, 1, 0], name="whole")
    x62 = b.op("Reshape", [x, b.const("to62", np.array([6, 2], I32))], T=F32, Tshape=I32)
    s = _TA(b, "s", 3, clear_after_read=False).split(x62, [2, 2, 2])
    out["concat"], out["lengths"] = s.concat(name="concat")
    out["split_item"] = s.read(1, name="split_item")
    b.op("TensorArrayCloseV3", [s.handle], name="close", num_outputs=0)
    names = list(out)
    want = dict(zip(names, _session(b, "off").run([out[k] for k in names], {"x:0": X})))
    sess = _session(b, "auto")
    got = dict(zip(names, sess.run([out[k] for k in names], {"x:0": X})))
    clustering = sess.clustering([out[k] for k in names] + ["close"], {"x:0": X})
    assert not clustering.reasons, clustering.reasons
    for k in names:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
    np.testing.assert_allclose(want["gather"], np.stack([X[2], np.tanh(X[1]), X[0]]), rtol=1e-6)
    np.testing.assert_array_equal(want["whole"], X[::-1])
    np.testing.assert_array_equal(want["concat"], X.reshape(6, 2))
    assert want["size"] == 5 and want["lengths"].tolist() == [2, 2, 2]


def test_dynamic_rnn_loops_compile_and_gradient_arrays_stay_on_kernels():
    """tf1_dynamic_rnn_lstm's while loop (functionalized, carrying two arrays' handles and
    flows) compiles with its arrays; in train_tf1_dynamic_rnn the gradient arrays and the
    stacks of the v1 gradient loop keep their loops on kernels, with the reason; tf1_raw_rnn's
    loop stays on kernels for its dynamic_size array only."""
    from tests.corpus import Case
    from tests.conftest import TESTS
    case = Case.load(TESTS / "conformance" / "tf1_dynamic_rnn_lstm")
    sess = hlobridge.Session(case.graph_path, jit="auto", cache_dir=False)
    run = case.meta["runs"][0]
    feeds = {name: case.array(key) for name, key in run["feeds"].items()}
    clustering = sess.clustering(list(run["expected"]), feeds)
    ops = {sess.graph.nodes[n].op for n in clustering.cluster_of}
    assert {"While", "TensorArrayV3", "TensorArrayScatterV3", "TensorArrayGatherV3"} <= ops
    assert not any(sess.graph.nodes[n].op.startswith("TensorArray") for n in clustering.reasons)
    train = Case.load(TESTS / "conformance" / "train_tf1_dynamic_rnn")
    sess = hlobridge.Session(train.graph_path, jit="auto", cache_dir=False)
    reasons = sess.clustering([train.meta["train_op"]] if "train_op" in train.meta else ["loss:0"],
                              {"x:0": np.zeros((8, 5, 3), F32), "y:0": np.zeros((8, 2), F32)}).reasons
    by_op = {sess.graph.nodes[n].op: r for n, r in reasons.items()}
    assert by_op["TensorArrayGradV3"] == by_op["StackV2"] == "tensor_array"
    # raw_rnn: the loop body (a v1 cond reading an array, functionalized into an If) compiles;
    # the dynamic_size output array is what keeps the loop on kernels
    raw = Case.load(TESTS / "conformance" / "tf1_raw_rnn")
    sess = hlobridge.Session(raw.graph_path, jit="auto", cache_dir=False)
    reasons = sess.clustering(["outputs:0"], {"x:0": np.zeros((2, 5, 3), F32)}).reasons
    assert reasons["rnn/while/While"] == reasons["rnn/rnn_output_0"] == "list_size_unknown"


def _one(build, fetch="out:0", feeds=None):
    b = GraphBuilder()
    x = b.placeholder("x", F32, (3,))
    build(b, x)
    return _session(b).run(fetch, feeds or {"x:0": X[0]})


def test_an_unwritten_index_reads_as_zeros_when_the_element_shape_is_known():
    got = _one(lambda b, x: _TA(b, "t", 3, element_shape=(3,)).write(0, x).gather([0, 1, 2], name="out"))
    np.testing.assert_array_equal(got, np.stack([X[0], 0 * X[0], 0 * X[0]]))
    with pytest.raises(InputError, match=r"Could not read from TensorArray index 1.*not fully defined"):
        _one(lambda b, x: _TA(b, "t", 3).write(0, x).read(1, name="out"))


@pytest.mark.parametrize("build, message", [
    (lambda b, x: _TA(b, "t", 2).write(0, x).write(0, x).read(0, name="out"),
     r"node '.*' \(TensorArrayWriteV3\).*index 0 because it has already been written to"),
    (lambda b, x: _TA(b, "t", 2).write(2, x).read(0, name="out"),
     r"Tried to write to index 2 but array is not resizeable and size is: 2"),
    (lambda b, x: _TA(b, "t", 2).write(-1, x).read(0, name="out"), r"Tried to write to index -1"),
    (lambda b, x: _TA(b, "t", 2).write(0, x).read(3, name="out"), r"Tried to read from index 3 but array size is: 2"),
    (lambda b, x: b.op("Pack", [(t := _TA(b, "t", 1).write(0, x)).read(0), t.read(0)], T=F32, N=2, name="out"),
     r"Could not read index 0 twice because it was cleared after a previous read"),
    (lambda b, x: _TA(b, "t", 1, element_shape=(4,)).write(0, x).read(0, name="out"),
     r"value shape is \[3\] which is incompatible with the TensorArray's inferred element shape: \[4\]"),
    (lambda b, x: _TA(b, "t", 2).write(0, x).gather([0], name="out", dtype=np.int32),
     r"TensorArray dtype is float32 but Op requested dtype int32"),
])
def test_tensorflows_errors_name_the_node(build, message):
    with pytest.raises(InputError, match=message):
        _one(build)


def test_identical_element_shapes_fix_the_shape_at_the_first_write():
    def build(b, x):
        t = _TA(b, "t", 2, identical_element_shapes=True, element_shape=(None,)).write(0, x)
        t.write(1, b.op("Slice", [x, b.const("b", np.array([0], I32)), b.const("s", np.array([2], I32))],
                        T=F32, Index=I32)).read(1, name="out")
    with pytest.raises(InputError, match=r"value shape is \[2\].*element shape: \[3\]"):
        _one(build)


def test_a_dynamic_size_array_grows():
    def build(b, x):
        t = _TA(b, "t", 0, dynamic_size=True, element_shape=(3,)).write(2, x)
        b.op("Pack", [t.size(), b.op("Cast", [b.op("Sum", [t.gather([0, 1, 2]), b.const("ax", np.array([0, 1], I32))],
                                                   T=F32, Tidx=I32), ], SrcT=F32, DstT=I32)],
             T=I32, N=2, name="out")
    assert _one(build).tolist() == [3, int(X[0].sum())]


def test_gradient_arrays_are_one_per_source_and_their_writes_add_up():
    def build(b, x):
        fwd = _TA(b, "f", 2, element_shape=(3,))
        g1 = fwd.grad("gradients").write(1, x)
        g2 = fwd.grad("gradients", flow=g1.flow).write(1, x)
        other = fwd.grad("other")
        b.op("Pack", [g2.read(1), g2.read(0), other.read(1)], T=F32, N=3, name="out")
    np.testing.assert_array_equal(_one(build), np.stack([2 * X[0], 0 * X[0], 0 * X[0]]))


def test_a_closed_array_refuses_reads():
    def build(b, x):
        t = _TA(b, "t", 1).write(0, x)
        close = b.op("TensorArrayCloseV3", [t.handle], name="close", num_outputs=0)
        b.op("TensorArrayReadV3", [t.handle, b.const("i", np.array(0, I32)), t.flow], dtype=F32, name="out",
             control_inputs=["close"])
        return close
    with pytest.raises(InputError, match=r"has already been closed"):
        _one(build)


def _stack_graph(pushes: int, pops: int, max_size: int = -1):
    b = GraphBuilder()
    x = b.placeholder("x", F32, (3,))
    stack = b.op("StackV2", [b.const("max", np.array(max_size, I32))], elem_type=F32, stack_name="s", name="stack")
    last = []
    for i in range(pushes):
        value = b.op("Mul", [x, b.const(f"k{i}", np.array(i + 1, F32))], T=F32)
        last = [b.op("StackPushV2", [stack, value], T=F32, name=f"push{i}", control_inputs=last)]
    popped = []
    for i in range(pops):
        popped.append(b.op("StackPopV2", [stack], elem_type=F32, name=f"pop{i}", control_inputs=last))
        last = [popped[-1]]
    b.op("StackCloseV2", [stack], name="close", num_outputs=0, control_inputs=last)
    return b, popped


def test_stacks_pop_last_in_first_out():
    b, popped = _stack_graph(3, 2)
    got = _session(b).run(popped + ["close"], {"x:0": X[0]})[:2]
    np.testing.assert_array_equal(np.stack(got), np.stack([3 * X[0], 2 * X[0]]))


@pytest.mark.parametrize("pushes, pops, max_size, message", [
    (1, 2, -1, r"node 'pop1' \(StackPopV2\).*Stack\[s_\d+\] is empty"),
    (2, 1, 1, r"node 'push1' \(StackPushV2\).*overflowed its max_size \(1\)"),
])
def test_stack_errors_name_the_node(pushes, pops, max_size, message):
    b, popped = _stack_graph(pushes, pops, max_size)
    with pytest.raises(InputError, match=message):
        _session(b).run(popped, {"x:0": X[0]})
