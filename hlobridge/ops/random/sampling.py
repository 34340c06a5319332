"""Sampling ops on TensorFlow's Philox streams: Multinomial, StatelessMultinomial, RandomShuffle,
StochasticCastToInt.

Kernels only, reproducing TF's CPU kernels (core/kernels/multinomial_op.cc,
random_shuffle_op.cc) from the same generator philox.py reproduces:

- Multinomial draws, per batch row, `num_samples` doubles (SimplePhilox::RandDouble: two
  consecutive uint32 of the stream, Uint64ToDouble) and returns for each the index of the
  first entry of the row's unnormalised CDF (exp(logit - max) summed in double, non-finite
  logits contributing nothing) above `u * total`. TF shards rows over threads and starts a
  shard at row r by skipping `r * (num_samples + 3) / 4` blocks; rows within a shard continue
  one stream. We reproduce one shard, which is what TF runs whenever
  `batch * 50 * (num_samples * log2(classes) + classes) < 10000` (work_sharder's minimum
  cost per shard) or on one thread; larger inputs on several threads depend on TF's thread
  count. A run reserves `batch * ceil4(num_samples) * 2 * 256` blocks (the stateful op's
  next run starts there).
- RandomShuffle swaps element i with i + (u32 % (n - i)) for i < n - 1 (a Fisher-Yates
  over one uint32 stream), reserving ceil((n - 1) / 4) blocks.

XLA compiles Multinomial with the Gumbel-max trick and RandomShuffle with a sort on random
keys, both on another bit generator: compiling them XLA's way would not give TensorFlow's CPU
numbers. StatelessMultinomial compiles the CPU kernel's way instead (`_stateless_multinomial_lower`:
its doubles are UniformDistribution<double>'s layout, the CDF a float64 exp and a log-step
prefix sum, the search a count of CDF entries <= u * total), and so does StochasticCastToInt
(`_stochastic_cast_lower`). The stateful ones keep their per-node stream in the session, so they
run on their kernels.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...errors import InputError
from ...spec import TensorSpec
from . import philox_hlo
from .philox import RESERVED_SAMPLES_PER_OUTPUT, PhiloxRandom, draw, uint64_to_double
from ..helpers import same_as_input
from ..registry import register
from .stateless import RNG_ALG_PHILOX, check_alg, check_vector

# -- Multinomial ----------------------------------------------------------------------------------


def _uint32_stream(gen: PhiloxRandom, n: int) -> np.ndarray:
    """The first n uint32 of the stream (SingleSampleAdapter: a block's four words in order)."""
    return gen.blocks(-(-n // 4)).reshape(-1)[:n]


def multinomial(gen: PhiloxRandom, logits: np.ndarray, num_samples: int, out_dtype) -> np.ndarray:
    """MultinomialFunctor<CPUDevice> as one shard (see the module docstring)."""
    logits = np.asarray(logits)
    batch = logits.shape[0]
    wide = logits.astype(np.float64)
    finite = np.isfinite(wide)
    # `T max = lowest<T>()`, raised by the finite logits (a row without any keeps lowest)
    max_logit = np.where(finite, wide, float(ml_dtypes.finfo(logits.dtype).min)).max(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        cdf = np.cumsum(np.where(finite, np.exp(wide - max_logit), 0.0), axis=1)
    words = _uint32_stream(gen, 2 * batch * num_samples).reshape(batch, num_samples, 2)
    to_find = uint64_to_double(words[..., 0], words[..., 1]) * cdf[:, -1:]
    found = [np.searchsorted(cdf[b], to_find[b], side="right") for b in range(batch)]
    return np.asarray(found, dtype=np.int64).reshape(batch, num_samples).astype(out_dtype)


def _multinomial_blocks(batch: int, num_samples: int) -> int:
    """ReserveRandomOutputs(batch * ceil4(num_samples) * 2, 256): blocks one run reserves."""
    return batch * (-(-num_samples // 4) * 4) * 2 * RESERVED_SAMPLES_PER_OUTPUT


def _multinomial_infer(ctx):
    logits = ctx.inputs[0].shape
    if logits is not None and len(logits) != 2:
        raise ctx.error(f"logits should be a matrix, got shape {list(logits)}")
    if ctx.inputs[1].shape not in (None, ()):
        raise ctx.error(f"num_samples should be a scalar, got shape {list(ctx.inputs[1].shape)}")
    n = ctx.inputs[1].value
    batch = None if logits is None else logits[0]
    return [TensorSpec(ctx.attr("output_dtype", np.dtype(np.int64)), (batch, None if n is None else int(n)))]


def _multinomial_args(ctx, logits, num_samples):
    logits = np.asarray(logits)
    n = int(np.asarray(num_samples))
    if n < 0:
        raise ctx.error(f"num_samples should be non-negative, got {n}", InputError)
    if logits.shape[1] <= 0:
        raise ctx.error(f"num_classes should be positive, got {logits.shape[1]}", InputError)
    return logits, n


def _multinomial_kernel(ctx, logits, num_samples):
    logits, n = _multinomial_args(ctx, logits, num_samples)
    stream = ctx.state.random_stream(ctx.attr("seed", 0), ctx.attr("seed2", 0))
    gen = stream.base.skip(stream.offset)
    if logits.shape[0] * n == 0:
        return np.zeros((logits.shape[0], n), ctx.out().dtype)
    stream.offset += _multinomial_blocks(logits.shape[0], n)
    return multinomial(gen, logits, n, ctx.out().dtype)


def _stateless_multinomial_kernel(ctx, logits, num_samples, seed):
    logits, n = _multinomial_args(ctx, logits, num_samples)
    seed = np.asarray(seed).reshape(-1)
    gen = PhiloxRandom.from_seed_pair(int(seed[0]), int(seed[1]))
    return multinomial(gen, logits, n, ctx.out().dtype)


def _stateless_multinomial_infer(ctx):
    check_vector(ctx, 2, "seed", 2)
    return _multinomial_infer(ctx)


def _prefix_sum(x, axis: int = 0):
    """Inclusive prefix sum along `axis` in log2(n) shifted adds (Hillis-Steele): O(n log n),
    where a whole-axis reduce_window costs O(n^2). Exact for integers; for floats the sums
    are grouped differently from a sequential loop (last-ulp differences)."""
    shape = hlo.shape_of(x)
    n = shape[axis]
    zero = hlo.scalar_like(0, hlo.reshape(hlo.slice(x, [0] * len(shape), [1] * len(shape)), []))
    k = 1
    while k < n:
        limit = list(shape)
        limit[axis] = n - k
        low = [0] * len(shape)
        low[axis] = k
        x = hlo.add(x, hlo.pad(hlo.slice(x, [0] * len(shape), limit), zero, low, [0] * len(shape)))
        k *= 2
    return x


def _stateless_multinomial_lower(ctx, logits, _num_samples, seed):
    batch, classes = ctx.static_shape(0)
    n = int(np.asarray(ctx.const(1)))
    if n < 0 or classes <= 0:
        raise ctx.lowering_error(f"needs num_samples >= 0 and classes > 0, got {n} and {classes}")
    f64 = np.dtype(np.float64)
    u = philox_hlo.uniform(philox_hlo.Philox.from_seed_pair(seed), batch * n, [batch, n], f64)
    wide = hlo.convert(logits, f64)
    finite = hlo.unary("is_finite", wide)
    lowest = hlo.splat(float(ml_dtypes.finfo(ctx.inputs[0].dtype).min), [batch, classes], f64)
    row_max = hlo.reduce(hlo.select(finite, wide, lowest), hlo.constant(np.float64(-np.inf)), [1], "maximum")
    shifted = hlo.subtract(wide, hlo.broadcast_in_dim(row_max, [batch, classes], [0]))
    terms = hlo.select(finite, philox_hlo.exp_f64(hlo.select(finite, shifted, hlo.splat(0.0, [batch, classes], f64))),
                       hlo.splat(0.0, [batch, classes], f64))
    cdf = _prefix_sum(terms, axis=1)
    total = hlo.reshape(hlo.slice(cdf, [0, classes - 1], [batch, classes]), [batch])
    to_find = hlo.multiply(u, hlo.broadcast_in_dim(total, [batch, n], [0]))
    below = hlo.compare("LE", hlo.broadcast_in_dim(cdf, [batch, n, classes], [0, 2]),
                        hlo.broadcast_in_dim(to_find, [batch, n, classes], [0, 1]))
    out = ctx.out().dtype
    return hlo.reduce(hlo.convert(below, out), hlo.constant(np.zeros((), out)), [2], "add")


_SAMPLE_TYPES = ("float16", "bfloat16", "float32", "float64")
# num_samples is a compile-time constant for XLA too (it sizes the output)
register("Multinomial", infer=_multinomial_infer, kernel=_multinomial_kernel, stateful=True, const_inputs=(1,),
         attrs=("T", "output_dtype", "seed", "seed2"), dtypes=_SAMPLE_TYPES, dtype_attrs=("T",))
register("StatelessMultinomial", infer=_stateless_multinomial_infer, kernel=_stateless_multinomial_kernel,
         lower=_stateless_multinomial_lower, const_inputs=(1,),
         attrs=("T", "output_dtype", "Tseed"), dtypes=_SAMPLE_TYPES, dtype_attrs=("T",))


# -- RandomShuffle ----------------------------------------------------------------------------------


def shuffle_permutation(gen: PhiloxRandom, size: int) -> np.ndarray:
    """RandomShuffle's permutation of range(size): swap i and i + u32 % (size - i), i < size - 1."""
    perm = np.arange(size)
    words = _uint32_stream(gen, max(size - 1, 0)).astype(np.int64)
    for i in range(size - 1):
        j = i + int(words[i] % (size - i))
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _shuffle_kernel(ctx, value):
    value = np.asarray(value)
    if value.size <= 1 or value.ndim == 0 or value.shape[0] <= 1:
        return value.copy()
    stream = ctx.state.random_stream(ctx.attr("seed", 0), ctx.attr("seed2", 0))
    samples = value.shape[0] - 1
    gen = stream.reserve(-(-samples // 4), 1)  # ReserveSamples32(samples)
    return value[shuffle_permutation(gen, value.shape[0])]


register("RandomShuffle", infer=same_as_input, kernel=_shuffle_kernel, stateful=True, attrs=("T", "seed", "seed2"))


# -- StochasticCastToInt ------------------------------------------------------------------------------


def _stochastic_cast_layout(dtype, out_dtype) -> tuple[int, int]:
    """(outer, inner) packet sizes of Eigen's evaluation in TF's x86-64 pip build (AVX; measured
    against TF 2.21): float32 -> int32 runs in packets of 8 floats and float64 -> int32 in
    packets of 8 outputs made of packets of 4 doubles, each inner packet drawing one Philox
    block (its values repeated across the packet); the other pairs run element by element.
    (0, 0): no packets."""
    if np.dtype(out_dtype) == np.int32 and np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64)):
        return (8, 8) if np.dtype(dtype) == np.float32 else (8, 4)
    return (0, 0)


def stochastic_round(gen: PhiloxRandom, x: np.ndarray, out_dtype) -> np.ndarray:
    """StochasticRoundToIntOp (core/kernels/stochastic_cast_op.h) as TF's CPU build evaluates it:
    x < 0 rounds to floor(x + u), x >= 0 to floor(x + 1 - u), u from UniformDistribution<T>;
    NaN gives 0, values beyond the integer range its bounds, integers stay. Packets draw a
    block whatever their values; an element outside them draws one block (taking its first
    value) only when it is rounded."""
    dtype = x.dtype
    flat = x.reshape(-1)
    n = flat.size
    per = 2 if dtype.itemsize == 8 else 4
    outer, inner = _stochastic_cast_layout(dtype, out_dtype)
    packed = (n // outer) * outer if outer else 0
    info = np.iinfo(out_dtype)
    with np.errstate(over="ignore"):  # static_cast<half>(INT32_MAX) is inf, as in TF
        hi, lo = dtype.type(info.max), dtype.type(info.min)
    with np.errstate(invalid="ignore"):  # (NaN compares false, as in C)
        rounded = ~np.isnan(flat) & (flat < hi) & (flat > lo) & (np.floor(flat) != flat)
    tail_draws = np.cumsum(rounded[packed:]) - 1
    n_blocks = (packed // inner if inner else 0) + int(rounded[packed:].sum())
    blocks = draw("uniform", gen, [max(n_blocks, 1) * per], dtype).reshape(-1, per)
    idx = np.arange(n)
    block = np.where(idx < packed, idx // max(inner, 1), 0)
    value = np.where(idx < packed, (idx % max(inner, 1)) % per, 0)
    block[packed:] = (packed // inner if inner else 0) + np.maximum(tail_draws, 0)
    u = blocks[block, value]
    with np.errstate(invalid="ignore"):
        result = np.where(flat < 0, np.floor(flat + u), np.floor(flat + dtype.type(1) - u))
        result = np.where(np.floor(flat) == flat, flat, result)
        result = np.where(flat >= hi, hi, np.where(flat <= lo, lo, result))
        result = np.where(np.isnan(flat), dtype.type(0), result)
    # the bound itself may not be representable (float(INT32_MAX) is 2**31): x86's conversion
    # of an out-of-range value gives the "integer indefinite", INT_MIN, which TF returns
    wide = result.astype(np.float64)
    return np.where((wide > info.max) | (wide < info.min), info.min, wide).astype(out_dtype).reshape(x.shape)


def _stochastic_cast_kernel(ctx, x, key, counter, alg):
    check_alg(ctx, alg, allowed=(RNG_ALG_PHILOX,))
    # `PhiloxRandom gen(counter[0], key[0])`: TF passes them to the (seed_lo, seed_hi)
    # constructor, so the counter's low word becomes the key and the key the counter's high half
    gen = PhiloxRandom.from_seeds(int(np.asarray(counter).reshape(-1)[0]), int(np.asarray(key).reshape(-1)[0]))
    return stochastic_round(gen, np.asarray(x), ctx.out().dtype)




def _stochastic_uniform(w, value, dtype):
    """UniformDistribution<T>'s value number `value` (per element) of the blocks `w`."""
    if dtype == np.float64:
        first, second = philox_hlo.uint64_to_double(w[0], w[1]), philox_hlo.uint64_to_double(w[2], w[3])
        return hlo.select(hlo.compare("EQ", value, hlo.scalar_like(0, value)), first, second)
    if dtype != np.float32:  # half and bfloat16 only run element by element: value 0
        return philox_hlo.LOWERINGS_OF_BITS[dtype.name](w[0])
    out = philox_hlo.uint32_to_float(w[3])
    for v in (2, 1, 0):
        out = hlo.select(hlo.compare("EQ", value, hlo.scalar_like(v, value)), philox_hlo.uint32_to_float(w[v]), out)
    return out


def _stochastic_cast_lower(ctx, x, key, counter, _alg):
    """stochastic_round compiled: each element's block and value number from the packet layout
    and, past the packets, a prefix count of the elements that draw."""
    check_alg(ctx, ctx.const(3), allowed=(RNG_ALG_PHILOX,))
    dtype, out_dtype = np.dtype(ctx.inputs[0].dtype), ctx.out().dtype
    shape = list(ctx.static_shape(0))
    n = int(np.prod(shape, dtype=np.int64))
    flat = hlo.reshape(x, [n])
    outer, inner = _stochastic_cast_layout(dtype, out_dtype)
    packed = (n // outer) * outer if outer else 0
    per = 2 if dtype.itemsize == 8 else 4
    info = np.iinfo(out_dtype)
    with np.errstate(over="ignore"):
        hi, lo = (hlo.scalar_like(float(dtype.type(v)), flat) for v in (info.max, info.min))
    floor = hlo.unary("floor", flat)
    integer = hlo.compare("EQ", floor, flat)
    nan = hlo.compare("NE", flat, flat)
    idx = hlo.iota([n], np.int64, 0)
    in_tail = hlo.compare("GE", idx, hlo.scalar_like(packed, idx))
    draws = hlo.binary("and", hlo.binary("and", hlo.compare("LT", flat, hi), hlo.compare("GT", flat, lo)),
                       hlo.binary("and", hlo.unary("not", integer), in_tail))
    tail_block = hlo.add(_prefix_sum(hlo.convert(draws, np.int64)), hlo.scalar_like(packed // max(inner, 1) - 1, idx))
    step = hlo.scalar_like(max(inner, 1), idx)
    block = hlo.select(in_tail, hlo.maximum(tail_block, hlo.scalar_like(0, idx)), hlo.divide(idx, step))
    value = hlo.select(in_tail, hlo.scalar_like(0, idx),
                       hlo.binary("remainder", hlo.binary("remainder", idx, step), hlo.scalar_like(per, idx)))
    k, c = philox_hlo.scalar_at(counter, 0), philox_hlo.scalar_at(key, 0)  # (seed_lo, seed_hi) constructor
    gen = philox_hlo.Philox(philox_hlo.lo32(k), philox_hlo.hi32(k), hlo.constant(np.uint64(0)), c)
    u = _stochastic_uniform(gen.blocks(hlo.convert(block, np.uint64)), value, dtype)
    one = hlo.scalar_like(1, flat)
    r = hlo.select(hlo.compare("LT", flat, hlo.scalar_like(0, flat)), hlo.unary("floor", hlo.add(flat, u)),
                   hlo.unary("floor", hlo.subtract(hlo.add(flat, one), u)))
    r = hlo.select(integer, flat, r)
    r = hlo.select(hlo.compare("GE", flat, hi), hi, hlo.select(hlo.compare("LE", flat, lo), lo, r))
    r = hlo.select(nan, hlo.scalar_like(0, flat), r)
    wide = hlo.convert(r, np.float64)
    bad = hlo.binary("or", hlo.compare("GT", wide, hlo.scalar_like(float(info.max), wide)),
                     hlo.compare("LT", wide, hlo.scalar_like(float(info.min), wide)))
    safe = hlo.convert(hlo.select(bad, hlo.scalar_like(0, r), r), out_dtype)
    return hlo.reshape(hlo.select(bad, hlo.scalar_like(int(info.min), safe), safe), shape)


register("StochasticCastToInt", infer=lambda ctx: [TensorSpec(ctx.attr("Tout"), ctx.inputs[0].shape)],
         kernel=_stochastic_cast_kernel, lower=_stochastic_cast_lower, const_inputs=(3,), attrs=("Tin", "Tout"), dtypes=("int8", "int16", "int32"),
         dtype_attrs=("Tout",))
