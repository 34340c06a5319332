"""TensorFlow's seeded CPU random streams, reimplemented in NumPy.

TensorFlow's stateful random ops (RandomUniform, RandomStandardNormal, TruncatedNormal,
RandomUniformInt) draw from a Philox4x32-10 counter-based generator. Reproducing them
takes three layers, each mirrored here so that a discrepancy can be traced to one of them:

1. `PhiloxRandom`: the block cipher (tsl/lib/random/philox_random.h). A 64-bit key and a
   128-bit counter; each call returns four uint32 and adds one to the counter. Because
   it is counter based, block `i` of a stream is `philox(key, counter + i)`, which is what
   lets `PhiloxRandom.blocks` compute a whole stream with array arithmetic.
2. `GuardedPhilox`: the per-kernel state (tensorflow/core/util/guarded_philox_random.cc).
   The kernel seeds `PhiloxRandom(seed, seed2)` once (key = seed, counter[2:4] = seed2)
   and every execution reserves `num_elements * 256` 128-bit blocks
   (`ReserveRandomOutputs(n, 256)`), so the k-th run of the same node continues where
   the (k-1)-th left off. The whole state is therefore one integer, `offset`: how many
   blocks earlier runs reserved. A runtime keeps that integer per node and per session.
3. The distributions (tsl/lib/random/random_distributions.h) and how
   `FillPhiloxRandom` (tensorflow/core/kernels/random_op_cpu.h) lays them out: output
   group `g` (4 floats / 2 doubles) comes from block `g`, except for TruncatedNormal,
   whose rejection sampling uses a variable number of uint32 per group, so group `g`
   starts its own sub-stream at block `g * group_size * 256 / 4`. That layout is why the
   result does not depend on TensorFlow's thread sharding, and why it can be vectorised.

Exactness: the generator and the uniform/integer distributions are bit-exact. The
normal distributions need log, sin and cos. TensorFlow calls glibc's logf/sincosf (or
log/sincos for double); here they are evaluated in float64 and rounded, which agrees
with glibc except for rare 1-ulp differences (see tests/ops/test_philox.py for the
measured differences against TensorFlow 2.21).

Entry points: `sample()` (functional: seeds + offset in, array + new offset out) and
`GuardedPhilox` (an object holding the offset, for callers that prefer it). The stateless
ops (`tf.random.stateless_*`, Keras 3) and `tf.random.Generator` use the same generator and
the same `FillPhiloxRandom` layout from a given key and counter instead of a per-node
state: `PhiloxRandom.from_seed_pair` (GenerateKey), `PhiloxRandom.from_key_counter` and
`draw` (a distribution by name) serve them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = [
    "OPS",
    "RESERVED_SAMPLES_PER_OUTPUT",
    "GuardedPhilox",
    "PhiloxRandom",
    "draw",
    "fill",
    "random_seeds",
    "sample",
    "uint64_to_double",
]

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1

# Philox4x32 constants (philox_random.h; from the original Salmon et al. paper).
_W32A = 0x9E3779B9
_W32B = 0xBB67AE85
_M4X32A = np.uint64(0xD2511F53)
_M4X32B = np.uint64(0xCD9E8D57)
_ROUNDS = 10
_CHUNK = 1 << 20
#: GenerateKey's fixed key (key[0] = 0x3ec8f720, key[1] = 0x02461e29).
STATELESS_SEED_KEY = 0x02461E29_3EC8F720  # blocks per vectorised pass (~100 MB of temporaries)

#: Multiplier of ReserveRandomOutputs in random_op.cc and kReservedSamplesPerOutput in
#: FillPhiloxRandomTask: each output element reserves this many 128-bit blocks.
RESERVED_SAMPLES_PER_OUTPUT = 256

#: The ops `sample`/`fill` implement (TensorFlow op names).
OPS = ("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt")

_FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16),
                np.dtype(ml_dtypes.bfloat16))
_INT_TYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))


def _u64(x: int) -> int:
    """TensorFlow passes int64 seeds to `PhiloxRandom(uint64, uint64)`: wrap mod 2**64."""
    return int(x) & _M64


# -- the generator ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PhiloxRandom:
    """One Philox4x32-10 generator state, as `tsl::random::PhiloxRandom`.

    `key` is the 64-bit key (key[0] = low word) and `counter` the 128-bit counter
    (counter[0] = lowest word). Immutable: `skip` returns a new state, mirroring the way
    TensorFlow copies generators by value before using them.
    """

    key: int
    counter: int = 0

    @classmethod
    def from_seeds(cls, seed: int, seed2: int) -> PhiloxRandom:
        """`PhiloxRandom(seed_lo=seed, seed_hi=seed2)`: key from seed, counter[2:4] from seed2."""
        return cls(_u64(seed), _u64(seed2) << 64)

    @classmethod
    def from_seed_pair(cls, seed0: int, seed1: int) -> PhiloxRandom:
        """`GenerateKey` of the stateless ops (core/kernels/stateless_random_ops.cc): the two
        seeds, as a counter under a fixed key, are scrambled by one Philox block; its output
        words 0-1 are the key and words 2-3 the counter's high half."""
        mix = cls(STATELESS_SEED_KEY, _u64(seed0) | _u64(seed1) << 64).blocks(1)[0]
        return cls(int(mix[0]) | int(mix[1]) << 32, (int(mix[2]) | int(mix[3]) << 32) << 64)

    @classmethod
    def from_key_counter(cls, key, counter) -> PhiloxRandom:
        """The state the V2 stateless ops receive: `key` a uint64[1] tensor, `counter` a
        uint64[2] one (low 64 bits first), as StatelessRandomGetKeyCounter writes them."""
        key = np.asarray(key).astype(np.uint64).reshape(-1)
        counter = np.asarray(counter).astype(np.uint64).reshape(-1)
        return cls(int(key[0]), int(counter[0]) | int(counter[1]) << 64)

    def key_counter(self) -> tuple[np.ndarray, np.ndarray]:
        """(key uint64[1], counter uint64[2]): the inverse of `from_key_counter`."""
        return (np.array([self.key], np.uint64),
                np.array([self.counter & _M64, self.counter >> 64], np.uint64))

    def skip(self, count: int) -> PhiloxRandom:
        """`PhiloxRandom::Skip(count)`: advance by `count` 128-bit blocks.

        Written word by word like TensorFlow, including its carry quirk (a 64-bit count
        whose high word is 0xFFFFFFFF loses the carry from the low word); for every count
        below 2**64 - 2**32 this is plain 128-bit addition.
        """
        c = [(self.counter >> (32 * i)) & _M32 for i in range(4)]
        count = _u64(count)
        count_lo, count_hi = count & _M32, count >> 32
        c[0] = (c[0] + count_lo) & _M32
        if c[0] < count_lo:
            count_hi = (count_hi + 1) & _M32
        c[1] = (c[1] + count_hi) & _M32
        if c[1] < count_hi:
            c[2] = (c[2] + 1) & _M32
            if c[2] == 0:
                c[3] = (c[3] + 1) & _M32
        return PhiloxRandom(self.key, c[0] | c[1] << 32 | c[2] << 64 | c[3] << 96)

    def blocks(self, count: int) -> np.ndarray:
        """The next `count` results of `operator()`: a (count, 4) uint32 array."""
        return self.blocks_at(np.arange(count, dtype=np.uint64))

    def blocks_at(self, offsets: np.ndarray) -> np.ndarray:
        """Philox output for counters `self.counter + offsets` (uint64 offsets): (n, 4) uint32.

        Consecutive `operator()` calls increment the 128-bit counter by one with full
        carry (SkipOne), so block `i` is a pure function of `counter + i`: no loop over
        elements is needed (only over chunks, to bound the temporaries' memory).
        """
        offsets = np.asarray(offsets, dtype=np.uint64).reshape(-1)
        out = np.empty((offsets.size, 4), dtype=np.uint32)
        for start in range(0, offsets.size, _CHUNK):
            out[start:start + _CHUNK] = self._rounds(offsets[start:start + _CHUNK])
        return out

    def _rounds(self, offsets: np.ndarray) -> np.ndarray:
        """The ten Philox rounds on counters `self.counter + offsets`, as uint64 words."""
        lo = offsets + np.uint64(self.counter & _M64)  # wraps mod 2**64
        carry = (lo < offsets).astype(np.uint64)
        hi = carry + np.uint64((self.counter >> 64) & _M64)
        m32, s32 = np.uint64(_M32), np.uint64(32)
        c0, c1 = lo & m32, lo >> s32
        c2, c3 = hi & m32, hi >> s32
        k0, k1 = self.key & _M32, (self.key >> 32) & _M32
        for r in range(_ROUNDS):
            if r:
                k0, k1 = (k0 + _W32A) & _M32, (k1 + _W32B) & _M32
            p0 = c0 * _M4X32A  # 32 x 32 -> 64 bits: exact in uint64
            p1 = c2 * _M4X32B
            c0, c1, c2, c3 = ((p1 >> s32) ^ c1 ^ np.uint64(k0), p1 & m32,
                              (p0 >> s32) ^ c3 ^ np.uint64(k1), p0 & m32)
        return np.stack([c0, c1, c2, c3], axis=1)


def random_seeds() -> tuple[int, int]:
    """What `GuardedPhiloxRandom::Init` does for seed == seed2 == 0: two random 64-bit seeds."""
    return (int.from_bytes(os.urandom(8), "little"), int.from_bytes(os.urandom(8), "little"))


# -- distributions (random_distributions.h) ------------------------------------------------------


def _uint32_to_float(x: np.ndarray) -> np.ndarray:
    """Uint32ToFloat: 23 random mantissa bits under exponent 0 give [1, 2); minus 1."""
    bits = (x.astype(np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)
    return bits.view(np.float32) - np.float32(1.0)


def uint64_to_double(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """Uint64ToDouble: 20 bits of x0 and all of x1 form the 52-bit mantissa; minus 1."""
    man = ((x0.astype(np.uint64) & np.uint64(0xFFFFF)) << np.uint64(32)) | x1.astype(np.uint64)
    return (man | np.uint64(1023 << 52)).view(np.float64) - 1.0


def _box_muller_float(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BoxMullerFloat, operation by operation in float32.

    `2.0f * M_PI * u` is a double product rounded to float, as in C. logf and sincosf are
    taken as float64 results rounded to float32 (what glibc returns, up to rare 1-ulp
    cases); sqrtf and the products are IEEE float32 like TensorFlow's.
    """
    u1 = np.maximum(_uint32_to_float(x0), np.float32(1.0e-7))
    v1 = (2.0 * np.pi * _uint32_to_float(x1).astype(np.float64)).astype(np.float32)
    log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2.0) * log_u1)
    v64 = v1.astype(np.float64)
    return np.sin(v64).astype(np.float32) * u2, np.cos(v64).astype(np.float32) * u2


def _box_muller_double(x0, x1, x2, x3) -> tuple[np.ndarray, np.ndarray]:
    """BoxMullerDouble: two doubles from four uint32."""
    u1 = np.maximum(uint64_to_double(x0, x1), 1.0e-7)
    v1 = 2.0 * np.pi * uint64_to_double(x2, x3)
    u2 = np.sqrt(-2.0 * np.log(u1))
    return np.sin(v1) * u2, np.cos(v1) * u2


def _interleave(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[a0, b0, a1, b1, ...] along the last axis: the order Box-Muller pairs are stored in."""
    return np.stack([a, b], axis=-1).reshape(*a.shape[:-1], -1)


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32 -> half/bfloat16 with round-to-nearest-even, like Eigen::half(f)/bfloat16(f)."""
    return values if values.dtype == dtype else values.astype(dtype)


def _per_block(dtype: np.dtype) -> int:
    """kResultElementCount: outputs per 128-bit block (2 for 64-bit types, else 4)."""
    return 2 if dtype.itemsize == 8 else 4


def _uniform(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    """UniformDistribution for float types: [0, 1) from the mantissa bits."""
    blocks = gen.blocks(-(-n // _per_block(dtype)))
    if dtype == np.float64:
        return uint64_to_double(blocks[:, 0::2], blocks[:, 1::2]).reshape(-1)[:n]
    x = blocks.reshape(-1)[:n]
    if dtype == np.float32:
        return _uint32_to_float(x)
    if dtype == np.float16:  # Uint16ToHalf: low 16 bits, 10 mantissa bits
        bits = (x.astype(np.uint16) & np.uint16(0x3FF)) | np.uint16(15 << 10)
        return bits.view(np.float16) - np.float16(1.0)
    # Uint16ToGfloat16: 7 mantissa bits; the subtraction is exact, so do it in float32.
    bits = ((x & np.uint32(0x7F)) | np.uint32(127 << 7)) << np.uint32(16)
    return (bits.view(np.float32) - np.float32(1.0)).astype(ml_dtypes.bfloat16)


def _normal(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    """NormalDistribution: Box-Muller on consecutive uint32 pairs (quads for double)."""
    blocks = gen.blocks(-(-n // _per_block(dtype)))
    if dtype == np.float64:
        d0, d1 = _box_muller_double(*(blocks[:, i] for i in range(4)))
        return _interleave(d0[:, None], d1[:, None]).reshape(-1)[:n]
    flat = blocks.reshape(-1)
    f0, f1 = _box_muller_float(flat[0::2], flat[1::2])
    return _cast(_interleave(f0, f1)[:n], dtype)


def _truncated_normal(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    """TruncatedNormalDistribution through SingleSampleAdapter, as FillPhiloxRandomTask runs it.

    Output group g (4 values; 2 for double) restarts the generator at block
    g * group * 256 / 4 and keeps the first `group` Box-Muller values with |x| < 2, in
    stream order. Every group is processed at once; the groups that are still short get
    one more block per pass.
    """
    group = _per_block(dtype)
    stride = group * RESERVED_SAMPLES_PER_OUTPUT // 4  # kGeneratorSkipPerOutputGroup
    n_groups = -(-n // group)
    work = np.float64 if dtype == np.float64 else np.float32
    out = np.zeros((n_groups, group), dtype=work)
    filled = np.zeros(n_groups, dtype=np.int64)
    todo = np.arange(n_groups, dtype=np.int64)
    block = 0  # one block per group and pass: after the first, ~17% of float groups are short
    while todo.size:
        b = gen.blocks_at((todo * stride + block).astype(np.uint64))  # (len(todo), 4) uint32
        if dtype == np.float64:
            d0, d1 = _box_muller_double(b[:, 0], b[:, 1], b[:, 2], b[:, 3])
            cand = _interleave(d0[:, None], d1[:, None])
        else:
            cand = _interleave(*_box_muller_float(b[:, 0::2], b[:, 1::2]))
        ok = np.abs(cand) < work(2.0)
        rank = filled[todo, None] + np.cumsum(ok, axis=1) - 1
        rows, cols = np.nonzero(ok & (rank < group))
        out[todo[rows], rank[rows, cols]] = cand[rows, cols]
        filled[todo] = np.minimum(group, filled[todo] + ok.sum(axis=1))
        todo = todo[filled[todo] < group]
        block += 1
    return _cast(out.reshape(-1)[:n], dtype)


def _full_int_bits(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    """UniformFullIntDistribution32/64 as unsigned bits: one uint32 per 32-bit result, and
    `x[2i] | x[2i+1] << 32` per 64-bit one."""
    blocks = gen.blocks(-(-n // _per_block(dtype)))
    if dtype.itemsize == 4:
        return blocks.reshape(-1)[:n]
    bits = (blocks[:, 0::2].astype(np.uint64) | (blocks[:, 1::2].astype(np.uint64) << np.uint64(32)))
    return bits.reshape(-1)[:n]


def _uniform_full_int(gen: PhiloxRandom, n: int, dtype: np.dtype) -> np.ndarray:
    """UniformFullIntDistribution: the raw bits, reinterpreted as `dtype`."""
    return _full_int_bits(gen, n, dtype).view(dtype)


def _uniform_int(gen: PhiloxRandom, n: int, dtype: np.dtype, minval: int, maxval: int) -> np.ndarray:
    """UniformDistribution<int32/int64/uint32/uint64>(lo, hi): lo + bits % (hi - lo), with
    the range and the sum in the unsigned type of `dtype`'s width (biased, like TF)."""
    lo, hi = int(minval), int(maxval)
    if not lo < hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    bits = _full_int_bits(gen, n, dtype)
    unsigned = bits.dtype.type
    mask = (1 << (8 * dtype.itemsize)) - 1
    return ((bits % unsigned((hi - lo) & mask)) + unsigned(lo & mask)).view(dtype)


def _num_elements(shape) -> int:
    n = 1
    for d in shape:
        if int(d) < 0:
            raise ValueError(f"random op shape must be non-negative, got {tuple(shape)}")
        n *= int(d)
    return n


#: The distributions `draw` knows, and the dtypes each produces.
DISTRIBUTIONS = {
    "uniform": (_uniform, _FLOAT_TYPES),
    "normal": (_normal, _FLOAT_TYPES),
    "truncated_normal": (_truncated_normal, _FLOAT_TYPES),
    "uniform_int": (_uniform_int, _INT_TYPES),
    "uniform_full_int": (_uniform_full_int, _INT_TYPES),
}
#: The distribution each stateful op (OPS) draws from.
DISTRIBUTION_OF = dict(zip(OPS, ("uniform", "normal", "truncated_normal", "uniform_int")))


def draw(distribution: str, gen: PhiloxRandom, shape, dtype=np.float32, *, minval=None,
         maxval=None) -> np.ndarray:
    """`FillPhiloxRandom` with one of DISTRIBUTIONS: an array of `shape` drawn from `gen`.

    For "uniform_int", `minval`/`maxval` are the scalar bounds (checked only when the
    output is not empty, as in TF's kernels).
    """
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    n = _num_elements(shape)
    fn, types = DISTRIBUTIONS[distribution]
    if dtype not in types:
        raise ValueError(f"unsupported dtype {dtype} for {distribution} "
                         f"({', '.join(map(str, types))})")
    if n == 0:
        return np.zeros(shape, dtype)
    if distribution == "uniform_int":
        if minval is None or maxval is None:
            raise ValueError("a uniform integer distribution needs minval and maxval")
        return fn(gen, n, dtype, minval, maxval).reshape(shape)
    return fn(gen, n, dtype).reshape(shape)


def fill(op: str, gen: PhiloxRandom, shape, dtype=np.float32, *, minval=None, maxval=None) -> np.ndarray:
    """`FillPhiloxRandom` for stateful op `op` (one of OPS): an array of `shape` drawn from
    generator state `gen`, the state the kernel reserved for this execution
    (`GuardedPhilox.reserve`). For RandomUniformInt, `minval`/`maxval` are the scalar inputs.
    """
    if op not in DISTRIBUTION_OF:
        raise ValueError(f"unsupported random op {op!r} (supported: {', '.join(OPS)})")
    if op == "RandomUniformInt" and np.dtype(dtype) not in _INT_TYPES[:2]:
        raise ValueError(f"RandomUniformInt: unsupported dtype {np.dtype(dtype)} (int32, int64)")
    return draw(DISTRIBUTION_OF[op], gen, shape, dtype, minval=minval, maxval=maxval)


# -- per-node state (GuardedPhiloxRandom) and the functional entry point -------------------------


class GuardedPhilox:
    """The random state of one stateful random-op node, as TF's `GuardedPhiloxRandom`.

    TensorFlow builds one kernel per node per session; its generator starts at
    `PhiloxRandom(seed, seed2)` and each execution reserves `num_elements * 256` blocks.
    This object holds exactly that: the resolved seeds and `offset`, the number of blocks
    reserved so far. Use one instance per (session, node); a new TF session starts over.

    seed == seed2 == 0 means "unseeded" in TensorFlow: random seeds are drawn once, here at
    construction, so repeated runs still continue one (nondeterministic) stream.
    """

    def __init__(self, seed: int = 0, seed2: int = 0, offset: int = 0):
        if seed == 0 and seed2 == 0:
            seed, seed2 = random_seeds()
        self.seed, self.seed2, self.offset = int(seed), int(seed2), int(offset)

    @property
    def base(self) -> PhiloxRandom:
        """The generator as seeded, before any execution."""
        return PhiloxRandom.from_seeds(self.seed, self.seed2)

    def reserve(self, num_outputs: int, multiplier: int = RESERVED_SAMPLES_PER_OUTPUT) -> PhiloxRandom:
        """`ReserveRandomOutputs(num_outputs, multiplier)`: this run's generator; advances `offset`."""
        gen = self.base.skip(self.offset)
        self.offset += int(num_outputs) * int(multiplier)
        return gen

    def sample(self, op: str, shape, dtype=np.float32, *, minval=None, maxval=None) -> np.ndarray:
        """One execution of `op` (see `fill`): draws, then advances the stream.

        Invalid arguments raise before anything is reserved, as in TF's kernels.
        """
        out = fill(op, self.base.skip(self.offset), shape, dtype, minval=minval, maxval=maxval)
        self.reserve(out.size)
        return out

    def __repr__(self) -> str:
        return f"GuardedPhilox(seed={self.seed}, seed2={self.seed2}, offset={self.offset})"


def sample(op: str, shape, dtype, seed: int, seed2: int, counter_offset: int = 0, *,
           minval=None, maxval=None) -> tuple[np.ndarray, int]:
    """What one execution of a TF random op node with attrs (seed, seed2) returns.

    `counter_offset` is the node's state: 0 for its first execution in a session, and the
    returned `new_offset` for the next one (it grows by `num_elements * 256` per run, so
    with a fixed shape the k-th run has offset k * num_elements * 256). Keeping a plain
    int per node is all a caller needs to continue TensorFlow's stream.

    With seed == seed2 == 0 each call uses fresh random seeds (TF would pick them once per
    kernel; both are nondeterministic). Use `GuardedPhilox` to keep random seeds.
    """
    state = GuardedPhilox(seed, seed2, counter_offset)
    out = state.sample(op, shape, dtype, minval=minval, maxval=maxval)
    return out, state.offset
