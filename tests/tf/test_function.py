"""hlobridge.tf.function against TensorFlow running the same function: an MLP of tf.Variables,
nested results, a second shape under one signature, per-call tracing, and the errors."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import hlobridge.tf as htf  # noqa: E402
from hlobridge.errors import HlobridgeError, UnsupportedOpsError  # noqa: E402

from .conftest import TOL, compiled_clusters  # noqa: E402

RNG = np.random.default_rng(29)


def _normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


class Mlp(tf.Module):
    """Two dense layers on tf.Variables: what freezing turns into constants."""

    def __init__(self):
        self.w1, self.b1 = tf.Variable(_normal(8, 16)), tf.Variable(_normal(16))
        self.w2, self.b2 = tf.Variable(_normal(16, 4)), tf.Variable(_normal(4))

    def __call__(self, x):
        h = tf.nn.relu(tf.matmul(x, self.w1) + self.b1)
        return tf.nn.softmax(tf.matmul(h, self.w2) + self.b2)


def test_an_mlp_matches_tensorflow_on_two_batch_sizes_with_one_trace():
    mlp, traces = Mlp(), []

    def forward(x):
        traces.append(x.shape)  # Python runs only while TensorFlow traces
        return mlp(x)

    f = htf.function(forward, input_signature=[tf.TensorSpec([None, 8], tf.float32)])
    for batch in (3, 5):
        x = _normal(batch, 8)
        got = f(x)
        assert isinstance(got, np.ndarray) and got.shape == (batch, 4)
        np.testing.assert_allclose(got, mlp(x).numpy(), **TOL)
    assert len(traces) == 1 and len(f.traces) == 1
    assert compiled_clusters(f) == 2  # the Session compiled the cluster once per batch size


def test_session_options_reach_the_session():
    mlp = Mlp()
    f = htf.function(mlp, input_signature=[tf.TensorSpec([None, 8], tf.float32)], jit="off")
    x = _normal(2, 8)
    np.testing.assert_allclose(f(x), mlp(x).numpy(), **TOL)
    (_, session), = f.traces.values()
    assert session.jit == "off" and compiled_clusters(f) == 0  # reference kernels only


def test_nested_results_keep_their_structure_and_tf_tensors_are_taken():
    def fn(x, pair):
        a, b = pair
        return {"sum": x + a, "parts": (x * b, tf.reduce_sum(x, axis=1)), "count": tf.size(x), "three": 3}

    spec = tf.TensorSpec([2, 3], tf.float32)
    f = htf.function(fn, input_signature=[spec, (spec, spec)])
    x, a, b = _normal(2, 3), _normal(2, 3), _normal(2, 3)
    got = f(tf.constant(x), (a, tf.constant(b)))
    want = fn(tf.constant(x), (tf.constant(a), tf.constant(b)))
    assert sorted(got) == ["count", "parts", "sum", "three"] and isinstance(got["parts"], tuple)
    assert got["three"].shape == () and got["three"] == 3  # TensorFlow made it a tensor
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        w = tf.convert_to_tensor(w)
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype.as_numpy_dtype
        np.testing.assert_allclose(g, w.numpy(), **TOL)


def test_without_a_signature_each_new_shape_traces_again():
    f = htf.function(lambda x: tf.cumsum(x * 2.0, axis=-1))
    for shape in [(2, 3), (4,), (2, 3)]:
        x = _normal(*shape)
        np.testing.assert_allclose(f(x), np.cumsum(x * 2.0, axis=-1), **TOL)
    assert len(f.traces) == 2


def test_as_a_decorator():
    @htf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def square(x):
        return x * x

    np.testing.assert_array_equal(square(np.arange(5, dtype=np.int32)), np.arange(5) ** 2)


def test_retrace_freezes_the_variables_current_values():
    v = tf.Variable([1.0, 2.0])
    f = htf.function(lambda x: x * v, input_signature=[tf.TensorSpec([2], tf.float32)])
    v.assign([10.0, 20.0])
    np.testing.assert_allclose(f(np.ones(2, np.float32)), [1.0, 2.0])  # frozen when traced
    f.retrace()
    np.testing.assert_allclose(f(np.ones(2, np.float32)), [10.0, 20.0])


def test_arguments_of_another_structure_are_one_line():
    f = htf.function(lambda x, y: x + y, input_signature=[tf.TensorSpec([2], tf.float32)] * 2)
    with pytest.raises(HlobridgeError, match=r"^<lambda> takes 2 argument\(s\) \(2 tensor\(s\) in all\), "
                                             r"got 1 argument\(s\)") as raised:
        f(np.ones(2, np.float32))
    assert "\n" not in str(raised.value)


def test_a_wrong_shape_names_the_feed():
    f = htf.function(lambda x: x + 1.0, input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    with pytest.raises(HlobridgeError, match=r"feed 'x:0' \(Placeholder\): expected shape"):
        f(np.ones((2, 3), np.float32))


def test_a_function_that_writes_a_variable_writes_tensorflows_variable():
    v = tf.Variable(0.0)

    def count(x):
        v.assign_add(tf.reduce_sum(x))
        return v * 2.0

    f = htf.function(count)  # per-call signatures: two Sessions, one variable
    got = [f(np.ones(n, np.float32)) for n in (3, 3, 2, 3)]
    assert [float(g) for g in got] == [6.0, 12.0, 16.0, 22.0] and float(v.numpy()) == 11.0
    assert len(f.traces) == 2
    v.assign(100.0)
    f.retrace()  # TensorFlow's new value is read again
    assert float(f(np.ones(1, np.float32))) == 202.0 and float(v.numpy()) == 101.0


def test_a_function_that_only_writes_runs_its_writes():
    v = tf.Variable([0, 0], dtype=tf.int32)
    f = htf.function(lambda i: v.scatter_nd_add([[0]], [i]), input_signature=[tf.TensorSpec([], tf.int32)])
    f(np.int32(5))
    f(np.int32(2))
    assert v.numpy().tolist() == [7, 0]


def test_a_captured_resource_that_is_not_a_variable_is_refused():
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer([1, 2], [10, 20]), -1)
    w = tf.Variable(0)

    def look(x):
        w.assign(x)
        return table.lookup(x)

    with pytest.raises(HlobridgeError, match=r"^look captures the resource '.*', which is not a tf.Variable"):
        htf.function(look, input_signature=[tf.TensorSpec([], tf.int32)])


def test_a_ragged_result_is_refused():
    def split(x):
        return tf.RaggedTensor.from_row_lengths(x, [1, 2])

    with pytest.raises(HlobridgeError, match=r"^split returns RaggedTensor: hlobridge.tf returns NumPy arrays"):
        htf.function(split, input_signature=[tf.TensorSpec([3], tf.float32)])


def test_unsupported_ops_are_hlobridges_error_naming_the_nodes():
    def histogram(x):
        return tf.histogram_fixed_width(x, [0.0, 1.0], nbins=4, name="hist")

    with pytest.raises(UnsupportedOpsError) as raised:
        htf.function(histogram, input_signature=[tf.TensorSpec([8], tf.float32)])
    assert raised.value.nodes == [("hist", "HistogramFixedWidth")]
    assert "HistogramFixedWidth: hist" in str(raised.value)
