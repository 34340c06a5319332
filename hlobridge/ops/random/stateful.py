"""`tf.random.Generator`'s ops: random numbers from a Philox state held in a resource variable.

A Generator keeps its state in an int64 variable: [counter low 64 bits, counter high 64
bits, key] for Philox (core/kernels/stateful_random_ops.cc, GetPhiloxRandomFromMem). TF 2.x
writes `RngReadAndSkip` (return the state, then advance it by `delta * 256` blocks) followed
by the stateless V2 ops on the state's key and counter; older graphs (and TF1's
tf.random.experimental API) write the Stateful* ops, which draw from the state and advance
it by `num_elements * 256` blocks (the multiplier of FillPhiloxRandom's reservations), and
`RngSkip`. The variable is ordinary state, so these ops compile like the optimizer updates:
the lowering reads the variable, draws with philox_hlo.py and writes the advanced state
back, and the runtime threads the variable between steps.

Only Philox (algorithm 1) is implemented by TF's CPU kernels for the draws; so here.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...errors import InputError
from ...spec import TensorSpec
from . import philox_hlo
from ..helpers import ints, unknown_vector_dims
from .philox import RESERVED_SAMPLES_PER_OUTPUT, PhiloxRandom, draw
from ..registry import register
from .stateless import ALL_INTS, RNG_ALG_PHILOX, check_alg
from ..typesets import FLOAT

STATE_SIZE = 3  # RNG_MAX_COUNTER_SIZE + RNG_KEY_SIZE for Philox
_M64 = (1 << 64) - 1

# op -> (distribution, output dtypes); inputs (resource, algorithm, shape[, minval, maxval]).
STATEFUL_DRAWS = {
    "StatefulUniform": ("uniform", FLOAT),
    "StatefulStandardNormalV2": ("normal", FLOAT),
    "StatefulTruncatedNormal": ("truncated_normal", FLOAT),
    "StatefulUniformInt": ("uniform_int", ALL_INTS),
    "StatefulUniformFullInt": ("uniform_full_int", ALL_INTS),
}


def _check_state(ctx) -> None:
    spec = ctx.inputs[0]
    if spec.dtype != dtypes.RESOURCE or spec.handle is None:
        raise ctx.error(f"input 0 must be a variable handle, got {spec}")
    var_dtype, shape = spec.handle
    if np.dtype(var_dtype) != np.int64:
        raise ctx.error(f"the RNG state variable must be int64, got {dtypes.name(var_dtype)}")
    if shape is not None and (len(shape) != 1 or (shape[0] is not None and shape[0] < STATE_SIZE)):
        raise ctx.error(f"the RNG state must be a vector of at least {STATE_SIZE} elements, got shape {list(shape)}")


def _check_alg(ctx, alg) -> None:
    check_alg(ctx, alg, allowed=(RNG_ALG_PHILOX,))


# -- the state as a generator: NumPy and StableHLO ----------------------------------------------------


def _philox_of(state: np.ndarray) -> PhiloxRandom:
    words = [int(w) & _M64 for w in np.asarray(state).reshape(-1)[:STATE_SIZE]]
    return PhiloxRandom(words[2], words[0] | words[1] << 64)


def _state_of(gen: PhiloxRandom, state: np.ndarray) -> np.ndarray:
    new = np.array(state, dtype=np.int64).reshape(-1)
    new[:STATE_SIZE] = np.array([gen.counter & _M64, gen.counter >> 64, gen.key], np.uint64).view(np.int64)
    return new


def _hlo_philox_of(state) -> philox_hlo.Philox:
    words = hlo.bitcast_convert(hlo.slice(state, [0], [STATE_SIZE]), [STATE_SIZE], np.uint64)
    key = philox_hlo.scalar_at(words, 2)
    return philox_hlo.Philox(philox_hlo.lo32(key), philox_hlo.hi32(key), philox_hlo.scalar_at(words, 0),
                             philox_hlo.scalar_at(words, 1))


def _hlo_state_of(gen: philox_hlo.Philox, state):
    key = philox_hlo.join64(gen.k0, gen.k1)
    words = hlo.concatenate([hlo.reshape(w, [1]) for w in (gen.lo, gen.hi, key)], 0)
    head = hlo.bitcast_convert(words, [STATE_SIZE], np.int64)
    size = hlo.shape_of(state)[0]
    return head if size == STATE_SIZE else hlo.concatenate([head, hlo.slice(state, [STATE_SIZE], [size])], 0)


def _blocks_to_skip(delta: int) -> int:
    """`delta * 256` in uint64, as UpdateMemWithPhiloxRandom computes it."""
    return (int(delta) * RESERVED_SAMPLES_PER_OUTPUT) & _M64


def _hlo_blocks_to_skip(delta, dtype):
    """`delta * 256` as a 0-d ui64 Value (RngSkip's delta is int64, RngReadAndSkip's uint64)."""
    if np.dtype(dtype) != np.uint64:
        delta = hlo.bitcast_convert(hlo.convert(delta, np.int64), [], np.uint64)
    return hlo.multiply(delta, hlo.scalar_like(RESERVED_SAMPLES_PER_OUTPUT, delta))


# -- RngReadAndSkip, RngSkip ---------------------------------------------------------------------------


def _skip_infer(ctx):
    _check_state(ctx)
    return [TensorSpec(np.dtype(np.int64), (STATE_SIZE,))] if ctx.op == "RngReadAndSkip" else []


def _skip_kernel(ctx, resource, alg, delta):
    _check_alg(ctx, alg)
    state = ctx.state.read(0)
    ctx.state.write(0, _state_of(_philox_of(state).skip(_blocks_to_skip(np.asarray(delta).item())), state))
    return [np.asarray(state, np.int64).reshape(-1)[:STATE_SIZE]] if ctx.op == "RngReadAndSkip" else []


def _skip_lower(ctx, resource, alg, delta):
    _check_alg(ctx, ctx.const(1))
    state = ctx.state.read(0).value
    ctx.state.write(0, _hlo_state_of(_hlo_philox_of(state).skip(_hlo_blocks_to_skip(delta, ctx.inputs[2].dtype)), state))
    return [hlo.slice(state, [0], [STATE_SIZE])] if ctx.op == "RngReadAndSkip" else []


for _op in ("RngReadAndSkip", "RngSkip"):
    register(_op, infer=_skip_infer, kernel=_skip_kernel, lower=_skip_lower, attrs=(), const_inputs=(1,),
             stateful=True, dtypes=())


# -- Stateful* draws ------------------------------------------------------------------------------------


def _draw_infer(ctx):
    _check_state(ctx)
    alg = ctx.inputs[1].value
    if alg is not None:
        _check_alg(ctx, alg)
    shape = ctx.inputs[2].value
    dims = unknown_vector_dims(ctx, 2) if shape is None else tuple(ints(shape))
    return [TensorSpec(ctx.attr("dtype"), dims)]


def _draw_kernel(ctx, resource, alg, shape, *bounds):
    _check_alg(ctx, alg)
    state = ctx.state.read(0)
    gen = _philox_of(state)
    lo, hi = (np.asarray(b).item() for b in bounds) if bounds else (None, None)
    try:
        out = draw(STATEFUL_DRAWS[ctx.op][0], gen, ints(shape), ctx.out().dtype, minval=lo, maxval=hi)
    except ValueError as e:
        raise ctx.error(str(e), InputError) from None
    ctx.state.write(0, _state_of(gen.skip(_blocks_to_skip(out.size)), state))
    return out


def _draw_lower(ctx, resource, alg, shape, *bounds):
    _check_alg(ctx, ctx.const(1))
    dims = ints(ctx.const(2))
    n = int(np.prod(dims, dtype=np.int64))
    state = ctx.state.read(0).value
    gen = _hlo_philox_of(state)
    distribution = STATEFUL_DRAWS[ctx.op][0]
    if distribution == "uniform_int":
        hlo.assert_(hlo.compare("LT", *bounds), f"node '{ctx.name}' ({ctx.op}): Need minval < maxval")
        out = philox_hlo.uniform_int(gen, n, dims, ctx.out().dtype, *bounds) if n else None
    else:
        out = philox_hlo.LOWERINGS[distribution](gen, n, dims, ctx.out().dtype) if n else None
    if out is None:
        out = hlo.constant(np.zeros(dims, ctx.out().dtype), ctx.out().dtype)
    ctx.state.write(0, _hlo_state_of(gen.skip(hlo.constant(np.uint64(_blocks_to_skip(n)))), state))
    return out


for _op, (_, _types) in STATEFUL_DRAWS.items():
    register(_op, infer=_draw_infer, kernel=_draw_kernel, lower=_draw_lower, attrs=("dtype", "shape_dtype"),
             const_inputs=(1, 2), stateful=True, dtypes=_types, dtype_attrs=("dtype",))
