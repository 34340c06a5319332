"""Conformance cases, one per op family: elementwise math, reductions, shapes and indexing, nn."""

import numpy as np

from .registry import TOL_SUMS, case, const, f32, inf, nan, normal, out, ph, tf, v1

# ============================================================================================
# elementwise math

SPECIALS = f32([nan, inf, -inf, 0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 1.0, -1.0,
                2.5, -3.75, 20.0]).reshape(4, 4)
MODERATE = f32([nan, inf, -inf, 0.0, -0.0, 1e-6, -1e-6, 0.25, -0.25, 0.5, -0.5, 0.999, -0.999,
                1.0, -1.0, 3.0]).reshape(4, 4)


def unary_case(name, ops, specials, scale, description, expect):
    """One float32 placeholder [None, 4] through each op in `ops` (output name -> fn)."""
    @case(name, "elementwise", description, expect_ops=expect)
    def build(rng):
        x = ph("x", shape=[None, 4])
        fetches = out(**{k: f(x) for k, f in ops.items()})
        return fetches, [("batch3", {x: normal(rng, 3, 4, scale=scale)}),
                         ("specials", {x: specials}), ("empty", {x: np.zeros((0, 4), np.float32)})]
    return build


unary_case("math_exp_log", {
    "exp": tf.exp, "expm1": tf.math.expm1, "log": tf.math.log, "log1p": tf.math.log1p,
    "sqrt": tf.sqrt, "rsqrt": tf.math.rsqrt, "reciprocal": tf.math.reciprocal, "square": tf.square,
    "pow_3": lambda x: tf.pow(x, 3.0), "pow_half": lambda x: tf.pow(tf.abs(x), 0.5)},
    SPECIALS, 2.0,
    "Exp, Expm1, Log, Log1p, Sqrt, Rsqrt, Reciprocal, Square, Pow (x^3, |x|^0.5) on float32; runs: "
    "random, NaN/inf/signed zeros/tiny/huge values (domain errors give NaN, poles give inf), empty.",
    ["Exp", "Expm1", "Log", "Log1p", "Sqrt", "Rsqrt", "Reciprocal", "Square", "Pow", "Abs"])

unary_case("math_trig", {
    "sin": tf.sin, "cos": tf.cos, "tan": tf.tan, "asin": tf.asin, "acos": tf.acos, "atan": tf.atan,
    "sinh": tf.sinh, "cosh": tf.cosh, "tanh": tf.tanh, "asinh": tf.asinh, "acosh": tf.acosh,
    "atanh": tf.atanh}, MODERATE, 1.0,
    "Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh on float32; runs: "
    "random, NaN/inf/values at and inside the domains' edges, empty.",
    ["Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh"])

unary_case("math_erf", {"erf": tf.math.erf, "erfc": tf.math.erfc}, SPECIALS, 2.0,
           "Erf and Erfc on float32, including tails (erfc(20) underflows) and NaN/inf.",
           ["Erf", "Erfc"])

unary_case("math_rounding_sign", {
    "abs": tf.abs, "neg": tf.negative, "sign": tf.sign, "floor": tf.floor, "ceil": tf.math.ceil,
    "round": tf.round, "rint": tf.math.rint, "isnan": tf.math.is_nan, "isinf": tf.math.is_inf,
    "isfinite": tf.math.is_finite},
    f32([nan, inf, -inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.4999, -0.7, 7.0, 1e30,
         -1e-30]).reshape(4, 4), 3.0,
    "Abs, Neg, Sign, Floor, Ceil, Round (half to even), Rint, IsNan, IsInf, IsFinite; runs "
    "include halves (round-half-even), signed zeros, NaN/inf.",
    ["Abs", "Neg", "Sign", "Floor", "Ceil", "Round", "Rint", "IsNan", "IsInf", "IsFinite"])

unary_case("activations", {
    "sigmoid": tf.sigmoid, "tanh": tf.tanh, "softplus": tf.nn.softplus, "softsign": tf.nn.softsign,
    "relu": tf.nn.relu, "relu6": tf.nn.relu6, "elu": tf.nn.elu, "selu": tf.nn.selu,
    "leaky_relu": lambda x: tf.nn.leaky_relu(x, alpha=0.1), "leaky_relu_default": tf.nn.leaky_relu,
    "swish": tf.nn.silu}, SPECIALS, 4.0,
    "Sigmoid, Tanh, Softplus, Softsign, Relu, Relu6, Elu, Selu, LeakyRelu (alpha 0.1 and the "
    "default 0.2), swish (x*sigmoid(x)); runs include saturation (+-1e30, +-inf) and NaN.",
    ["Sigmoid", "Tanh", "Softplus", "Softsign", "Relu", "Relu6", "Elu", "Selu", "LeakyRelu"])

unary_case("gelu", {
    "gelu_exact": lambda x: tf.nn.gelu(x, approximate=False),
    "gelu_tanh": lambda x: tf.nn.gelu(x, approximate=True)}, SPECIALS, 3.0,
    "tf.nn.gelu exact (TF 2.21 writes 0.5x erfc(-x/sqrt 2)) and the tanh approximation (Pow, "
    "Tanh), as TF decomposes them.", ["Erfc", "Tanh", "Pow"])


@case("binary_float", "elementwise",
      """AddV2, Sub, Mul, RealDiv, DivNoNan, Maximum, Minimum, Pow, FloorDiv, FloorMod,
      SquaredDifference, Atan2, Xdivy/Xlogy on float32 with broadcasting ([N,4] op [4] and
      [N,1]); runs include zeros in divisors (inf, NaN, DivNoNan's 0), negatives for FloorMod
      (Python sign rule) and NaN (Maximum/Minimum propagate NaN).""",
      expect_ops=["AddV2", "Sub", "Mul", "RealDiv", "DivNoNan", "Maximum", "Minimum", "Pow",
                  "FloorDiv", "FloorMod", "SquaredDifference", "Atan2", "Xdivy", "Xlogy"])
def _binary_float(rng):
    x, y, c = ph("x", shape=[None, 4]), ph("y", shape=[4]), ph("c", shape=[None, 1])
    fetches = out(add=x + y, sub=x - c, mul=x * y, div=x / y, div_no_nan=tf.math.divide_no_nan(x, y),
                  maximum=tf.maximum(x, y), minimum=tf.minimum(x, c), pow=tf.pow(tf.abs(x), y),
                  floordiv=tf.math.floordiv(x, y), floormod=tf.math.floormod(x, y),
                  sqdiff=tf.math.squared_difference(x, c), atan2=tf.atan2(x, y),
                  xdivy=tf.math.xdivy(x, y), xlogy=tf.math.xlogy(x, tf.abs(y)))
    return fetches, [
        ("batch3", {x: normal(rng, 3, 4, scale=3), y: f32([1.5, -2.0, 0.75, 3.0]), c: normal(rng, 3, 1)}),
        ("zeros_negatives", {x: f32([[5, -5, 0, 7.5], [-7.5, 0, nan, 1], [inf, -inf, 2, -2]]),
                             y: f32([0, 2, 0, -2]), c: f32([[0], [nan], [-1]])}),
        ("empty", {x: np.zeros((0, 4), np.float32), y: f32([1, 2, 3, 4]), c: np.zeros((0, 1), np.float32)}),
    ]


@case("binary_int", "elementwise",
      """Integer arithmetic on int32 and int64: AddV2, Sub, Mul, FloorDiv, FloorMod,
      TruncateDiv, TruncateMod, Maximum, Minimum, Neg, Abs, Square, BitwiseAnd/Or/Xor,
      LeftShift/RightShift; negative operands (floor vs. truncation rules), broadcasting.""",
      expect_ops=["FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "BitwiseAnd", "LeftShift"])
def _binary_int(rng):
    a, b = ph("a", tf.int32, [None]), ph("b", tf.int32, [None])
    a64, b64 = tf.cast(a, tf.int64), tf.cast(b, tf.int64)
    fetches = out(add=a + b, sub=a - b, mul=a * b, floordiv=tf.math.floordiv(a, b),
                  floormod=tf.math.floormod(a, b), truncdiv=tf.truncatediv(a, b),
                  truncmod=tf.truncatemod(a, b), maximum=tf.maximum(a, 3), minimum=tf.minimum(a, b),
                  neg=-a, abs=tf.abs(a), square=tf.square(b),
                  floordiv64=tf.math.floordiv(a64, b64), mul64=a64 * b64 * 1000000,
                  band=tf.bitwise.bitwise_and(a, b), bor=tf.bitwise.bitwise_or(a, b),
                  bxor=tf.bitwise.bitwise_xor(a, b), lshift=tf.bitwise.left_shift(a, 2),
                  rshift=tf.bitwise.right_shift(a, 1))
    return fetches, [
        ("mixed_signs", {a: np.array([7, -7, 7, -7, 0, 100, -1], np.int32),
                         b: np.array([2, 2, -2, -2, 3, 7, 5], np.int32)}),
        ("empty", {a: np.zeros(0, np.int32), b: np.zeros(0, np.int32)}),
    ]


@case("compare_logical", "elementwise",
      """Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual on float32 (with NaN and
      broadcasting) and int32; LogicalAnd, LogicalOr, LogicalNot, and logical_xor as TF builds
      it.""",
      expect_ops=["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                  "LogicalAnd", "LogicalOr", "LogicalNot"])
def _compare_logical(rng):
    x, y = ph("x", shape=[None, 3]), ph("y", shape=[3])
    i, p, q = ph("i", tf.int32, [None]), ph("p", tf.bool, [None]), ph("q", tf.bool, [None])
    fetches = out(eq=tf.equal(x, y), ne=tf.not_equal(x, y), lt=tf.less(x, y), le=tf.less_equal(x, y),
                  gt=tf.greater(x, y), ge=tf.greater_equal(x, y), int_lt=tf.less(i, 2),
                  int_eq=tf.equal(i, -1), land=tf.logical_and(p, q), lor=tf.logical_or(p, q),
                  lnot=tf.logical_not(p), lxor=tf.math.logical_xor(p, q))
    tf_ = np.array([True, True, False, False])
    return fetches, [
        ("values", {x: f32([[1, 2, nan], [3, -0.0, 0], [inf, -inf, 2]]), y: f32([1, 0, nan]),
                    i: np.array([-1, 2, 5, 1], np.int32), p: tf_, q: np.array([True, False, True, False])}),
        ("empty", {x: np.zeros((0, 3), np.float32), y: f32([0, 0, 0]), i: np.zeros(0, np.int32),
                   p: np.zeros(0, bool), q: np.zeros(0, bool)}),
    ]


@case("cast", "elementwise",
      """Cast between float32, float64, float16, bfloat16 (read back as float32), int32, int64,
      uint8, bool: float->int truncates toward zero, ->bool is x != 0, float32->float16/bfloat16
      rounds to nearest even, int64->int32 wraps.""", expect_ops=["Cast"])
def _cast(rng):
    x, i = ph("x", shape=[None]), ph("i", tf.int64, [None])
    fetches = out(to_int32=tf.cast(x, tf.int32), to_int64=tf.cast(x, tf.int64),
                  to_bool=tf.cast(x, tf.bool), to_f64=tf.cast(x, tf.float64),
                  to_f16=tf.cast(x, tf.float16),
                  bf16_round_trip=tf.cast(tf.cast(x, tf.bfloat16), tf.float32),
                  bool_to_f32=tf.cast(tf.cast(x, tf.bool), tf.float32),
                  f16_to_f32=tf.cast(tf.cast(x, tf.float16), tf.float32),
                  i64_to_i32=tf.cast(i, tf.int32), i64_to_f32=tf.cast(i, tf.float32),
                  i64_to_u8=tf.cast(tf.math.floormod(i, 256), tf.uint8))
    return fetches, [
        ("values", {x: f32([0.0, -0.0, 0.4, -0.6, 1.5, -2.5, 65504.0, 1.0009765625, 1.00048828125,
                            3.14159265, 100000.0, -7.99]),
                    i: np.array([0, -1, 2**31 + 5, -(2**31) - 7, 300, 12345678901], np.int64)}),
        ("empty", {x: np.zeros(0, np.float32), i: np.zeros(0, np.int64)}),
    ]


@case("bitcast", "elementwise",
      """Bitcast float32<->int32 (same width), float32->uint8 (adds a trailing dimension of 4,
      little-endian bytes), uint8[...,4]->float32, int32->float16 (adds a dimension of 2).""",
      expect_ops=["Bitcast"])
def _bitcast(rng):
    x, b = ph("x", shape=[None]), ph("b", tf.uint8, [None, 4])
    fetches = out(f_to_i=tf.bitcast(x, tf.int32), i_to_f=tf.bitcast(tf.bitcast(x, tf.int32) + 1, tf.float32),
                  f_to_u8=tf.bitcast(x, tf.uint8), u8_to_f=tf.bitcast(b, tf.float32),
                  i_to_f16=tf.bitcast(tf.bitcast(x, tf.int32), tf.float16))
    return fetches, [
        ("values", {x: f32([1.0, -2.5, 0.0, -0.0, inf]),
                    b: np.array([[0, 0, 128, 63], [0, 0, 192, 127], [1, 2, 3, 4]], np.uint8)}),
        ("empty", {x: np.zeros(0, np.float32), b: np.zeros((0, 4), np.uint8)}),
    ]


@case("elementwise_misc", "elementwise",
      """AddN (3 inputs), ClipByValue (tensor bounds), BiasAdd (NHWC and NCHW), Minimum/Maximum
      as clip_by_value writes them in TF2, L2Loss, and the float64 and float16 versions of a
      few ops (Exp, Tanh, Mul, AddV2, Relu).""",
      expect_ops=["AddN", "BiasAdd", "L2Loss"])
def _elementwise_misc(rng):
    x = ph("x", shape=[None, 3])
    img = ph("img", shape=[None, 2, 2, 3])
    b = tf.constant(f32([0.5, -1.0, 2.0]))
    x64, x16 = tf.cast(x, tf.float64), tf.cast(x, tf.float16)
    fetches = out(addn=tf.add_n([x, x * 2.0, tf.ones_like(x)]),
                  clip=tf.clip_by_value(x, -1.0, 0.5),
                  clip_op=tf.raw_ops.ClipByValue(t=x, clip_value_min=tf.fill(tf.shape(x), -0.25),
                                                 clip_value_max=tf.constant(0.75)),
                  bias_nhwc=tf.nn.bias_add(img, b),
                  bias_nchw=tf.nn.bias_add(tf.transpose(img, [0, 3, 1, 2]), b, data_format="NCHW"),
                  l2loss=tf.nn.l2_loss(x),
                  f64=tf.exp(x64) * tf.tanh(x64) + x64, f16=tf.nn.relu(x16 * x16 + x16))
    return fetches, [("batch2", {x: normal(rng, 2, 3), img: normal(rng, 2, 2, 2, 3)}),
                     ("batch1", {x: f32([[nan, 3, -3]]), img: normal(rng, 1, 2, 2, 3)})]


# ============================================================================================
# reductions


@case("reduce_float", "reduction",
      """Sum, Mean, Max, Min, Prod, EuclideanNorm and reduce_logsumexp on float32 [N,3,4] over
      one axis, a negative axis, two axes and all axes, keep_dims true and false; runs include
      an empty batch (Sum 0, Prod 1, Mean NaN, Max -inf, Min inf) and NaN.""",
      tol=TOL_SUMS, expect_ops=["Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm"])
def _reduce_float(rng):
    x = ph("x", shape=[None, 3, 4])
    fetches = out(sum_1=tf.reduce_sum(x, 1), sum_neg1_keep=tf.reduce_sum(x, -1, keepdims=True),
                  mean_02=tf.reduce_mean(x, [0, 2]), mean_all_keep=tf.reduce_mean(x, keepdims=True),
                  max_2=tf.reduce_max(x, 2), max_0_keep=tf.reduce_max(x, 0, keepdims=True),
                  min_12=tf.reduce_min(x, [1, 2]), prod_2=tf.reduce_prod(x, 2),
                  prod_0=tf.reduce_prod(x, 0), norm_2=tf.raw_ops.EuclideanNorm(input=x, axis=[2]),
                  logsumexp_2=tf.reduce_logsumexp(x, 2), sum_all=tf.reduce_sum(x))
    x2 = normal(rng, 2, 3, 4)
    x2[1, 2, 3] = nan
    return fetches, [("batch2", {x: normal(rng, 2, 3, 4)}), ("nan", {x: x2}),
                     ("empty", {x: np.zeros((0, 3, 4), np.float32)})]


@case("reduce_int_bool", "reduction",
      """Sum, Prod, Max, Min on int32 (keep_dims both ways), All and Any on bool (axis, all
      axes, keep_dims), including an empty batch (All true, Any false).""",
      expect_ops=["Sum", "Prod", "Max", "Min", "All", "Any"])
def _reduce_int_bool(rng):
    i, b = ph("i", tf.int32, [None, 3]), ph("b", tf.bool, [None, 3])
    fetches = out(sum_1=tf.reduce_sum(i, 1), prod_0=tf.reduce_prod(i, 0), max_1_keep=tf.reduce_max(i, 1, keepdims=True),
                  min_0=tf.reduce_min(i, 0), all_1=tf.reduce_all(b, 1), any_0=tf.reduce_any(b, 0),
                  all_all=tf.reduce_all(b), any_1_keep=tf.reduce_any(b, 1, keepdims=True))
    return fetches, [
        ("values", {i: np.array([[1, -2, 3], [4, 5, -6]], np.int32),
                    b: np.array([[True, False, True], [True, True, True]])}),
        ("empty", {i: np.zeros((0, 3), np.int32), b: np.zeros((0, 3), bool)}),
    ]


@case("argmax_argmin", "reduction",
      """ArgMax/ArgMin over axes 0, 1 and -1, output_type int64 (the default) and int32, on
      float32 and int32; ties resolve to the first index.""", expect_ops=["ArgMax", "ArgMin"])
def _argmax(rng):
    x, i = ph("x", shape=[None, 4]), ph("i", tf.int32, [None, 4])
    fetches = out(argmax_1=tf.argmax(x, 1), argmax_0_i32=tf.argmax(x, 0, output_type=tf.int32),
                  argmin_neg1=tf.argmin(x, -1), argmin_0=tf.argmin(x, 0),
                  int_argmax=tf.argmax(i, 1, output_type=tf.int32), int_argmin=tf.argmin(i, 0))
    return fetches, [
        ("random", {x: normal(rng, 3, 4), i: rng.integers(-5, 5, (3, 4)).astype(np.int32)}),
        ("ties", {x: f32([[1, 3, 3, 0], [2, 2, 2, 2], [-1, -5, -5, 4]]),
                  i: np.array([[7, 7, 1, 1], [0, 0, 0, 0], [3, 9, 9, 3]], np.int32)}),
        ("one_row", {x: normal(rng, 1, 4), i: np.array([[4, 3, 2, 1]], np.int32)}),
    ]


# ============================================================================================
# shapes and indexing


@case("reshape_transpose", "shape",
      """Reshape (with -1, to a scalar-free flat shape, from a computed shape), Transpose (3-d
      permutation, int32 data), ExpandDims (negative axis), Squeeze (listed axes and all),
      Shape, Size and Rank folded into arithmetic.""",
      expect_ops=["Reshape", "Transpose", "ExpandDims", "Squeeze", "Shape", "Size", "Rank"])
def _reshape_transpose(rng):
    x = ph("x", shape=[None, 2, 3])
    i = ph("i", tf.int32, [None, 1, 2])
    fetches = out(flat=tf.reshape(x, [-1]), rows=tf.reshape(x, [-1, 3]),
                  by_shape=tf.reshape(x, tf.stack([tf.shape(x)[0] * 2, 3])),
                  perm=tf.transpose(x, [2, 0, 1]), perm_int=tf.transpose(i, [1, 2, 0]),
                  expand=tf.expand_dims(x, -1), expand0=tf.expand_dims(x, 0),
                  squeeze1=tf.squeeze(i, [1]), squeeze_all=tf.squeeze(tf.expand_dims(x, 1)),
                  shape=tf.shape(x), size=tf.size(x), rank=tf.raw_ops.Rank(input=x),
                  shape_math=tf.cast(tf.size(x), tf.float32) * tf.reduce_sum(x))
    return fetches, [("batch2", {x: normal(rng, 2, 2, 3), i: rng.integers(0, 9, (2, 1, 2)).astype(np.int32)}),
                     ("batch1", {x: normal(rng, 1, 2, 3), i: np.array([[[1, 2]]], np.int32)})]


@case("concat_split_pack", "shape",
      """ConcatV2 (axis 0, -1, mixed inputs), Split (num_split 3 on axis 1), SplitV (sizes with a
      -1), Pack (axes 0 and 1), Unpack (axis 1), on float32 and int32.""",
      expect_ops=["ConcatV2", "Split", "SplitV", "Pack", "Unpack"])
def _concat_split(rng):
    x, y = ph("x", shape=[None, 6]), ph("y", shape=[None, 2])
    s0, s1, s2 = tf.split(x, 3, axis=1)
    v0, v1_, v2 = tf.split(x, [1, -1, 2], axis=1)
    u0, u1 = tf.unstack(y, axis=1)
    fetches = out(concat_last=tf.concat([x, y, x * 2], -1), concat0=tf.concat([y, y + 1], 0),
                  split0=s0, split2=s2 * s1, splitv0=v0, splitv1=v1_, splitv2=v2,
                  pack0=tf.stack([y, y * 3], 0), pack1=tf.stack([u0, u1, u0], 1), unpack1=u1,
                  concat_int=tf.concat([tf.cast(y, tf.int32), tf.zeros_like(tf.cast(y, tf.int32))], 1))
    return fetches, [("batch3", {x: normal(rng, 3, 6), y: normal(rng, 3, 2, scale=4)}),
                     ("empty", {x: np.zeros((0, 6), np.float32), y: np.zeros((0, 2), np.float32)})]


@case("slice_strided", "shape",
      """Slice (size -1) and StridedSlice with every mask: begin_mask, end_mask, ellipsis_mask,
      new_axis_mask, shrink_axis_mask; negative indices and strides, out-of-range ends clamped,
      a reversed full slice, a strided slice that is empty.""",
      expect_ops=["Slice", "StridedSlice"])
def _slice_strided(rng):
    x = ph("x", shape=[None, 5, 4])
    fetches = out(slice=tf.slice(x, [0, 1, 1], [-1, 3, 2]),
                  basic=x[:, 1:4, ::2], negative=x[:, -3:-1, -1:],
                  reverse=x[:, ::-1, ::-2], shrink=x[:, 2, 1], ellipsis=x[..., 1:3],
                  ellipsis_shrink=x[..., 0], new_axis=x[:, tf.newaxis, 1:, tf.newaxis, 2],
                  clamped=x[:, 2:100, -100:2], empty=x[:, 3:1, :], first_row=x[0],
                  last_step=x[:, 4:0:-2, 3])
    return fetches, [("batch2", {x: normal(rng, 2, 5, 4)}), ("batch1", {x: normal(rng, 1, 5, 4)})]


@case("slice_dynamic", "shape",
      """Slice and StridedSlice whose begin comes from a fed int32 tensor (not a constant):
      dynamic-offset slicing as graphs that index by a loop counter or a position feed do it.""",
      expect_ops=["Slice", "StridedSlice"])
def _slice_dynamic(rng):
    x, p = ph("x", shape=[6, 4]), ph("p", tf.int32, [])
    fetches = out(slice=tf.slice(x, tf.stack([p, 0]), [2, -1]), row=x[p], rows=x[p:p + 3, 1:],
                  gathered=tf.gather(x, p))
    return fetches, [("p0", {x: normal(rng, 6, 4), p: np.int32(0)}),
                     ("p3", {x: normal(rng, 6, 4), p: np.int32(3)})]


@case("tile_pad_broadcast", "shape",
      """Tile, Pad (CONSTANT), PadV2 (constant_values -1), MirrorPad REFLECT and SYMMETRIC,
      BroadcastTo, and a pad with a computed paddings tensor.""",
      expect_ops=["Tile", "Pad", "PadV2", "MirrorPad", "BroadcastTo"])
def _tile_pad(rng):
    x = ph("x", shape=[None, 3])
    pads = [[1, 0], [2, 1]]
    fetches = out(tile=tf.tile(x, [2, 3]), pad=tf.pad(x, pads), padv2=tf.pad(x, pads, constant_values=-1.0),
                  reflect=tf.pad(x, [[0, 0], [2, 2]], mode="REFLECT"),
                  symmetric=tf.pad(x, [[1, 1], [3, 0]], mode="SYMMETRIC"),
                  broadcast=tf.broadcast_to(x[:, :1], tf.stack([tf.shape(x)[0], 5])),
                  pad_computed=tf.pad(x, tf.stack([[0, tf.shape(x)[0]], [1, 1]])),
                  tile_int=tf.tile(tf.cast(x, tf.int32)[:, :2], [1, 2]))
    return fetches, [("batch2", {x: normal(rng, 2, 3)}), ("batch4", {x: normal(rng, 4, 3)})]


@case("fill_like_range", "shape",
      """Fill (dims from a Shape), ZerosLike, OnesLike (float32, int32, bool), Range with
      float and int32 arguments, a negative delta, a limit computed from a fed shape, and an
      empty range.""",
      expect_ops=["Fill", "ZerosLike", "OnesLike", "Range"])
def _fill_range(rng):
    x, n = ph("x", shape=[None, 2]), ph("n", tf.int32, [])
    fetches = out(fill=tf.fill(tf.shape(x), 2.5), fill_int=tf.fill([2, tf.shape(x)[0]], 7),
                  zeros=tf.zeros_like(x), ones=tf.ones_like(x), zeros_int=tf.zeros_like(tf.cast(x, tf.int32)),
                  ones_bool=tf.ones_like(x > 0), range_int=tf.range(n), range_float=tf.range(0.5, 3.0, 0.75),
                  range_neg=tf.range(n, -3, -2), range_shape=tf.range(tf.shape(x)[0]) * 10)
    return fetches, [("n5", {x: normal(rng, 3, 2), n: np.int32(5)}),
                     ("n0_empty", {x: np.zeros((0, 2), np.float32), n: np.int32(0)})]


@case("gather", "shape",
      """GatherV2 on axis 0 and 1, with batch_dims 1, with a scalar index and 2-d indices; the
      v1 Gather op; int32 and int64 indices.""", expect_ops=["GatherV2", "Gather"])
def _gather(rng):
    x, idx = ph("x", shape=[None, 5]), ph("idx", tf.int32, [None])
    b_idx = ph("bidx", tf.int64, [None, 2])
    fetches = out(axis0=tf.gather(x, tf.math.floormod(idx, tf.shape(x)[0])),
                  axis1=tf.gather(x, idx, axis=1), matrix_idx=tf.gather(x, [[0, 4], [2, 2]], axis=1),
                  scalar=tf.gather(x, 3, axis=1), batch_dims=tf.gather(x, b_idx, axis=1, batch_dims=1),
                  v1_gather=tf.raw_ops.Gather(params=tf.transpose(x), indices=idx))
    return fetches, [
        ("batch3", {x: normal(rng, 3, 5), idx: np.array([4, 0, 2, 2], np.int32),
                    b_idx: np.array([[0, 1], [4, 4], [3, 0]], np.int64)}),
        ("empty_indices", {x: normal(rng, 2, 5), idx: np.zeros(0, np.int32),
                           b_idx: np.array([[1, 2], [0, 0]], np.int64)}),
    ]


@case("gather_scatter_nd", "shape",
      """GatherNd (whole elements and slices, batched indices), ScatterNd (duplicate indices
      add up), TensorScatterUpdate and TensorScatterAdd.""",
      expect_ops=["GatherNd", "ScatterNd", "TensorScatterUpdate", "TensorScatterAdd"])
def _gather_scatter_nd(rng):
    x, ind = ph("x", shape=[4, 3]), ph("ind", tf.int32, [None, 2])
    upd = ph("upd", shape=[None])
    fetches = out(gather_elems=tf.gather_nd(x, ind), gather_rows=tf.gather_nd(x, ind[:, :1]),
                  gather_batched=tf.gather_nd(x, tf.reshape(ind, [-1, 1, 2])),
                  scatter=tf.scatter_nd(ind, upd, [4, 3]),
                  update=tf.tensor_scatter_nd_update(x, ind[:1], upd[:1]),
                  scatter_add=tf.tensor_scatter_nd_add(x, ind, upd))
    return fetches, [
        ("dups", {x: normal(rng, 4, 3), ind: np.array([[0, 1], [3, 2], [0, 1]], np.int32), upd: f32([1, 2, 3])}),
        ("one", {x: normal(rng, 4, 3), ind: np.array([[2, 0]], np.int32), upd: f32([-5])}),
    ]


@case("one_hot", "shape",
      """OneHot with depth 4 on axis -1 and 0, custom on/off values, float and int32 outputs;
      index -1 and index >= depth give an all-off row.""", expect_ops=["OneHot"])
def _one_hot(rng):
    i = ph("i", tf.int32, [None])
    fetches = out(last=tf.one_hot(i, 4), first=tf.one_hot(i, 4, axis=0),
                  custom=tf.one_hot(i, 3, on_value=5.0, off_value=-1.0),
                  as_int=tf.one_hot(tf.cast(i, tf.int64), 4, dtype=tf.int32))
    return fetches, [("values", {i: np.array([0, 3, -1, 5, 2], np.int32)}),
                     ("empty", {i: np.zeros(0, np.int32)})]


@case("select_where", "shape",
      """Select (tf.compat.v1.where: same-shape condition, and a rank-1 condition choosing rows),
      SelectV2 (tf.where with broadcasting condition and scalar branches): the three-input
      Where.""", expect_ops=["Select", "SelectV2"])
def _select(rng):
    c, x, y = ph("c", tf.bool, [None, 3]), ph("x", shape=[None, 3]), ph("y", shape=[None, 3])
    row = ph("row", tf.bool, [None])
    fetches = out(select=v1.where(c, x, y), select_rows=v1.where(row, x, y),
                  selectv2=tf.where(c, x, y), broadcast=tf.where(row[:, None], x, 0.0),
                  scalar_branches=tf.where(x > 0, 1.0, -1.0),
                  int_select=tf.where(c, tf.cast(x, tf.int32), -7))
    return fetches, [
        ("batch2", {c: np.array([[True, False, True], [False, False, True]]), x: normal(rng, 2, 3),
                    y: normal(rng, 2, 3), row: np.array([True, False])}),
        ("with_nan", {c: np.array([[True, False, False]]), x: f32([[nan, 1, -1]]), y: f32([[2, nan, inf]]),
                      row: np.array([False])}),
    ]


@case("reverse_cumulative", "shape",
      """ReverseV2 (one and two axes), the v1 Reverse op (bool dims), Cumsum (plain, exclusive,
      reverse, both), Cumprod (plain, exclusive+reverse), on float32 and int32.""",
      tol=TOL_SUMS, expect_ops=["ReverseV2", "Reverse", "Cumsum", "Cumprod"])
def _reverse_cumulative(rng):
    x = ph("x", shape=[None, 4])
    xi = tf.cast(tf.round(x * 3), tf.int32)
    fetches = out(rev1=tf.reverse(x, [1]), rev01=tf.reverse(x, [0, -1]),
                  rev_v1=tf.raw_ops.Reverse(tensor=x, dims=[True, False]),
                  cumsum=tf.cumsum(x, 1), cumsum_excl=tf.cumsum(x, 1, exclusive=True),
                  cumsum_rev=tf.cumsum(x, 0, reverse=True), cumsum_both=tf.cumsum(x, 1, exclusive=True, reverse=True),
                  cumprod=tf.math.cumprod(x, 1), cumprod_excl_rev=tf.math.cumprod(x, 1, exclusive=True, reverse=True),
                  cumsum_int=tf.cumsum(xi, 1))
    return fetches, [("batch3", {x: normal(rng, 3, 4)}), ("batch1", {x: f32([[1, -2, 0.5, 4]])})]


@case("top_k", "shape",
      """TopKV2 with k 1 and 3 (sorted), on float32 with ties (the lower index first) and int32,
      values and indices.""", expect_ops=["TopKV2"])
def _top_k(rng):
    x, i = ph("x", shape=[None, 5]), ph("i", tf.int32, [None, 5])
    v3, i3 = tf.math.top_k(x, 3)
    v1_, i1 = tf.math.top_k(x, 1)
    iv, ii = tf.math.top_k(i, 2)
    fetches = out(values3=v3, indices3=i3, values1=v1_, indices1=i1, int_values=iv, int_indices=ii)
    return fetches, [
        ("random", {x: normal(rng, 2, 5), i: rng.integers(-9, 9, (2, 5)).astype(np.int32)}),
        ("ties", {x: f32([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2]]),
                  i: np.array([[5, 5, 1, 5, 0], [0, 0, 0, 0, 0]], np.int32)}),
    ]


# ============================================================================================
# nn


@case("conv2d", "nn",
      """Conv2D NHWC with padding SAME, VALID and EXPLICIT, strides 2, dilations 2 (stride 1),
      a 1x1 convolution and an even-sized SAME kernel (asymmetric padding).""",
      tol=TOL_SUMS, expect_ops=["Conv2D"])
def _conv2d(rng):
    x = ph("x", shape=[None, 7, 6, 3])
    w, w1, w2 = const(rng, 3, 3, 3, 4), const(rng, 1, 1, 3, 2), const(rng, 2, 2, 3, 2)
    fetches = out(same=tf.nn.conv2d(x, w, 1, "SAME"), valid_s2=tf.nn.conv2d(x, w, 2, "VALID"),
                  same_s2=tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME"),
                  explicit=tf.nn.conv2d(x, w, [1, 1, 2, 1], [[0, 0], [1, 2], [0, 1], [0, 0]]),
                  dilated=tf.nn.conv2d(x, w, 1, "SAME", dilations=2),
                  dilated_valid=tf.nn.conv2d(x, w, 1, "VALID", dilations=[1, 2, 1, 1]),
                  pointwise=tf.nn.conv2d(x, w1, 1, "VALID"), even_same=tf.nn.conv2d(x, w2, 1, "SAME"))
    return fetches, [("batch2", {x: normal(rng, 2, 7, 6, 3)}), ("batch1", {x: normal(rng, 1, 7, 6, 3)})]


@case("conv3d", "nn", """Conv3D NDHWC with SAME and VALID padding and strides 2.""",
      tol=TOL_SUMS, expect_ops=["Conv3D"])
def _conv3d(rng):
    x = ph("x", shape=[None, 4, 5, 5, 2])
    w = const(rng, 2, 3, 3, 2, 3)
    fetches = out(same=tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "SAME"),
                  valid_s2=tf.nn.conv3d(x, w, [1, 2, 2, 2, 1], "VALID"))
    return fetches, [("batch2", {x: normal(rng, 2, 4, 5, 5, 2)})]


@case("depthwise_conv2d", "nn",
      """DepthwiseConv2dNative with channel multiplier 2, SAME and VALID, strides 2; dilation 2 as
      TF writes it (its CPU kernel has no dilations): SpaceToBatchND, the convolution,
      BatchToSpaceND.""", tol=TOL_SUMS, expect_ops=["DepthwiseConv2dNative", "SpaceToBatchND", "BatchToSpaceND"])
def _depthwise(rng):
    x = ph("x", shape=[None, 6, 6, 3])
    w = const(rng, 3, 3, 3, 2)
    fetches = out(same=tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
                  valid_s2=tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID"),
                  dilated=tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[2, 2]))
    return fetches, [("batch2", {x: normal(rng, 2, 6, 6, 3)}), ("batch1", {x: normal(rng, 1, 6, 6, 3)})]


@case("depthwise_unread_tail", "nn",
      """DepthwiseConv2dNative whose strided windows leave input unread (4 channels, multiplier 2,
      2x3 window, stride 2, VALID, input 3x2x4x4: the last column; a SAME stride-2 one with an
      odd high pad): IREE 3.13 failed the first, which fell back to reference kernels, until the
      lowering trimmed the unread tail (issue 33).""", tol=TOL_SUMS, expect_ops=["DepthwiseConv2dNative"])
def _depthwise_unread_tail(rng):
    x = ph("x", shape=[None, 2, 4, 4])
    v = ph("v", shape=[None, 7, 6, 4])
    w = const(rng, 2, 3, 4, 2)
    fetches = out(valid_s2=tf.nn.relu(tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID")),
                  same_s3=tf.nn.depthwise_conv2d(v, w, [1, 3, 3, 1], "SAME"),
                  valid_s2b=tf.nn.depthwise_conv2d(v, w, [1, 2, 2, 1], "VALID"))
    return fetches, [("batch3", {x: normal(rng, 3, 2, 4, 4), v: normal(rng, 3, 7, 6, 4)}),
                     ("batch1", {x: normal(rng, 1, 2, 4, 4), v: normal(rng, 1, 7, 6, 4)})]


@case("conv_backprop", "nn",
      """Conv2DBackpropInput and Conv2DBackpropFilter (tf.gradients of a SAME/stride-2 and a VALID
      conv), conv2d_transpose, DepthwiseConv2dNativeBackpropInput/Filter, BiasAddGrad.""",
      tol=TOL_SUMS, expect_ops=["Conv2DBackpropInput", "Conv2DBackpropFilter",
                                "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter",
                                "BiasAddGrad"])
def _conv_backprop(rng):
    x = ph("x", shape=[None, 6, 6, 2])
    w, wd, b = const(rng, 3, 3, 2, 3), const(rng, 3, 3, 2, 2), const(rng, 3, scale=1.0)
    y1 = tf.nn.bias_add(tf.nn.conv2d(x, w, 2, "SAME"), b)
    y2 = tf.nn.conv2d(x, w, 1, "VALID")
    y3 = tf.nn.depthwise_conv2d(x, wd, [1, 1, 1, 1], "SAME")
    loss = tf.reduce_sum(tf.square(y1)) + tf.reduce_sum(y2 * y2 * 0.5) + tf.reduce_sum(tf.sin(y3))
    dx, dw, dwd, db = tf.gradients(loss, [x, w, wd, b])
    up = tf.nn.conv2d_transpose(y1, w, tf.shape(x), 2, "SAME")
    fetches = out(dx=dx, dw=dw, dwd=dwd, db=db, transpose=up)
    return fetches, [("batch2", {x: normal(rng, 2, 6, 6, 2)}), ("batch1", {x: normal(rng, 1, 6, 6, 2)})]


@case("pooling", "nn",
      """MaxPool and AvgPool with SAME (AvgPool divides by the in-bounds count) and VALID,
      strides 2 and 1, 3x3 windows; MaxPool3D and AvgPool3D; -inf inputs.""",
      tol=TOL_SUMS, expect_ops=["MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D"])
def _pooling(rng):
    x = ph("x", shape=[None, 5, 5, 2])
    v = ph("v", shape=[None, 4, 4, 4, 1])
    fetches = out(max_same=tf.nn.max_pool2d(x, 3, 2, "SAME"), max_valid=tf.nn.max_pool2d(x, 2, 2, "VALID"),
                  avg_same=tf.nn.avg_pool2d(x, 3, 2, "SAME"), avg_valid_s1=tf.nn.avg_pool2d(x, [2, 3], 1, "VALID"),
                  max3d=tf.nn.max_pool3d(v, 2, 2, "VALID"), avg3d=tf.nn.avg_pool3d(v, 3, 2, "SAME"))
    xs = normal(rng, 1, 5, 5, 2)
    xs[0, 0, :2, 0] = -inf
    return fetches, [("batch2", {x: normal(rng, 2, 5, 5, 2), v: normal(rng, 2, 4, 4, 4, 1)}),
                     ("neg_inf", {x: xs, v: normal(rng, 1, 4, 4, 4, 1)})]


@case("pooling_grad", "nn",
      """MaxPoolGrad and AvgPoolGrad through tf.gradients (SAME stride 2 and VALID stride 1),
      with ties in the max windows.""", tol=TOL_SUMS, expect_ops=["MaxPoolGrad", "AvgPoolGrad"])
def _pooling_grad(rng):
    x = ph("x", shape=[None, 4, 4, 2])
    y = tf.nn.max_pool2d(x, 2, 2, "SAME") * 2.0
    z = tf.nn.avg_pool2d(x, 3, 1, "VALID")
    w = tf.nn.avg_pool2d(x, 3, 2, "SAME")
    loss = tf.reduce_sum(tf.square(y)) + tf.reduce_sum(z * 3.0) + tf.reduce_sum(tf.exp(w))
    fetches = out(dx=tf.gradients(loss, x)[0])
    ties = np.ones((1, 4, 4, 2), np.float32)
    ties[0, 1, 1, 0] = 2.0
    return fetches, [("batch2", {x: normal(rng, 2, 4, 4, 2)}), ("ties", {x: ties})]


@case("fused_batch_norm", "nn",
      """FusedBatchNormV3 inference (given mean/variance) and training (batch mean, Bessel-
      corrected batch variance in output 2, exponential_avg_factor 0.5 with running stats),
      FusedBatchNorm and FusedBatchNormV2 (v1 ops), and FusedBatchNormGradV3 via tf.gradients.""",
      tol=TOL_SUMS, expect_ops=["FusedBatchNormV3", "FusedBatchNorm", "FusedBatchNormV2",
                                "FusedBatchNormGradV3"])
def _fused_bn(rng):
    x = ph("x", shape=[None, 3, 3, 4])
    scale, offset = const(rng, 4, scale=1.0) + 1.0, const(rng, 4, scale=1.0)
    mean, var = const(rng, 4, scale=1.0), tf.abs(const(rng, 4, scale=1.0)) + 0.5
    inf_y, _, _ = v1.nn.fused_batch_norm(x, scale, offset, mean, var, epsilon=0.001, is_training=False)
    tr_y, tr_m, tr_v = v1.nn.fused_batch_norm(x, scale, offset, epsilon=0.001, is_training=True)
    avg = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=mean, variance=var,
                                      epsilon=0.01, exponential_avg_factor=0.5, is_training=True)
    old = tf.raw_ops.FusedBatchNorm(x=x, scale=scale, offset=offset, mean=mean, variance=var,
                                    is_training=False)
    v2 = tf.raw_ops.FusedBatchNormV2(x=x, scale=scale, offset=offset, mean=mean, variance=var,
                                     is_training=True)
    dx, dscale = tf.gradients(tf.reduce_sum(tr_y * tr_y * x), [x, scale])
    fetches = out(inference=inf_y, training=tr_y, batch_mean=tr_m, batch_var=tr_v,
                  avg_y=avg.y, avg_mean=avg.batch_mean, avg_var=avg.batch_variance,
                  v1_inference=old.y, v2_training=v2.y, dx=dx, dscale=dscale)
    return fetches, [("batch2", {x: normal(rng, 2, 3, 3, 4, scale=2) + 1}),
                     ("batch1", {x: normal(rng, 1, 3, 3, 4)})]


@case("softmax_xent", "nn",
      """Softmax and LogSoftmax (last axis of rank 2 and 3, large logits, -inf logits);
      SparseSoftmaxCrossEntropyWithLogits (int64 labels) and SoftmaxCrossEntropyWithLogits ops
      with their backprop outputs, as graphs written without TF_DETERMINISTIC_OPS hold them;
      and tf.nn.sparse_softmax_cross_entropy_with_logits (int32 labels) with its gradient,
      which under TF_DETERMINISTIC_OPS=1 TF writes as LogSoftmax, gathers and
      UnsortedSegmentSum/DynamicStitch plumbing.""",
      tol=TOL_SUMS, expect_ops=["Softmax", "LogSoftmax", "SparseSoftmaxCrossEntropyWithLogits",
                                "SoftmaxCrossEntropyWithLogits"])
def _softmax(rng):
    x, lab = ph("logits", shape=[None, 4]), ph("labels", tf.int32, [None])
    onehot = ph("onehot", shape=[None, 4])
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=x)
    op_sparse = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=x, labels=tf.cast(lab, tf.int64))
    op_dense = tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=x, labels=onehot)
    fetches = out(softmax=tf.nn.softmax(x), log_softmax=tf.nn.log_softmax(x),
                  softmax3=tf.nn.softmax(tf.reshape(x, [-1, 2, 2])), sparse=sparse,
                  dlogits=tf.gradients(sparse, x)[0], op_sparse_loss=op_sparse.loss,
                  op_sparse_backprop=op_sparse.backprop,
                  op_dense_loss=op_dense.loss, op_dense_backprop=op_dense.backprop)
    return fetches, [
        ("batch3", {x: normal(rng, 3, 4, scale=3), lab: np.array([0, 3, 1], np.int32),
                    onehot: f32([[1, 0, 0, 0], [0.25, 0.25, 0.5, 0], [0, 0, 0, 1]])}),
        ("large_and_neg_inf", {x: f32([[1000, 999, -1000, 0], [-inf, 0, 1, 2]]), lab: np.array([1, 3], np.int32),
                               onehot: f32([[0, 1, 0, 0], [0, 0, 0, 1]])}),
    ]


@case("matmul_batch", "nn",
      """MatMul with transpose_a/transpose_b, BatchMatMulV2 with broadcast batch dimensions and
      adj_x/adj_y, BatchMatMul (v1) and BatchMatMulV3.""",
      tol=TOL_SUMS, expect_ops=["MatMul", "BatchMatMulV2", "BatchMatMul", "BatchMatMulV3"])
def _matmul(rng):
    a, b = ph("a", shape=[None, 3, 4]), ph("b", shape=[4, 5])
    m = ph("m", shape=[None, 4])
    w = const(rng, 5, 4)
    fetches = out(mm=tf.matmul(m, tf.transpose(b)[:4]), mm_ta=tf.matmul(m, m, transpose_a=True),
                  mm_tb=tf.matmul(m, w, transpose_b=True),
                  bmm_broadcast=tf.matmul(a, b), bmm_adj=tf.linalg.matmul(a, a, adjoint_a=True),
                  bmm_adj_y=tf.matmul(a, a, adjoint_b=True),
                  bmm_4d=tf.matmul(tf.reshape(a, [-1, 1, 3, 4]), tf.stack([b, b * 2])),
                  bmm_v1=tf.raw_ops.BatchMatMul(x=a, y=tf.transpose(a, [0, 2, 1])),
                  bmm_v3=tf.raw_ops.BatchMatMulV3(x=a, y=tf.broadcast_to(b, [2, 4, 5]), Tout=tf.float32))
    return fetches, [("batch2", {a: normal(rng, 2, 3, 4), b: normal(rng, 4, 5), m: normal(rng, 4, 4)})]


@case("einsum", "nn",
      """Einsum: batched matmul (bij,bjk->bik), attention scores (bqhd,bkhd->bhqk), a contraction
      with a weight (abc,cd->abd), a transpose (ij->ji), a dot product to a scalar (i,i->), a
      row-wise dot (bi,bi->b) and an outer product (i,j->ij).""",
      tol=TOL_SUMS, expect_ops=["Einsum"])
def _einsum(rng):
    a, q = ph("a", shape=[None, 3, 4]), ph("q", shape=[None, 5, 2, 4])
    v = ph("v", shape=[4])
    w = const(rng, 4, 6)
    fetches = out(bmm=tf.einsum("bij,bjk->bik", a, tf.transpose(a, [0, 2, 1])),
                  scores=tf.einsum("bqhd,bkhd->bhqk", q, q * 0.5),
                  weight=tf.einsum("abc,cd->abd", a, w), transpose=tf.einsum("ij->ji", a[0]),
                  dot=tf.einsum("i,i->", v, v), rowdot=tf.einsum("bi,bi->b", a[:, 0], a[:, 1]),
                  outer=tf.einsum("i,j->ij", v, v[:2]))
    return fetches, [("batch2", {a: normal(rng, 2, 3, 4), q: normal(rng, 2, 5, 2, 4), v: normal(rng, 4)})]


@case("resize", "nn",
      """ResizeBilinear and ResizeNearestNeighbor, up (3x4 -> 5x7) and down (3x4 -> 2x3), with
      align_corners and half_pixel_centers (TF2's tf.image.resize default) set and unset.""",
      tol=TOL_SUMS, expect_ops=["ResizeBilinear", "ResizeNearestNeighbor"])
def _resize(rng):
    x = ph("x", shape=[None, 3, 4, 2])
    bl, nn = v1.image.resize_bilinear, v1.image.resize_nearest_neighbor
    fetches = out(bilinear_up=bl(x, [5, 7]), bilinear_up_ac=bl(x, [5, 7], align_corners=True),
                  bilinear_half=tf.image.resize(x, [5, 7], "bilinear"),
                  bilinear_down_half=tf.image.resize(x, [2, 3], "bilinear", antialias=False),
                  nearest_up=nn(x, [5, 7]), nearest_up_ac=nn(x, [5, 7], align_corners=True),
                  nearest_half=tf.image.resize(x, [5, 7], "nearest"), nearest_down=nn(x, [2, 3]))
    return fetches, [("batch2", {x: normal(rng, 2, 3, 4, 2)})]


@case("lrn", "nn", """LRN (local_response_normalization) with depth_radius 2, bias 1, alpha 0.1,
      beta 0.75 on 6 channels, and the defaults.""", tol=TOL_SUMS, expect_ops=["LRN"])
def _lrn(rng):
    x = ph("x", shape=[None, 2, 2, 6])
    fetches = out(lrn=tf.nn.local_response_normalization(x, 2, 1.0, 0.1, 0.75),
                  lrn_default=tf.nn.local_response_normalization(x))
    return fetches, [("batch2", {x: normal(rng, 2, 2, 2, 6, scale=2)})]


