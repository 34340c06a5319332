"""Conformance cases for tf2xla's own `Xla*` ops (hlobridge/ops/xla/, docs/xla_ops.md).

TensorFlow has no CPU kernels for these ops: they run only inside an XLA cluster. Each case is
therefore a tf.function that calls a `jit_compile=True` tf.function holding the ops (its call
carries `_XlaMustCompile`), and the expected values are TensorFlow's results of that GraphDef
as written (imported into a session, which compiles the inner function with XLA). The ops are
written as users' code writes them: `tensorflow.compiler.tf2xla.python.xla`'s wrappers (what
Keras 3's TensorFlow backend calls) and their generated ops (`gen_xla_ops`, or `tf.raw_ops` for the SPMD ones) where there is no wrapper.
"""

import numpy as np
from tensorflow.compiler.tf2xla.ops import gen_xla_ops as gx
from tensorflow.compiler.tf2xla.python import xla

from .registry import STYLE_FUNCTION, TOL_ELEMENTWISE, TOL_SUMS, Built, case, concrete_graph, normal, tf

STYLE_XLA = "jit_compile tf.function called from a " + STYLE_FUNCTION


def _spec(name, shape, dtype=tf.float32):
    return tf.TensorSpec(shape, dtype, name=name)


def xla_case(body, specs, runs):
    """A GraphDef whose outer function calls `body` compiled by XLA (jit_compile=True)."""
    inner = tf.function(body, jit_compile=True)

    def model(*args):
        return {k: tf.identity(v, name=k) for k, v in inner(*args).items()}
    gd, outputs, _ = concrete_graph(model, *specs)
    return Built(gd, outputs, runs)


def _feeds(**arrays):
    return {f"{k}:0": v for k, v in arrays.items()}


# ============================================================================================
# slicing: what keras.ops.slice_update and the KV caches of keras-hub's decoders write


@case("xla_slicing", "xla",
      """XlaDynamicUpdateSlice as keras.ops.slice_update writes it (a KV cache's write at a fed
      step; a start past the end and a negative one, which XLA clamps), XlaDynamicSlice (clamped
      too), XlaPad with negative (cropping) and interior padding, XlaSplitND with padding and
      XlaConcatND removing it.""",
      style=STYLE_XLA, tol=TOL_ELEMENTWISE,
      expect_ops=["XlaDynamicUpdateSlice", "XlaDynamicSlice", "XlaPad", "XlaSplitND", "XlaConcatND"])
def _xla_slicing(rng):
    def body(cache, kv, step, x):
        zero = tf.constant(0)
        written = xla.dynamic_update_slice(cache, kv, tf.stack([zero, step, zero]))
        back = xla.dynamic_slice(written, tf.stack([zero, step - 1, zero]), [2, 3, 4])
        padded = xla.pad(x, tf.constant(-1.0), [1, -1], [-2, 2], [1, 0])
        parts = tf.raw_ops.XlaSplitND(input=x, N=4, num_splits=[2, 2], paddings=[1, 0])
        whole = tf.raw_ops.XlaConcatND(inputs=parts, num_concats=[2, 2], paddings=[1, 0])
        return {"written": written, "back": back, "padded": padded, "part3": parts[3], "whole": whole}
    specs = [_spec("cache", [2, 8, 4]), _spec("kv", [2, 2, 4]), _spec("step", [], tf.int32), _spec("x", [5, 4])]
    cache, kv, x = normal(rng, 2, 8, 4), normal(rng, 2, 2, 4), normal(rng, 5, 4)
    runs = [(f"step{s}", _feeds(cache=cache, kv=kv, step=np.int32(s), x=x)) for s in (3, 7, -2)]
    return xla_case(body, specs, runs)


def _fn(f, *dtypes):
    """A library function of scalars (a reducer, comparator or update computation)."""
    return tf.function(f).get_concrete_function(*[tf.TensorSpec([], d) for d in dtypes])


def _pb():
    from tensorflow.compiler.xla import xla_data_pb2
    return xla_data_pb2


# ============================================================================================
# gather, scatter, dot, convolution, einsum: XLA's general forms with serialized dimension numbers


@case("xla_gather_scatter", "xla",
      """XlaGather (rows of a table by a fed index, a clamped out-of-range start; 2-D windows
      with an index vector dim of 0) and XlaScatter with an add and a max update computation
      (library functions; duplicate indices combine, an out-of-range window is skipped).""",
      style=STYLE_XLA, tol=TOL_ELEMENTWISE, expect_ops=["XlaGather", "XlaScatter"])
def _xla_gather_scatter(rng):
    pb = _pb()

    def body(table, ids, updates):
        rows = xla.gather(table, ids[:, None], pb.GatherDimensionNumbers(
            offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1), [1, 4])
        windows = xla.gather(table, tf.stack([ids, ids]), pb.GatherDimensionNumbers(
            offset_dims=[1, 2], start_index_map=[0, 1], index_vector_dim=0), [2, 3])
        dn = pb.ScatterDimensionNumbers(update_window_dims=[1], inserted_window_dims=[0],
                                        scatter_dims_to_operand_dims=[0], index_vector_dim=1)
        added = gx.xla_scatter(operand=table, scatter_indices=ids[:, None], updates=updates,
                                      update_computation=_fn(lambda a, b: a + b, tf.float32, tf.float32),
                                      dimension_numbers=dn.SerializeToString(), indices_are_sorted=False)
        maxed = gx.xla_scatter(operand=table, scatter_indices=ids[:, None], updates=updates,
                                      update_computation=_fn(tf.maximum, tf.float32, tf.float32),
                                      dimension_numbers=dn.SerializeToString(), indices_are_sorted=False)
        return {"rows": rows, "windows": windows, "added": added, "maxed": maxed}
    specs = [_spec("table", [6, 4]), _spec("ids", [5], tf.int32), _spec("updates", [5, 4])]
    table, updates = normal(rng, 6, 4), normal(rng, 5, 4)
    runs = [("in_range", _feeds(table=table, ids=np.array([0, 5, 2, 2, 1], np.int32), updates=updates)),
            ("out_of_range", _feeds(table=table, ids=np.array([7, -1, 3, 3, 4], np.int32), updates=updates))]
    return xla_case(body, specs, runs)


@case("xla_dot_conv", "xla",
      """XlaDot (batch and contracting dims in unusual places), XlaDotV2 (int8 x int8 -> int32,
      bf16 -> f32 preferred types), XlaConv (NCHW, strides, padding, lhs and rhs dilation) and
      XlaConvV2 (feature groups, batch groups), XlaEinsum.""",
      style=STYLE_XLA, tol=TOL_SUMS,
      expect_ops=["XlaDot", "XlaDotV2", "XlaConv", "XlaConvV2", "XlaEinsum"])
def _xla_dot_conv(rng):
    pb = _pb()

    def body(a, b, img, w, q):
        dot = xla.dot_general(a, b, pb.DotDimensionNumbers(lhs_batch_dimensions=[1], rhs_batch_dimensions=[0],
                                                           lhs_contracting_dimensions=[0],
                                                           rhs_contracting_dimensions=[2]))
        qi = tf.cast(q, tf.int8)
        idot = xla.dot_general(qi, qi, pb.DotDimensionNumbers(lhs_contracting_dimensions=[1],
                                                              rhs_contracting_dimensions=[1]),
                               preferred_element_type=tf.int32)
        hdot = xla.dot_general(tf.cast(q, tf.bfloat16), tf.cast(q, tf.bfloat16),
                               pb.DotDimensionNumbers(lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[0]),
                               preferred_element_type=tf.float32)
        nchw = pb.ConvolutionDimensionNumbers(input_batch_dimension=0, input_feature_dimension=1,
                                              input_spatial_dimensions=[2, 3], kernel_output_feature_dimension=3,
                                              kernel_input_feature_dimension=2, kernel_spatial_dimensions=[0, 1],
                                              output_batch_dimension=0, output_feature_dimension=1,
                                              output_spatial_dimensions=[2, 3])
        conv = xla.conv(img, w, [2, 1], [(1, 2), (0, 1)], [1, 2], [2, 1], nchw)
        grouped = xla.conv(img, w[:, :, :2, :], [1, 1], [(0, 0), (1, 0)], [1, 1], [1, 1], nchw,
                           feature_group_count=2, use_v2=True)
        batched = xla.conv(img, w[:, :, :, :2], [1, 1], [(1, 1), (1, 1)], [1, 1], [1, 1], nchw,
                           batch_group_count=2, use_v2=True)
        ein = xla.einsum(a, tf.transpose(b, [0, 2, 1]), equation="kbi,bkj->bij")
        return {"dot": dot, "idot": idot, "hdot": hdot, "conv": conv, "grouped": grouped, "batched": batched,
                "ein": ein}
    specs = [_spec("a", [3, 2, 4]), _spec("b", [2, 5, 3]), _spec("img", [2, 4, 6, 5]), _spec("w", [3, 2, 4, 4]),
             _spec("q", [3, 4])]
    q = rng.integers(-100, 100, (3, 4)).astype(np.float32)
    runs = [("run", _feeds(a=normal(rng, 3, 2, 4), b=normal(rng, 2, 5, 3), img=normal(rng, 2, 4, 6, 5),
                           w=normal(rng, 3, 2, 4, 4), q=q))]
    return xla_case(body, specs, runs)


# ============================================================================================
# reductions with a user's computation


def _argmax_pair(a, ai, b, bi):
    take_a = (a > b) | ((a == b) & (ai < bi))
    return tf.where(take_a, a, b), tf.where(take_a, ai, bi)


@case("xla_reductions", "xla",
      """XlaReduce (a sum and a max reducer, library functions), XlaVariadicReduceV2 and
      XlaVariadicReduce (an argmax over (value, index) pairs; two sums), XlaReduceWindow (a max
      window with strides, padding and base/window dilation), XlaSelectAndScatter (MaxPool's
      gradient with a GE select and an add scatter, and a LE select).""",
      style=STYLE_XLA, tol=TOL_SUMS,
      expect_ops=["XlaReduce", "XlaVariadicReduceV2", "XlaVariadicReduce", "XlaReduceWindow",
                  "XlaSelectAndScatter"])
def _xla_reductions(rng):
    f32, i32 = tf.float32, tf.int32
    add, mx = _fn(lambda a, b: a + b, f32, f32), _fn(tf.maximum, f32, f32)

    def body(x, src):
        total = xla.reduce(x, tf.constant(0.0), [1], add)
        peak = xla.reduce(x, tf.constant(-np.inf), [0, 1], mx)
        idx = tf.broadcast_to(tf.range(6)[None, :], [4, 6])
        value, where = xla.variadic_reduce((x, idx), (tf.constant(-np.inf), tf.constant(0)), [1],
                                           _fn(_argmax_pair, f32, i32, f32, i32))
        sums = gx.xla_variadic_reduce([x, 2 * x], [tf.constant(0.0), tf.constant(1.0)], [0],
                                      _fn(lambda a, b, c, d: (a + c, b + d), f32, f32, f32, f32))
        pooled = xla.reduce_window(x, tf.constant(-np.inf), mx, [2, 2], [1, 2], [2, 1], [1, 2],
                                   [(1, 0), (0, 1)])
        grad = xla.select_and_scatter(x, [2, 2], [2, 2], [[0, 0], [0, 0]], src, tf.constant(0.0),
                                      _fn(tf.greater_equal, f32, f32), add)
        low = xla.select_and_scatter(x, [2, 3], [2, 3], [[0, 0], [0, 0]], src[:, :2], tf.constant(1.0),
                                     _fn(tf.less_equal, f32, f32), add)
        return {"total": total, "peak": peak, "value": value, "where": where, "sum0": sums[0], "sum1": sums[1],
                "pooled": pooled, "grad": grad, "low": low}
    specs = [_spec("x", [4, 6]), _spec("src", [2, 3])]
    x = normal(rng, 4, 6)
    x[1, 2] = x[1, 4] = 5.0  # a tie: the lower index wins
    runs = [("run", _feeds(x=x, src=normal(rng, 2, 3)))]
    return xla_case(body, specs, runs)


# ============================================================================================
# sorting


@case("xla_sorting", "xla",
      """XlaSort (float32 with -inf, +inf and -0.0: XLA's total order; int32), XlaKeyValueSort
      (float keys, int32 values), XlaVariadicSort along dimension 0 with a library comparator
      (descending by the first operand, ties by the second ascending), stable and not.""",
      style=STYLE_XLA, tol=TOL_ELEMENTWISE, expect_ops=["XlaSort", "XlaKeyValueSort", "XlaVariadicSort"])
def _xla_sorting(rng):
    f32, i32 = tf.float32, tf.int32

    def desc_then_asc(a0, b0, a1, b1):
        return (a0 > b0) | ((a0 == b0) & (a1 < b1))

    def body(x, k):
        keys, values = xla.key_value_sort(x, k)
        a, b = xla.variadic_sort([tf.round(x), k], 0, _fn(desc_then_asc, f32, f32, i32, i32), True)
        return {"sorted": xla.sort(x), "isorted": xla.sort(k), "keys": keys, "values": values, "a": a, "b": b}
    specs = [_spec("x", [4, 5]), _spec("k", [4, 5], tf.int32)]
    x = normal(rng, 4, 5) * 2
    x[0, 1], x[1, 3], x[2, 0], x[2, 4] = -np.inf, np.inf, -0.0, 0.0
    k = rng.permutation(20).reshape(4, 5).astype(np.int32)
    runs = [("run", _feeds(x=x, k=k))]
    return xla_case(body, specs, runs)


# ============================================================================================
# values and single-device annotations


@case("xla_values", "xla",
      """XlaBroadcastHelper (a vector into rank 3 at dim 1), XlaReducePrecision (bf16's 8/7 bits
      and e5m10, with overflow to inf, underflow to zero, NaN), XlaDequantize (MIN_COMBINED, four
      uint8 packed in a uint32, transposed and not), and the annotations that are the identity
      on one device: XlaSharding (replicated and tiled), XlaSpmdFullToShardShape and
      XlaSpmdShardToFullShape (replicated), XlaSetBound, XlaSetDynamicDimensionSize with a
      constant size (a slice), XlaRemoveDynamicDimensionSize, XlaOptimizationBarrier.""",
      style=STYLE_XLA, tol=TOL_ELEMENTWISE,
      expect_ops=["XlaBroadcastHelper", "XlaReducePrecision", "XlaDequantize", "XlaSharding",
                  "XlaSpmdFullToShardShape", "XlaSpmdShardToFullShape", "XlaSetBound",
                  "XlaSetDynamicDimensionSize", "XlaRemoveDynamicDimensionSize", "XlaOptimizationBarrier"])
def _xla_values(rng):
    pb = _pb()
    rep = pb.OpSharding(type=pb.OpSharding.REPLICATED).SerializeToString()
    tiled = pb.OpSharding(type=pb.OpSharding.OTHER, tile_assignment_dimensions=[2, 1],
                          tile_assignment_devices=[0, 1]).SerializeToString()

    def body(v, t, x, q, n):
        lhs, rhs = gx.xla_broadcast_helper(v, t, [1])
        barrier = gx.xla_optimization_barrier([x, x + 1])
        shard = xla.spmd_full_to_shard_shape(xla.sharding(x, sharding=rep), manual_sharding=rep)
        full = xla.spmd_shard_to_full_shape(shard * 2, manual_sharding=rep, full_shape=[5, 3])
        return {"lhs": lhs * rhs, "bf16": gx.xla_reduce_precision(x * 1e3, 8, 7),
                "e5m10": gx.xla_reduce_precision(x * 1e4, 5, 10),
                "deq": tf.cast(gx.xla_dequantize(q, -1.5, 2.0, "MIN_COMBINED", False), tf.float32),
                "deq_t": tf.cast(gx.xla_dequantize(q, 0.0, 1.0, "MIN_COMBINED", True), tf.float32),
                "tiled": xla.sharding(x, sharding=tiled) + 1, "full": full,
                "bound": gx.xla_set_bound(n, 10) * 3,
                "dyn": gx.xla_set_dynamic_dimension_size(x, 0, 3),
                "undyn": gx.xla_remove_dynamic_dimension_size(x * 2, 0),
                "b0": barrier[0], "b1": barrier[1]}
    specs = [_spec("v", [2]), _spec("t", [3, 2, 4]), _spec("x", [5, 3]), _spec("q", [2, 3], tf.uint32),
             _spec("n", [], tf.int32)]
    x = normal(rng, 5, 3)
    x[0, 0], x[0, 1], x[0, 2] = np.nan, 1e-12, 123.456
    q = rng.integers(0, 2 ** 32, (2, 3), dtype=np.uint64).astype(np.uint32)
    runs = [("run", _feeds(v=normal(rng, 2), t=normal(rng, 3, 2, 4), x=x, q=q, n=np.int32(4)))]
    return xla_case(body, specs, runs)


# ============================================================================================
# control flow and linear algebra: XLA's own forms


@case("xla_control_linalg", "xla",
      """XlaWhile (a counted loop with a library cond and body; two runs), XlaSelfAdjointEig (lower True and False: eigenvalues and |v|),
      XlaSvd (singular values, |U|, |V| and U S V^T; full U and V).""",
      style=STYLE_XLA, tol={"rtol": 1e-4, "atol": 1e-4},
      expect_ops=["XlaWhile", "XlaSelfAdjointEig", "XlaSvd"])
def _xla_control_linalg(rng):
    f32, i32 = tf.float32, tf.int32
    step = tf.function(lambda i, acc: (i + 1, acc * 1.5 + tf.cast(i, f32))).get_concrete_function(
        tf.TensorSpec([], i32), tf.TensorSpec([3], f32))
    cond = tf.function(lambda i, acc: i < 4).get_concrete_function(tf.TensorSpec([], i32), tf.TensorSpec([3], f32))

    def body(v, a, m):  # (XlaIf: TF 2.21's kernel reads an output_shapes attribute its op does not declare)
        _, looped = gx.xla_while([tf.constant(0), v], cond=cond, body=step)
        sym = a + tf.transpose(a)
        w, vec = xla.self_adjoint_eig(sym, True, 100, 1e-6)
        # lower=False on a symmetric matrix: TF 2.21 run from a session read the lower triangle of an
        # upper-triangular input (its eager jit the upper one), so the triangle is not compared here
        wu, vu = xla.self_adjoint_eig(sym * 2, False, 100, 1e-6)
        s, u, vv = xla.svd(m, 100, 1e-6)
        rebuilt = tf.matmul(u * s[None, :], vv[:, :2], transpose_b=True)
        return {"looped": looped, "w": w, "v_abs": tf.abs(vec), "w_upper": wu,
                "v_upper_abs": tf.abs(vu), "s": s, "u_abs": tf.abs(u), "vv_abs": tf.abs(vv), "rebuilt": rebuilt}
    specs = [_spec("v", [3]), _spec("a", [3, 3]), _spec("m", [2, 3])]
    runs = [(f"run{i}", _feeds(v=normal(rng, 3), a=normal(rng, 3, 3), m=normal(rng, 2, 3))) for i in range(2)]
    return xla_case(body, specs, runs)


# ============================================================================================
# random bits


@case("xla_rng_bits", "xla",
      """XlaRngBitGenerator as tf2xla's rng_bit_generator writes it (uint32 and uint64: TF's XLA kernel
      takes no other): PHILOX ([2, 3], uint64 [3], [5]), THREEFRY ([3, 3]: no even dimension, uint64
      [2, 2], [1]),
      AUTO_SELECT (uint32 [4]), each with its new state; two fed states per run.""",
      style=STYLE_XLA, tol=TOL_ELEMENTWISE, expect_ops=["XlaRngBitGenerator"])
def _xla_rng_bits(rng):
    alg = tf.random.Algorithm

    def body(philox, threefry):
        out = {}
        for name, a, state, shape, dtype in (
                ("p32", alg.PHILOX, philox, [2, 3], tf.uint32), ("p64", alg.PHILOX, philox, [3], tf.uint64),
                ("p5", alg.PHILOX, philox, [5], tf.uint32), ("t32", alg.THREEFRY, threefry, [3, 3], tf.uint32),
                ("t64", alg.THREEFRY, threefry, [2, 2], tf.uint64), ("t1", alg.THREEFRY, threefry, [1], tf.uint32),
                ("auto", alg.AUTO_SELECT, philox, [4], tf.uint32)):
            key, bits = xla.rng_bit_generator(a.value, state, shape, dtype)
            out[name], out[name + "_key"] = bits, key
        return out
    specs = [_spec("philox", [3], tf.uint64), _spec("threefry", [2], tf.uint64)]
    runs = [("small", _feeds(philox=np.array([1, 2, 3], np.uint64), threefry=np.array([1, 2], np.uint64))),
            ("carry", _feeds(philox=np.array([2 ** 63 + 5, 2 ** 64 - 2, 7], np.uint64),
                             threefry=np.array([2 ** 40 + 3, 2 ** 64 - 3], np.uint64)))]
    return xla_case(body, specs, runs)
