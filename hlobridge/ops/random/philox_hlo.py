"""TensorFlow's CPU Philox streams in StableHLO: philox.py's layers, compiled.

The stateless random ops are pure functions of (key, counter), so they compile. XLA's own
lowering of them (tf2xla/kernels/stateless_random_ops_v2.cc) does not reproduce TF's CPU
numbers: it calls xla::PhiloxBitGenerator (xla/hlo/builder/lib/prng.cc), which splits the
counter and lays the bits out differently, and converts bits to floats from the high
mantissa bits, so `tf.function(jit_compile=True)` and the CPU kernel give different values
for the same seed. TensorFlow's CPU kernel is our reference; this module mirrors philox.py
layer by layer, on uint32 words, so that compiled and reference results are the same bits:

1. `Philox`: key (two ui32 words) and counter (two ui64 halves) as 0-d Values; `blocks`
   gives the four ui32 output words of Philox4x32-10 for counters `counter + offsets`,
   the 32x32->64-bit products done in ui64 (StableHLO has no mul-hi).
2. The distributions of random_distributions.h over those words, in FillPhiloxRandom's
   layout (block i gives output group i; TruncatedNormal's group g restarts at block
   g * group * 256 / 4 and runs a rejection loop, here a stablehlo.while).
3. Box-Muller's logf/sinf/cosf: IREE's float32 approximations are not glibc's, and its
   llvm-cpu links no libm for float64 sin/cos (iree-notes). So `log_f64`/`sin_cos_f64`
   evaluate them in float64 from polynomials (errors ~1e-16), and the float32 result is
   that rounded, which is what philox.py's kernel does (within glibc's rare 1-ulp cases).
   `exp_f64` serves Multinomial's CDF the same way.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .philox import RESERVED_SAMPLES_PER_OUTPUT, STATELESS_SEED_KEY

U32, U64, F32, F64 = (np.dtype(t) for t in (np.uint32, np.uint64, np.float32, np.float64))
_M32 = 0xFFFFFFFF
_W32A, _W32B = 0x9E3779B9, 0xBB67AE85
_M4X32A, _M4X32B = 0xD2511F53, 0xCD9E8D57


def _c(value, like) -> hlo.Value:
    """A constant of `value` shaped and typed like `like`."""
    return hlo.scalar_like(value, like)


def _bin(op, a, b):
    """stablehlo.<op> with b a Python number (made a constant like a) or a Value."""
    if not isinstance(b, hlo.Value):
        b = _c(b, a)
    return hlo.binary(op, a, b)


def _to(x, dtype):
    return hlo.convert(x, dtype)


def lo32(x64):
    """The low word of ui64 `x64` as ui32."""
    return _to(_bin("and", x64, _M32), U32)


def hi32(x64):
    """The high word of ui64 `x64` as ui32."""
    return _to(_bin("shift_right_logical", x64, 32), U32)


def join64(lo, hi):
    """ui64 from two ui32 words: lo | hi << 32."""
    return _bin("or", _to(lo, U64), _bin("shift_left", _to(hi, U64), 32))


def scalar_at(x, i: int):
    """Element i of a 1-d Value, as a 0-d Value."""
    return hlo.reshape(hlo.slice(x, [i], [i + 1]), [])


# -- the generator ------------------------------------------------------------------------------


class Philox:
    """A Philox4x32-10 state in StableHLO: key words k0, k1 (0-d ui32), counter halves lo, hi
    (0-d ui64, lo the low 64 bits)."""

    def __init__(self, k0, k1, lo, hi):
        self.k0, self.k1, self.lo, self.hi = k0, k1, lo, hi

    @classmethod
    def from_key_counter(cls, key, counter) -> Philox:
        """The V2 ops' inputs: key ui64[1], counter ui64[2]."""
        k = scalar_at(key, 0)
        return cls(lo32(k), hi32(k), scalar_at(counter, 0), scalar_at(counter, 1))

    @classmethod
    def from_seed_pair(cls, seed) -> Philox:
        """`GenerateKey` on a seed int32[2]/int64[2] tensor (philox.PhiloxRandom.from_seed_pair):
        seeds are sign-extended to 64 bits, as `static_cast<uint64>` of int32 does."""
        s = hlo.bitcast_convert(_to(seed, np.int64), [2], U64)
        key = hlo.constant(np.uint64(STATELESS_SEED_KEY))
        mixer = cls(lo32(key), hi32(key), scalar_at(s, 0), scalar_at(s, 1))
        m = [hlo.reshape(w, []) for w in mixer.blocks(hlo.constant(np.zeros(1, U64)))]
        return cls(m[0], m[1], hlo.constant(np.uint64(0)), join64(m[2], m[3]))

    def key_counter(self):
        """(key ui64[1], counter ui64[2]): what StatelessRandomGetKeyCounter returns."""
        key = hlo.reshape(join64(self.k0, self.k1), [1])
        return key, hlo.concatenate([hlo.reshape(self.lo, [1]), hlo.reshape(self.hi, [1])], 0)

    def blocks(self, offsets):
        """The four ui32 words of the blocks at counters `counter + offsets` (ui64, any shape),
        each shaped like `offsets`; a 128-bit addition with carry, like SkipOne."""
        shape = hlo.shape_of(offsets)
        lo = hlo.add(hlo.broadcast_to(self.lo, shape), offsets)
        carry = hlo.select(hlo.compare("LT", lo, offsets), _c(1, lo), _c(0, lo))
        hi = hlo.add(hlo.broadcast_to(self.hi, shape), carry)
        c = [lo32(lo), hi32(lo), lo32(hi), hi32(hi)]
        k0, k1 = (hlo.broadcast_to(k, shape) for k in (self.k0, self.k1))
        for r in range(10):
            if r:
                k0, k1 = _bin("add", k0, _W32A), _bin("add", k1, _W32B)
            p0 = _bin("multiply", _to(c[0], U64), _M4X32A)  # 32 x 32 -> 64 bits: exact in ui64
            p1 = _bin("multiply", _to(c[2], U64), _M4X32B)
            c = [hlo.binary("xor", hlo.binary("xor", hi32(p1), c[1]), k0), lo32(p1),
                 hlo.binary("xor", hlo.binary("xor", hi32(p0), c[3]), k1), lo32(p0)]
        return c

    def skip(self, count):
        """`PhiloxRandom::Skip(count)` for a 0-d ui64 `count`, word by word like TensorFlow
        (philox.PhiloxRandom.skip), carry quirk included."""
        c = [lo32(self.lo), hi32(self.lo), lo32(self.hi), hi32(self.hi)]
        count_lo, count_hi = lo32(count), hi32(count)
        c0 = hlo.add(c[0], count_lo)
        count_hi = hlo.add(count_hi, _to(hlo.compare("LT", c0, count_lo), U32))
        c1 = hlo.add(c[1], count_hi)
        carry = _to(hlo.compare("LT", c1, count_hi), U32)
        c2 = hlo.add(c[2], carry)
        c3 = hlo.add(c[3], hlo.binary("and", carry, _to(hlo.compare("EQ", c2, _c(0, c2)), U32)))
        return Philox(self.k0, self.k1, join64(c0, c1), join64(c2, c3))


def _words(gen: Philox, n_blocks: int):
    return gen.blocks(hlo.iota([n_blocks], U64, 0))


def _columns(values, n: int, shape):
    """[v0[i], v1[i], ...] per block i, flattened, the first n, shaped `shape`."""
    cols = [hlo.reshape(v, hlo.shape_of(v) + [1]) for v in values]
    flat = hlo.reshape(hlo.concatenate(cols, 1), [len(cols) * hlo.shape_of(values[0])[0]])
    return hlo.reshape(hlo.slice(flat, [0], [n]), shape)


def _per_block(dtype) -> int:
    return 2 if np.dtype(dtype).itemsize == 8 else 4


# -- bits to numbers (random_distributions.h) ---------------------------------------------------


def uint32_to_float(x):
    """Uint32ToFloat: 23 mantissa bits under exponent 0 give [1, 2); minus 1."""
    bits = _bin("or", _bin("and", x, 0x7FFFFF), 127 << 23)
    f = hlo.bitcast_convert(bits, hlo.shape_of(x), F32)
    return _bin("subtract", f, 1.0)


def uint64_to_double(x0, x1):
    """Uint64ToDouble: 20 bits of x0 and all of x1 form the 52-bit mantissa; minus 1."""
    man = join64(x1, _bin("and", x0, 0xFFFFF))
    d = hlo.bitcast_convert(_bin("or", man, 1023 << 52), hlo.shape_of(x0), F64)
    return _bin("subtract", d, 1.0)


def _uint16_to_half(x):
    """Uint16ToHalf: 10 mantissa bits of the low 16."""
    bits = _to(_bin("or", _bin("and", x, 0x3FF), 15 << 10), np.uint16)
    return _bin("subtract", hlo.bitcast_convert(bits, hlo.shape_of(x), np.float16), 1.0)


def _uint16_to_bfloat16(x):
    """Uint16ToGfloat16: 7 mantissa bits; the subtraction is exact in float32."""
    bits = _bin("shift_left", _bin("or", _bin("and", x, 0x7F), 127 << 7), 16)
    f = _bin("subtract", hlo.bitcast_convert(bits, hlo.shape_of(x), F32), 1.0)
    return _to(f, ml_dtypes.bfloat16)


#: The 16-bit float types' conversions of one uint32 word (its low 16 bits).
LOWERINGS_OF_BITS = {"float16": _uint16_to_half, "bfloat16": _uint16_to_bfloat16}


def uniform(gen: Philox, n: int, shape, dtype):
    """UniformDistribution for float types."""
    dtype = np.dtype(dtype)
    w = _words(gen, -(-n // _per_block(dtype)))
    if dtype == F64:
        return _columns([uint64_to_double(w[0], w[1]), uint64_to_double(w[2], w[3])], n, shape)
    convert = {F32: uint32_to_float, np.dtype(np.float16): _uint16_to_half}.get(dtype, _uint16_to_bfloat16)
    return _columns([convert(x) for x in w], n, shape)


def _full_int_bits(w, dtype):
    """UniformFullIntDistribution's bits per block, unsigned (32-bit: the words; 64: pairs)."""
    if np.dtype(dtype).itemsize == 4:
        return w
    return [join64(w[0], w[1]), join64(w[2], w[3])]


def _unsigned(dtype):
    return U32 if np.dtype(dtype).itemsize == 4 else U64


def uniform_full_int(gen: Philox, n: int, shape, dtype):
    """UniformFullIntDistribution: the bits reinterpreted as `dtype`."""
    w = _words(gen, -(-n // _per_block(dtype)))
    bits = _columns(_full_int_bits(w, dtype), n, shape)
    return hlo.bitcast_convert(bits, shape, dtype)


def uniform_int(gen: Philox, n: int, shape, dtype, minval, maxval):
    """UniformDistribution<int>(lo, hi): lo + bits % (hi - lo) in the unsigned type.
    `minval`/`maxval` are 0-d Values of `dtype`."""
    u = _unsigned(dtype)
    lo = hlo.bitcast_convert(minval, [], u)
    span = hlo.subtract(hlo.bitcast_convert(maxval, [], u), lo)
    bits = uniform_full_int(gen, n, shape, u)
    drawn = hlo.add(hlo.binary("remainder", bits, hlo.broadcast_to(span, shape)), hlo.broadcast_to(lo, shape))
    return hlo.bitcast_convert(drawn, shape, dtype)


# -- float64 log, sin and cos for Box-Muller -----------------------------------------------------

_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # fdlibm's split of ln 2
_PIO2_1, _PIO2_1T = 1.57079632673412561417e+00, 6.07710050650619224932e-11  # and of pi / 2


def _poly(x, coefficients):
    """sum c_i x^i by Horner's rule (coefficients from the constant term up)."""
    acc = _c(coefficients[-1], x)
    for c in reversed(coefficients[:-1]):
        acc = _bin("add", hlo.multiply(acc, x), c)
    return acc


def log_f64(x):
    """log of positive, normal float64 x: x = 2^e m with m in [sqrt(1/2), sqrt(2)),
    log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^25."""
    shape = hlo.shape_of(x)
    bits = hlo.bitcast_convert(x, shape, U64)
    e = _bin("subtract", _to(_bin("shift_right_logical", bits, 52), np.int64), 1023)
    m = hlo.bitcast_convert(_bin("or", _bin("and", bits, (1 << 52) - 1), 1023 << 52), shape, F64)
    big = hlo.compare("GT", m, _c(math.sqrt(2.0), m))
    m = hlo.select(big, _bin("multiply", m, 0.5), m)
    e = _to(hlo.select(big, _bin("add", e, 1), e), F64)
    f = _bin("subtract", m, 1.0)
    s = hlo.divide(f, _bin("add", f, 2.0))
    series = _poly(hlo.multiply(s, s), [2.0 / (2 * k + 1) for k in range(13)])
    log_m = hlo.multiply(s, series)
    return hlo.add(hlo.multiply(e, _c(_LN2_HI, e)), hlo.add(hlo.multiply(e, _c(_LN2_LO, e)), log_m))


def exp_f64(x):
    """exp of float64 x <= 0 (a logit minus the row's maximum): x = k ln 2 + r with |r| <= ln 2 / 2
    (Cody-Waite), Taylor series of exp r to r^14, times 2^k built from its bits. Below -708 (where
    2^k leaves the normal range) the result is 0, which changes no sum it is added to with 1."""
    shape = hlo.shape_of(x)
    tiny = hlo.compare("LT", x, _c(-708.0, x))
    x = hlo.select(tiny, _c(-708.0, x), x)
    k = hlo.unary("round_nearest_even", _bin("multiply", x, 1.0 / math.log(2.0)))
    r = hlo.subtract(hlo.subtract(x, _bin("multiply", k, _LN2_HI)), _bin("multiply", k, _LN2_LO))
    p = _poly(r, [1.0 / math.factorial(j) for j in range(15)])
    bits = _bin("shift_left", _to(_bin("add", _to(k, np.int64), 1023), U64), 52)
    result = hlo.multiply(p, hlo.bitcast_convert(bits, shape, F64))
    return hlo.select(tiny, _c(0.0, result), result)


def sin_cos_f64(v):
    """(sin v, cos v) for float64 v in [0, 2 pi] (Box-Muller's angle): v = k pi/2 + r with
    |r| <= pi/4 (Cody-Waite, exact for k <= 4), Taylor series of sin r and cos r to r^21,
    and the quadrant k mod 4 picks and negates."""
    k = hlo.unary("round_nearest_even", _bin("multiply", v, 2.0 / math.pi))
    r = hlo.subtract(hlo.subtract(v, _bin("multiply", k, _PIO2_1)), _bin("multiply", k, _PIO2_1T))
    r2 = hlo.multiply(r, r)
    sin_r = hlo.multiply(r, _poly(r2, [(-1) ** j / math.factorial(2 * j + 1) for j in range(11)]))
    cos_r = _poly(r2, [(-1) ** j / math.factorial(2 * j) for j in range(12)])
    q = _bin("and", _to(k, np.int32), 3)

    def pick(options):
        out = options[3]
        for i in (2, 1, 0):
            out = hlo.select(hlo.compare("EQ", q, _c(i, q)), options[i], out)
        return out
    neg_sin, neg_cos = hlo.unary("negate", sin_r), hlo.unary("negate", cos_r)
    return pick([sin_r, cos_r, neg_sin, neg_cos]), pick([cos_r, neg_sin, neg_cos, sin_r])


def box_muller_float(x0, x1):
    """BoxMullerFloat (philox._box_muller_float): two float32 normals from two ui32 words."""
    u1 = uint32_to_float(x0)
    u1 = hlo.maximum(u1, _c(1.0e-7, u1))
    v1 = _to(_bin("multiply", _to(uint32_to_float(x1), F64), 2.0 * math.pi), F32)
    u2 = hlo.unary("sqrt", _bin("multiply", _to(log_f64(_to(u1, F64)), F32), -2.0))
    s, c = sin_cos_f64(_to(v1, F64))
    return hlo.multiply(_to(s, F32), u2), hlo.multiply(_to(c, F32), u2)


def box_muller_double(x0, x1, x2, x3):
    """BoxMullerDouble: two float64 normals from four ui32 words."""
    u1 = uint64_to_double(x0, x1)
    u1 = hlo.maximum(u1, _c(1.0e-7, u1))
    v1 = _bin("multiply", uint64_to_double(x2, x3), 2.0 * math.pi)
    u2 = hlo.unary("sqrt", _bin("multiply", log_f64(u1), -2.0))
    s, c = sin_cos_f64(v1)
    return hlo.multiply(s, u2), hlo.multiply(c, u2)


def _normals_of_block(w, dtype):
    """The candidates one block gives: 4 float32 (2 Box-Mullers) or 2 float64."""
    if np.dtype(dtype) == F64:
        return list(box_muller_double(*w))
    return [*box_muller_float(w[0], w[1]), *box_muller_float(w[2], w[3])]


def normal(gen: Philox, n: int, shape, dtype):
    """NormalDistribution; half and bfloat16 round the float32 values (as Eigen does)."""
    dtype = np.dtype(dtype)
    values = _columns(_normals_of_block(_words(gen, -(-n // _per_block(dtype))), dtype), n, shape)
    return values if dtype == F64 else _to(values, dtype)


def truncated_normal(gen: Philox, n: int, shape, dtype):
    """TruncatedNormalDistribution through SingleSampleAdapter (philox._truncated_normal):
    group g of `group` outputs starts at block g * group * 256 / 4 and keeps, in stream
    order, the first candidates with |x| < 2. A while loop draws one block per group and
    pass until every group is full."""
    dtype = np.dtype(dtype)
    work = F64 if dtype == F64 else F32
    group = _per_block(dtype)
    stride = group * RESERVED_SAMPLES_PER_OUTPUT // 4
    n_groups = -(-n // group)
    starts = _bin("multiply", hlo.iota([n_groups], U64, 0), stride)

    def body(out, filled, step):
        w = gen.blocks(hlo.add(starts, hlo.broadcast_to(step, [n_groups])))
        out_cols = [hlo.reshape(hlo.slice(out, [0, j], [n_groups, j + 1]), [n_groups]) for j in range(group)]
        rank = _bin("subtract", filled, 1)
        for cand in _normals_of_block(w, dtype):
            ok = hlo.compare("LT", hlo.unary("abs", cand), _c(2.0, cand))
            rank = hlo.add(rank, _to(ok, np.int32))
            for j in range(group):
                hit = hlo.binary("and", ok, hlo.compare("EQ", rank, _c(j, rank)))
                out_cols[j] = hlo.select(hit, cand, out_cols[j])
        filled = hlo.minimum(_bin("add", rank, 1), _c(group, filled))
        out = hlo.concatenate([hlo.reshape(c, [n_groups, 1]) for c in out_cols], 1)
        return [out, filled, _bin("add", step, 1)]

    def not_done(out, filled, step):
        least = hlo.reduce(filled, hlo.constant(np.int32(group)), [0], "minimum")
        return hlo.compare("LT", least, _c(group, least))

    out, _, _ = hlo.while_([hlo.constant(np.zeros((n_groups, group), work)),
                            hlo.constant(np.zeros(n_groups, np.int32)), hlo.constant(np.uint64(0))],
                           not_done, body)
    values = hlo.reshape(hlo.slice(hlo.reshape(out, [n_groups * group]), [0], [n]), shape)
    return values if dtype == work else _to(values, dtype)


#: The distributions by philox.DISTRIBUTIONS' names; each (gen, n, shape, dtype, ...) -> Value.
LOWERINGS = {"uniform": uniform, "normal": normal, "truncated_normal": truncated_normal,
             "uniform_int": uniform_int, "uniform_full_int": uniform_full_int}
