"""ParameterizedTruncatedNormal and StatelessParameterizedTruncatedNormal: TF's CPU samplers.

core/kernels/parameterized_truncated_normal_op.cc draws each batch member's samples with one of
three rejection samplers, chosen from the normalised bounds: normal proposals when a bound is
more than 1.3 standard deviations inside, uniform proposals on [normMin, normMax] when the
interval is short, and exponential proposals in a far tail. The samplers consume Philox blocks
one at a time (a block gives 4 uniforms or normals, 2 for double) and continue one stream
from batch member to batch member. Kernels only (XLA compiles these ops with its own bit
generator and a different algorithm).

Both reproduce one of TF's shards, which is all of TF's run when it does not split the work
over threads: the stateful op when all parameters are scalars and it draws at most 100 values
(one "batch" of kDesiredBatchSize) or runs on one thread; the stateless op when
`num_elements * cost < 10000` (tens of elements) or on one thread. Beyond that TF restarts
each shard's stream at a skip that depends on its thread count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...spec import TensorSpec
from ..helpers import broadcast_shapes, ints, unknown_vector_dims
from .philox import PhiloxRandom, draw
from ..registry import register
from .stateless import check_vector

MAX_ITERATIONS = 1000  # kMaxIterations
DESIRED_BATCH_SIZE = 100  # kDesiredBatchSize of the stateful op
RANDN_INSIDE = 1.3  # kStdDevsInsideBoundsToUseRandnSampler
_CHUNK = 256


class _BlockStream:
    """Consecutive Philox blocks of one stream, each read as uniforms or as normals of dtype."""

    def __init__(self, gen: PhiloxRandom, dtype):
        self.gen, self.dtype, self.next = gen, np.dtype(dtype), 0
        self.per = 2 if self.dtype.itemsize == 8 else 4
        self.cache = {}

    def take(self, distribution: str) -> np.ndarray:
        chunk, i = divmod(self.next, _CHUNK)
        key = (distribution, chunk)
        if key not in self.cache:
            start = self.gen.skip(chunk * _CHUNK)
            self.cache = {k: v for k, v in self.cache.items() if k[1] == chunk}
            self.cache[key] = draw(distribution, start, [_CHUNK * self.per], self.dtype).reshape(_CHUNK, self.per)
        self.next += 1
        return self.cache[key][i]


def _exp(x, t):
    """Eigen::numext::exp of T: the float64 value rounded (what glibc's expf/exp return)."""
    return t(math.exp(float(x)))


@dataclass
class _Member:
    """One batch member's samples so far and its rejections in a row (TF's num_iterations)."""
    count: int
    stddev: object
    mean: object
    out: list = field(default_factory=list)
    misses: int = 0

    def offer(self, z, accept: bool, failure: str) -> bool:
        """A candidate of the uniform or exponential sampler: kept, or one more rejection; at
        the last iteration TF gives up with `failure`. True when the member is complete."""
        if accept or self.misses + 1 >= MAX_ITERATIONS:
            if not accept:
                raise ValueError(failure)
            self.out.append(z * self.stddev + self.mean)
            self.misses = 0
            return len(self.out) >= self.count
        self.misses += 1
        return False


def _sample_member(stream: _BlockStream, mean, stddev, minval, maxval, count: int, t) -> list:
    """`count` samples of one batch member, TruncatedNormalFunctor's loop body, in T arithmetic."""
    if not (stddev > 0 and minval < maxval and (np.isfinite(minval) or np.isfinite(maxval))):
        raise ValueError("Invalid parameters")
    if (np.isinf(minval) and minval < 0) or maxval < mean:
        minval, maxval, stddev = maxval, minval, -stddev
    norm_min, norm_max = (minval - mean) / stddev, (maxval - mean) / stddev
    sqrt_factor = t(np.sqrt(norm_min * norm_min + t(4)))
    cutoff = t(2) * _exp(t(0.5) + (norm_min * (norm_min - sqrt_factor)) / t(4), t) / (norm_min + sqrt_factor)
    diff = norm_max - norm_min
    member = _Member(count, stddev, mean)
    if (norm_min < -t(RANDN_INSIDE) and norm_max >= 0) or (norm_max > t(RANDN_INSIDE) and norm_min <= 0):
        while len(member.out) < count:  # normal proposals, kept inside the bounds
            for z in stream.take("normal"):
                if norm_min <= z <= norm_max:
                    member.out.append(z * stddev + mean)
                    member.misses = 0
                    if len(member.out) >= count:
                        break
                else:
                    member.misses += 1
                    if member.misses > MAX_ITERATIONS:
                        raise ValueError("TruncatedNormal randn rejection sampler failed to accept a sample.")
    elif diff < cutoff:  # uniform proposals on [normMin, normMax]
        plus = t(0) if norm_min < 0 else norm_min * norm_min
        while len(member.out) < count:
            z = stream.take("uniform") * diff + norm_min
            g = (plus - z * z) / t(2)
            for zi, gi, ui in zip(z, g, stream.take("uniform")):
                if member.offer(zi, ui <= _exp(gi, t), "TruncatedNormal uniform rejection sampler failed to accept "
                                                       "a sample."):
                    break
    else:  # exponential proposals from normMin, kept below normMax
        alpha = (norm_min + t(np.sqrt(norm_min * norm_min + t(4)))) / t(2)
        while len(member.out) < count:
            r = stream.take("uniform")
            for i in range(0, len(r), 2):
                z = -t(math.log(float(r[i]))) / alpha + norm_min if r[i] > 0 else t(np.inf)
                x = alpha - z if norm_min < alpha else norm_min - alpha
                accept = r[i + 1] <= _exp(-x * x / t(2), t) and z < norm_max
                if member.offer(z, accept, "TruncatedNormal exponential distribution rejection sampler failed to "
                                           "accept a sample."):
                    break
    return member.out


def _param(values: np.ndarray, b: int):
    flat = values.reshape(-1)
    return flat[0] if flat.size == 1 else flat[b]


def _stateful_kernel(ctx, shape, means, stddevs, minvals, maxvals):
    dims = ints(shape)
    params = [np.asarray(p) for p in (means, stddevs, minvals, maxvals)]
    t = ctx.out().dtype.type
    n = int(np.prod(dims, dtype=np.int64))
    num_batches, per_batch = dims[0] if dims else 1, n // dims[0] if dims and dims[0] else 1
    for name, p in zip(("means", "stddevs", "minvals", "maxvals"), params):
        if p.ndim > 1 or (p.size not in (1, num_batches) and not all(q.size == 1 for q in params)):
            raise ctx.error(f"Input {name} should have length 1 or shape[0], got shape {list(p.shape)}", InputError)
    if all(p.size == 1 for p in params[:2]) and params[2].ndim == 0 and params[3].ndim == 0:
        num_batches, per_batch = -(-n // DESIRED_BATCH_SIZE), DESIRED_BATCH_SIZE  # (TF's adjustment)
    stream_state = ctx.state.random_stream(ctx.attr("seed", 0), ctx.attr("seed2", 0))
    stream = _BlockStream(stream_state.reserve(num_batches * 2 * MAX_ITERATIONS * (per_batch + 3) // 4, 1), t)
    out = np.zeros(n, t)
    try:
        for b in range(num_batches):
            lo, hi = b * per_batch, min((b + 1) * per_batch, n)
            if hi > lo:
                out[lo:hi] = _sample_member(stream, *(t(_param(p, b)) for p in params), hi - lo, t)
    except ValueError as e:
        raise ctx.error(str(e), InputError) from None
    return out.reshape(dims)


def _stateless_kernel(ctx, shape, seed, means, stddevs, minvals, maxvals):
    dims = ints(shape)
    t = ctx.out().dtype.type
    params = [np.asarray(p, t) for p in (means, stddevs, minvals, maxvals)]
    batch_shape = np.broadcast_shapes(*(p.shape for p in params))
    if tuple(dims[len(dims) - len(batch_shape):]) != tuple(batch_shape) or len(batch_shape) > len(dims):
        raise ctx.error("Shape passed in must end with broadcasted shape.", InputError)
    num_batches = int(np.prod(batch_shape, dtype=np.int64))
    n = int(np.prod(dims, dtype=np.int64))
    per_batch = n // num_batches if num_batches else 0
    flat = [np.broadcast_to(p, batch_shape).reshape(-1) for p in params]
    seed = np.asarray(seed).reshape(-1)
    stream = _BlockStream(PhiloxRandom.from_seed_pair(int(seed[0]), int(seed[1])), t)
    out = np.zeros((per_batch, num_batches), t)  # output[sample * num_batches + batch]
    try:
        for b in range(num_batches if per_batch else 0):
            out[:, b] = _sample_member(stream, *(p[b] for p in flat), per_batch, t)
    except ValueError as e:
        raise ctx.error(str(e), InputError) from None
    return out.reshape(dims)


def _infer(ctx):
    shape = ctx.inputs[0].value
    dims = unknown_vector_dims(ctx, 0) if shape is None else tuple(ints(shape))
    if ctx.op.startswith("Stateless"):
        check_vector(ctx, 1, "seed", 2)
        broadcast_shapes(ctx, *(s.shape for s in ctx.inputs[2:]))
    return [TensorSpec(ctx.attr("dtype"), dims)]


register("ParameterizedTruncatedNormal", infer=_infer, kernel=_stateful_kernel, stateful=True, const_inputs=(0,),
         attrs=("T", "dtype", "seed", "seed2"), dtypes=("float16", "float32", "float64"), dtype_attrs=("dtype",))
register("StatelessParameterizedTruncatedNormal", infer=_infer, kernel=_stateless_kernel, const_inputs=(0,),
         attrs=("S", "Tseed", "dtype"), dtypes=("float16", "float32", "float64"), dtype_attrs=("dtype",))
