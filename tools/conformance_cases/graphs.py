"""Conformance cases for graph features: Grappler's fused ops, control flow v2 and v1, function
libraries."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import grappler_remap

from .registry import (STYLE_FUNCTION, STYLE_GRAPPLER, STYLE_V1_CF1, TOL_SUMS, Built, case, concrete_graph,
                       const, f32, inf, nan, normal, out, ph, tf, v1)

# ============================================================================================
# Grappler's fused ops


def remap_with_onednn(graph_def, fetch_nodes):
    """Grappler's remapper as a oneDNN build of TF runs it (TF_ENABLE_ONEDNN_OPTS=1, the x86 default):
    it fuses FusedBatchNorm + activation into _FusedBatchNormEx on CPU, which the reference
    environment (oneDNN off) does not. Runs in a subprocess: TF reads the variable at load."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.pb", Path(tmp) / "out.pb"
        src.write_bytes(graph_def.SerializeToString())
        env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "1"}
        subprocess.run([sys.executable, grappler_remap.__file__, str(src), str(dst), *fetch_nodes],
                       check=True, env=env)
        gd = tf.compat.v1.GraphDef()
        gd.ParseFromString(dst.read_bytes())
        return gd


def _fused_source(rng):
    """conv+bias+relu, conv+batchnorm+relu, matmul+bias+relu/relu6/leakyrelu/elu, matmul+bias."""
    g = tf.Graph()
    with g.as_default():
        x = ph("x", shape=[None, 5, 5, 3])
        w, w2 = const(rng, 3, 3, 3, 4), const(rng, 3, 3, 3, 4)
        b = const(rng, 4, scale=0.5)
        conv_relu = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b), name="conv_bias_relu")
        conv_relu6 = tf.nn.relu6(tf.nn.bias_add(tf.nn.conv2d(x, w2, 2, "VALID"), b), name="conv_bias_relu6")
        bn, _, _ = v1.nn.fused_batch_norm(tf.nn.conv2d(x, w2, 1, "SAME"), const(rng, 4) + 1.0, const(rng, 4),
                                          const(rng, 4), tf.abs(const(rng, 4)) + 0.5, is_training=False)
        conv_bn_relu = tf.nn.relu(bn, name="conv_bn_relu")
        flat = tf.reshape(conv_relu, [-1, 100])
        dense = lambda k: tf.nn.bias_add(tf.matmul(flat, const(rng, 100, 6)), const(rng, 6, scale=0.5))  # noqa: E731
        mm_relu = tf.nn.relu(dense(0), name="matmul_bias_relu")
        mm_relu6 = tf.nn.relu6(dense(1), name="matmul_bias_relu6")
        mm_leaky = tf.nn.leaky_relu(dense(2), 0.3, name="matmul_bias_leakyrelu")
        mm_elu = tf.nn.elu(dense(3), name="matmul_bias_elu")
        mm_bias = tf.identity(dense(4), name="matmul_bias")
        fetches = [conv_relu, conv_relu6, conv_bn_relu, mm_relu, mm_relu6, mm_leaky, mm_elu, mm_bias]
    return g.as_graph_def(), [t.name for t in fetches]


def bn_params(rng, channels):
    """Batch-norm scale, offset, mean, variance as Const nodes (the remapper matches Consts)."""
    return (tf.constant(normal(rng, channels, scale=0.3) + 1.0), tf.constant(normal(rng, channels, scale=0.3)),
            tf.constant(normal(rng, channels, scale=0.3)), tf.constant(np.abs(normal(rng, channels)) + 0.5))


def _runs_images(rng, name="x:0", shape=(5, 5, 3)):
    return [("batch2", {name: normal(rng, 2, *shape)}), ("batch1", {name: normal(rng, 1, *shape)})]


@case("grappler_fused_matmul_conv", "fused",
      """_FusedConv2D (BiasAdd+Relu, BiasAdd+Relu6, FusedBatchNorm+Relu) and _FusedMatMul
      (BiasAdd with Relu, Relu6, LeakyRelu alpha 0.3, Elu, and none) as Grappler's remapper
      writes them into saved graphs; TF's CPU kernels for the fused ops give the expected
      values.""",
      tol=TOL_SUMS, style=STYLE_GRAPPLER, expect_ops=["_FusedConv2D", "_FusedMatMul"])
def _grappler_fused(rng):
    gd, fetches = _fused_source(rng)
    fused = grappler_remap.remap(gd, [f.split(":")[0] for f in fetches])
    return Built(fused, fetches, _runs_images(rng))


@case("grappler_fused_batch_norm_ex", "fused",
      """_FusedBatchNormEx (FusedBatchNormV3 + Relu, inference and training) as the remapper of
      TF's oneDNN build (the x86 default) writes it for CPU; an inference batch norm followed by
      Add + Relu, which the same remapper decomposes into Rsqrt/Mul/Add/Sub.
      TF's CPU kernels without oneDNN cannot run _FusedBatchNormEx, so the expected values
      come from the same graph before the rewrite, in the reference environment.""",
      tol=TOL_SUMS, style=STYLE_GRAPPLER, expect_ops=["_FusedBatchNormEx"])
def _grappler_fbn_ex(rng):
    g = tf.Graph()
    with g.as_default():
        x = ph("x", shape=[None, 3, 3, 4])
        scale, offset, mean, var = bn_params(rng, 4)
        y, _, _ = v1.nn.fused_batch_norm(x, scale, offset, mean, var, is_training=False)
        side = tf.nn.relu(y + x * 0.5, name="bn_add_relu")
        plain = tf.nn.relu(v1.nn.fused_batch_norm(x * 2.0, scale, offset, mean, var, is_training=False)[0],
                           name="bn_relu")
        t, _, _ = v1.nn.fused_batch_norm(x, scale, offset, is_training=True)
        train = tf.nn.relu(t, name="bn_train_relu")
        fetches = [side.name, plain.name, train.name]
    gd = g.as_graph_def()
    fused = remap_with_onednn(gd, [f.split(":")[0] for f in fetches])
    runs = _runs_images(rng, shape=(3, 3, 4))
    # Expected values: the unfused graph. Write the fused one, with the unfused one's numbers.
    return Built(fused, fetches, runs, {"expected_from": "the graph before the remapper rewrite "
                                                         "(oneDNN off cannot run _FusedBatchNormEx)"},
                 reference_graph_def=gd)


# ============================================================================================
# control flow v2


@case("cond_v2", "control_flow_v2",
      """tf.cond in graph mode with control flow v2: StatelessIf on a fed bool and on a
      computed predicate, branches with different ops, a nested cond, a cond returning two
      tensors, both branches taken across runs, an empty batch.""",
      expect_ops=["StatelessIf"])
def _cond_v2(rng):
    x, p = ph("x", shape=[None, 3]), ph("p", tf.bool, [])
    a = tf.cond(p, lambda: tf.nn.relu(x) * 2.0, lambda: tf.exp(x) - 1.0)
    s = tf.reduce_sum(x)
    b = tf.cond(s > 0, lambda: tf.cond(p, lambda: x + 1.0, lambda: x - 1.0), lambda: tf.square(x))
    c1, c2 = tf.cond(p, lambda: (x * 3.0, tf.reduce_max(x)), lambda: (-x, tf.reduce_min(x)))
    fetches = out(a=a, b=b, c1=c1, c2=c2)
    return fetches, [("true_pos", {x: np.abs(normal(rng, 2, 3)), p: np.bool_(True)}),
                     ("false_pos", {x: np.abs(normal(rng, 2, 3)), p: np.bool_(False)}),
                     ("true_neg", {x: -np.abs(normal(rng, 3, 3)), p: np.bool_(True)}),
                     ("false_empty", {x: np.zeros((0, 3), np.float32), p: np.bool_(False)})]


@case("while_v2", "control_flow_v2",
      """tf.while_loop with control flow v2 (StatelessWhile): a counted loop (zero-trip for
      n=0), a loop whose trip count depends on the data (halving until below 1), a nested loop,
      and maximum_iterations; runs n = 0, 1, 5.""",
      tol=TOL_SUMS, expect_ops=["StatelessWhile"])
def _while_v2(rng):
    x, n = ph("x", shape=[None]), ph("n", tf.int32, [])
    _, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + x * tf.cast(i, tf.float32)),
                           [tf.constant(0), tf.zeros_like(x)])
    halve = tf.while_loop(lambda v: tf.reduce_sum(tf.abs(v)) >= 1.0, lambda v: v * 0.5,
                          [x * tf.cast(n, tf.float32)])

    def outer_body(i, total):
        inner = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + 1), [0, total])[1]
        return i + 1, inner
    nested = tf.while_loop(lambda i, t: i < n, outer_body, [0, 0])[1]
    capped = tf.while_loop(lambda v: v < 100.0, lambda v: v * 2.0 + 1.0, [tf.reduce_sum(x)],
                           maximum_iterations=n)
    fetches = out(acc=acc, halve=halve, nested=nested, capped=capped)
    return fetches, [("n5", {x: normal(rng, 4, scale=3), n: np.int32(5)}),
                     ("n1", {x: normal(rng, 3), n: np.int32(1)}),
                     ("n0_zero_trip", {x: normal(rng, 4), n: np.int32(0)}),
                     ("n3_empty", {x: np.zeros(0, np.float32), n: np.int32(3)})]


@case("switch_case", "control_flow_v2",
      """tf.switch_case (Case / StatelessCase) with three branches; an index out of range runs
      the last branch (TF's default), as do negative indices.""", expect_ops=["StatelessCase"])
def _switch_case(rng):
    x, i = ph("x", shape=[None, 2]), ph("i", tf.int32, [])
    y = tf.switch_case(i, [lambda: x * 2.0, lambda: tf.sin(x), lambda: tf.reduce_sum(x, 1, keepdims=True) + x])
    fetches = out(y=y)
    xs = normal(rng, 3, 2)
    return fetches, [("i0", {x: xs, i: np.int32(0)}), ("i1", {x: xs, i: np.int32(1)}),
                     ("i2", {x: xs, i: np.int32(2)}), ("i7_default", {x: xs, i: np.int32(7)}),
                     ("neg_default", {x: xs, i: np.int32(-1)})]


@case("assert_v2", "control_flow_v2",
      """tf.debugging.assert_positive and assert_less in graph mode with control flow v2: each
      an Assert inside an AssertGuard If, the result depending on it through a control edge.
      One run passes; two fail, and expect TF's error (InvalidArgumentError) with the
      assertion's message.""", expect_ops=["Assert", "If"])
def _assert_v2(rng):
    x, lim = ph("x", shape=[None]), ph("limit", shape=[])
    checks = [tf.debugging.assert_positive(x, message="x must be positive"),
              tf.debugging.assert_less(tf.reduce_max(x), lim, message="max(x) must stay below limit")]
    with tf.control_dependencies(checks):
        y = tf.math.log(x)
    fetches = out(y=y)
    return fetches, [("passes", {x: f32([0.5, 1, 2]), lim: np.float32(3)}),
                     ("not_positive", {x: f32([1, -2, 3]), lim: np.float32(10)}, "x must be positive"),
                     ("over_limit", {x: f32([1, 2, 30]), lim: np.float32(10)}, "max(x) must stay below limit")]


# ============================================================================================
# control flow v1


@case("cf_v1_nested_while", "control_flow_v1",
      """Control flow v1 (Enter/Exit/Merge/Switch/NextIteration/LoopCond): a while loop nested
      in a while loop, the inner trip count depending on the outer counter; zero-trip outer
      (n=0) and inner loops.""", style=STYLE_V1_CF1, expect_ops=["Enter", "Exit", "LoopCond", "NextIteration"])
def _cf1_nested(rng):
    x, n = ph("x", shape=[None]), ph("n", tf.int32, [])

    def outer(i, acc):
        _, inner = v1.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + x), [0, acc])
        return i + 1, inner * 0.5
    _, acc = v1.while_loop(lambda i, a: i < n, outer, [0, tf.zeros_like(x)])
    fetches = out(acc=acc)
    return fetches, [("n4", {x: normal(rng, 3), n: np.int32(4)}), ("n1", {x: normal(rng, 3), n: np.int32(1)}),
                     ("n0_zero_trip", {x: normal(rng, 3), n: np.int32(0)})]


@case("cf_v1_cond_in_while", "control_flow_v1",
      """Control flow v1: a cond inside a while loop body (odd/even iterations take different
      branches), and a while loop inside a cond branch; both branches and a zero-trip loop
      across runs.""", style=STYLE_V1_CF1, expect_ops=["Switch", "Merge", "Enter", "Exit"])
def _cf1_cond_while(rng):
    x, n = ph("x", shape=[None]), ph("n", tf.int32, [])

    def body(i, a):
        a = v1.cond(tf.equal(tf.math.floormod(i, 2), 0), lambda: a + x, lambda: a * 0.5)
        return i + 1, a
    _, acc = v1.while_loop(lambda i, a: i < n, body, [0, tf.ones_like(x)])
    grow = lambda: v1.while_loop(lambda v: tf.reduce_sum(v) < 50.0, lambda v: v * 2.0 + 1.0, [tf.abs(x)])  # noqa: E731
    loop_in_cond = v1.cond(n > 2, grow, lambda: x - 1.0)
    fetches = out(acc=acc, loop_in_cond=loop_in_cond)
    return fetches, [("n5", {x: normal(rng, 3), n: np.int32(5)}), ("n2", {x: normal(rng, 3), n: np.int32(2)}),
                     ("n0", {x: normal(rng, 3), n: np.int32(0)})]


@case("cf_v1_cond_assert", "control_flow_v1",
      """Control flow v1: plain cond (Switch/Merge) on a fed predicate and tf.debugging.Assert
      (v1: guarded by a Switch/Merge cond); one passing run, one where the assertion fails and
      TF's error carries the message.""", style=STYLE_V1_CF1, expect_ops=["Switch", "Merge", "Assert"])
def _cf1_cond_assert(rng):
    x, p = ph("x", shape=[None, 2]), ph("p", tf.bool, [])
    y = v1.cond(p, lambda: tf.reduce_sum(x, 1), lambda: tf.reduce_max(x, 1))
    check = tf.debugging.Assert(tf.reduce_all(tf.math.is_finite(x)), ["x has non-finite values", x])
    with tf.control_dependencies([check]):
        z = tf.identity(y * 2.0)
    fetches = out(y=y, z=z)
    return fetches, [("true", {x: normal(rng, 3, 2), p: np.bool_(True)}),
                     ("false", {x: normal(rng, 2, 2), p: np.bool_(False)}),
                     ("fails", {x: f32([[1, nan]]), p: np.bool_(True)}, "x has non-finite values")]


# ============================================================================================
# function libraries (TF2 concrete functions, not inlined)

SPEC_X8 = tf.TensorSpec([None, 8], tf.float32, name="x")


def function_case_built(fn, specs, runs, **extra):
    gd, outputs, _ = concrete_graph(fn, *specs)
    return Built(gd, outputs, runs, extra)


@case("fn_nested_calls", "functions",
      """A tf.function calling tf.functions two levels deep (PartitionedCall inside a
      function body), one callee used twice, Const weights inside the function bodies, a
      callee with two outputs and an int32 argument.""",
      tol=TOL_SUMS, style=STYLE_FUNCTION, expect_ops=["PartitionedCall"])
def _fn_nested(rng):
    w1, w2 = normal(rng, 8, 6, scale=0.4), normal(rng, 6, 3, scale=0.4)

    @tf.function
    def dense(x, w):
        return tf.nn.relu(tf.matmul(x, w) + 0.1)

    @tf.function
    def block(x):
        h = dense(x, tf.constant(w1))
        return dense(h, tf.constant(w2)), tf.reduce_sum(h, 1)

    @tf.function
    def scale_by(x, k):
        return x * tf.cast(k, tf.float32), k + 1

    def model(x):
        y, s = block(x)
        z, k = scale_by(y, tf.constant(3))
        return {"z": z, "s": s, "k": k, "again": dense(x, tf.constant(w1))}
    return function_case_built(model, [SPEC_X8], [("batch3", {"x:0": normal(rng, 3, 8)}),
                                                 ("batch1", {"x:0": normal(rng, 1, 8)})])


@case("fn_stateful_assert", "functions",
      """A tf.function whose callee holds an Assert in an AssertGuard If and a CheckNumerics
      (so it is called with StatefulPartitionedCall) and calls another function. Runs: one
      passes, one fails the Assert, one (inf) fails CheckNumerics; both errors carry their
      messages.""",
      style=STYLE_FUNCTION, expect_ops=["StatefulPartitionedCall", "PartitionedCall", "Assert", "If",
                                        "CheckNumerics"])
def _fn_stateful(rng):
    @tf.function
    def normalize(x):
        return x / (tf.reduce_max(tf.abs(x), 1, keepdims=True) + 1e-3)

    @tf.function
    def checked(x):
        tf.debugging.Assert(tf.reduce_all(x > -100.0), ["input must be above -100, min:", tf.reduce_min(x)])
        x = tf.debugging.check_numerics(x, "input must be finite")
        return normalize(x) * 2.0

    def model(x):
        return checked(x) + 1.0
    return function_case_built(model, [SPEC_X8], [("passes", {"x:0": normal(rng, 2, 8)}),
                                                 ("assert_fails", {"x:0": f32([[-1000] + [1] * 7])},
                                                  "input must be above -100"),
                                                 ("check_numerics_fails", {"x:0": f32([[inf] + [1] * 7])},
                                                  "input must be finite")])


@case("fn_control_flow", "functions",
      """tf.function bodies holding v2 control flow: an If (tf.cond on a computed predicate)
      and a While (tf.while_loop with a fed trip count) inside a called function, with their
      branch/body functions in the library; zero-trip run.""",
      tol=TOL_SUMS, style=STYLE_FUNCTION, expect_ops=["PartitionedCall", "StatelessIf", "StatelessWhile"])
def _fn_cf(rng):
    @tf.function
    def step(x, n):
        y = tf.cond(tf.reduce_mean(x) > 0, lambda: x * 2.0, lambda: -x)
        _, z = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 0.5 + y), [0, y])
        return z

    def model(x, n):
        return step(x, n)
    specs = [tf.TensorSpec([None, 3], tf.float32, name="x"), tf.TensorSpec([], tf.int32, name="n")]
    return function_case_built(model, specs, [
        ("pos_n3", {"x:0": np.abs(normal(rng, 2, 3)), "n:0": np.int32(3)}),
        ("neg_n0", {"x:0": -np.abs(normal(rng, 2, 3)), "n:0": np.int32(0)})])


@case("fn_output_shapes", "functions",
      """A concrete-function GraphDef written with add_shapes=True: every node carries an
      _output_shapes attribute (in the graph and in the library), as older exporters wrote
      them; the callee has several inputs and outputs of mixed dtypes.""",
      style=STYLE_FUNCTION, expect_ops=["PartitionedCall"])
def _fn_shapes(rng):
    @tf.function
    def split_stats(x, idx):
        return tf.gather(x, idx, axis=1), tf.argmax(x, 1), tf.reduce_mean(x)

    def model(x, idx):
        a, b, c = split_stats(x, idx)
        return a * c, b
    specs = [tf.TensorSpec([None, 4], tf.float32, name="x"), tf.TensorSpec([None], tf.int32, name="idx")]
    cf = tf.function(model).get_concrete_function(*specs)
    gd = cf.graph.as_graph_def(add_shapes=True)
    assert all("_output_shapes" in n.attr for n in gd.node)
    return Built(gd, [t.name for t in cf.outputs],
                 [("batch2", {"x:0": normal(rng, 2, 4), "idx:0": np.array([3, 0, 3], np.int32)})])


