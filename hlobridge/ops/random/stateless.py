"""The stateless random ops: `tf.random.stateless_*`, Keras 3's seeded layers and initializers.

Each is a pure function of its shape and seed (v1: a seed pair, scrambled by GenerateKey) or
of an explicit Philox key and counter (v2, with StatelessRandomGetKeyCounter[Alg] turning a
seed pair into them). So they fold when their seeds are constants and compile otherwise:
the kernel is philox.py's NumPy stream and the lowering philox_hlo.py's StableHLO one, both
giving TensorFlow's CPU numbers (uniform and integer bit-exact; normals within glibc's
1-ulp cases). XLA compiles these ops with another bit generator (see philox_hlo.py); we
follow TensorFlow's CPU kernels, whose numbers the graph's authors saw.

Algorithms (the v2 ops' `alg` input, tf.random.Algorithm): 1 Philox; 3 auto-select, which
TF's CPU kernels resolve to Philox; 2 ThreeFry, which TF's CPU kernels refuse ("Unsupported
algorithm id: 2"), and so do we.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...errors import InputError
from ...spec import TensorSpec
from . import philox_hlo
from ..helpers import ints, unknown_vector_dims
from .philox import PhiloxRandom, draw
from ..registry import register
from ..typesets import FLOAT

RNG_ALG_PHILOX, RNG_ALG_THREEFRY, RNG_ALG_AUTO_SELECT = 1, 2, 3
INTS = ("int32", "int64")
ALL_INTS = INTS + ("uint32", "uint64")

# op -> (distribution, output dtypes); v1 ops take (shape, seed), v2 (shape, key, counter, alg),
# and the uniform_int ones (minval, maxval) after those.
STATELESS_V1 = {
    "StatelessRandomUniform": ("uniform", FLOAT),
    "StatelessRandomNormal": ("normal", FLOAT),
    "StatelessTruncatedNormal": ("truncated_normal", FLOAT),
    "StatelessRandomUniformInt": ("uniform_int", INTS),
    "StatelessRandomUniformFullInt": ("uniform_full_int", ALL_INTS),
}
STATELESS_V2 = {
    "StatelessRandomUniformV2": ("uniform", FLOAT),
    "StatelessRandomNormalV2": ("normal", FLOAT),
    "StatelessTruncatedNormalV2": ("truncated_normal", FLOAT),
    "StatelessRandomUniformIntV2": ("uniform_int", ALL_INTS),
    "StatelessRandomUniformFullIntV2": ("uniform_full_int", ALL_INTS),
}


def _is_v2(op: str) -> bool:
    return op in STATELESS_V2


def _distribution(op: str) -> str:
    return (STATELESS_V2.get(op) or STATELESS_V1[op])[0]


def check_vector(ctx, i: int, what: str, size: int) -> None:
    """Raise unless input i (when its shape is known) is a vector of `size` elements."""
    shape = ctx.inputs[i].shape
    if shape is not None and (len(shape) != 1 or shape[0] not in (None, size)):
        raise ctx.error(f"{what} must have shape [{size}], not {list(shape)}")


def check_alg(ctx, alg, allowed=(RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT)) -> None:
    """Only Philox (and, where allowed, auto-select, which is Philox on CPU): TF's CPU kernels
    refuse ThreeFry ("Unsupported algorithm id: 2", or for a Generator "Non-XLA devices don't
    support the ThreeFry algorithm")."""
    alg = int(np.asarray(alg))
    if alg not in allowed:
        raise ctx.error(f"Unsupported algorithm id: {alg} (TensorFlow's CPU kernels, which hlobridge follows, "
                        f"take {' and '.join(map(str, allowed))} only: {RNG_ALG_PHILOX} is Philox, "
                        f"{RNG_ALG_AUTO_SELECT} auto-select)")


def _bounds_at(op: str) -> int:
    return 4 if _is_v2(op) else 2


def _infer(ctx):
    if _is_v2(ctx.op):
        check_vector(ctx, 1, "key", 1)
        check_vector(ctx, 2, "counter", 2)
        alg = ctx.inputs[3].value
        if alg is not None:
            check_alg(ctx, alg)
    else:
        check_vector(ctx, 1, "seed", 2)
    if _distribution(ctx.op) == "uniform_int":
        for i in (_bounds_at(ctx.op), _bounds_at(ctx.op) + 1):
            if ctx.inputs[i].shape not in (None, ()):
                raise ctx.error(f"minval and maxval must be scalars, input {i} has shape {list(ctx.inputs[i].shape)}")
    shape = ctx.inputs[0].value
    dims = unknown_vector_dims(ctx, 0) if shape is None else tuple(ints(shape))
    if dims is not None and any(d is not None and d < 0 for d in dims):
        raise ctx.error(f"shape must be non-negative, got {list(dims)}")
    return [TensorSpec(ctx.attr("dtype"), dims)]


def _kernel(ctx, shape, *args):
    if _is_v2(ctx.op):
        key, counter, alg = args[:3]
        check_alg(ctx, alg)
        gen = PhiloxRandom.from_key_counter(key, counter)
    else:
        seed = np.asarray(args[0]).reshape(-1)
        gen = PhiloxRandom.from_seed_pair(int(seed[0]), int(seed[1]))
    bounds = [np.asarray(b).item() for b in args[_bounds_at(ctx.op) - 1:]]
    try:
        return draw(_distribution(ctx.op), gen, ints(shape), ctx.out().dtype, minval=bounds[0] if bounds else None,
                    maxval=bounds[1] if bounds else None)
    except ValueError as e:
        raise ctx.error(str(e), InputError) from None


def _lower(ctx, shape, *args):
    out = ctx.out()
    dims = ints(ctx.const(0))
    if _is_v2(ctx.op):
        check_alg(ctx, ctx.const(3))
        gen = philox_hlo.Philox.from_key_counter(args[0], args[1])
    else:
        gen = philox_hlo.Philox.from_seed_pair(args[0])
    n = int(np.prod(dims, dtype=np.int64))
    distribution = _distribution(ctx.op)
    if distribution != "uniform_int":
        return philox_hlo.LOWERINGS[distribution](gen, n, dims, out.dtype)
    minval, maxval = args[_bounds_at(ctx.op) - 1:]
    hlo.assert_(hlo.compare("LT", minval, maxval), f"node '{ctx.name}' ({ctx.op}): Need minval < maxval")
    return philox_hlo.uniform_int(gen, n, dims, out.dtype, minval, maxval)


for _op, (_, _types) in {**STATELESS_V1, **STATELESS_V2}.items():
    register(_op, infer=_infer, kernel=_kernel, lower=_lower,
             attrs=("dtype", "Tshape") if _is_v2(_op) else ("dtype", "T", "Tseed"),
             const_inputs=(0, 3) if _is_v2(_op) else (0,), dtypes=_types, dtype_attrs=("dtype",))


# -- seeds to keys and counters -----------------------------------------------------------------------

KEY_COUNTER_OPS = {"StatelessRandomGetKeyCounter": 2, "StatelessRandomGetKeyCounterAlg": 3}


def _key_counter_infer(ctx):
    check_vector(ctx, 0, "seed", 2)
    specs = [TensorSpec(np.dtype(np.uint64), (1,)), TensorSpec(np.dtype(np.uint64), (2,))]
    return specs + [_alg_spec()][:KEY_COUNTER_OPS[ctx.op] - 2]


def _alg_spec():
    """The algorithm TF's CPU device picks: Philox, a constant."""
    return TensorSpec(np.dtype(np.int32), (), np.asarray(RNG_ALG_PHILOX, np.int32))


def _key_counter_kernel(ctx, seed):
    seed = np.asarray(seed).reshape(-1)
    key, counter = PhiloxRandom.from_seed_pair(int(seed[0]), int(seed[1])).key_counter()
    return [key, counter, np.asarray(RNG_ALG_PHILOX, np.int32)][:KEY_COUNTER_OPS[ctx.op]]


def _key_counter_lower(ctx, seed):
    key, counter = philox_hlo.Philox.from_seed_pair(seed).key_counter()
    return [key, counter, hlo.constant(np.int32(RNG_ALG_PHILOX))][:KEY_COUNTER_OPS[ctx.op]]


for _op, _n in KEY_COUNTER_OPS.items():
    register(_op, infer=_key_counter_infer, kernel=_key_counter_kernel, lower=_key_counter_lower,
             attrs=("Tseed",), dtypes=INTS, dtype_attrs=("Tseed",), output_args=("key", "counter", "alg")[:_n])
register("StatelessRandomGetAlg", infer=lambda ctx: [_alg_spec()], attrs=(), dtypes=(),
         kernel=lambda ctx: np.asarray(RNG_ALG_PHILOX, np.int32),
         lower=lambda ctx: hlo.constant(np.int32(RNG_ALG_PHILOX)))
