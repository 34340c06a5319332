"""XlaRngBitGenerator(algorithm, initial_state, shape) -> (output_key, output): XLA's
RngBitGenerator (tf2xla's kernel for the op, ops/xla_ops.cc), a pure function of the state.

`algorithm` is TensorFlow's RNG enum and must be a constant: 1 PHILOX, 2 THREEFRY, 3 AUTO_SELECT
(XLA's RNG_DEFAULT, which its CPU and GPU backends run as Philox). The bits are XLA's
(rng_bits.py, checked against TF): ThreeFry lowers to stablehlo.rng_bit_generator, whose IREE
expansion gives XLA's bits; IREE's Philox does not (its layout differs), so Philox is written
out in StableHLO with philox_hlo's Philox4x32 blocks in XLA's round-robin layout.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import ints
from ..random.philox_hlo import Philox, _columns, hi32, join64, lo32, scalar_at
from ..registry import register
from . import rng_bits

_PHILOX, _THREEFRY = "PHILOX", "THREE_FRY"
_ALGORITHMS = {1: _PHILOX, 2: _THREEFRY, 3: _PHILOX}  # 3: AUTO_SELECT -> RNG_DEFAULT -> Philox
_STATE_WORDS = {_PHILOX: 3, _THREEFRY: 2}


def _plan(ctx):
    """(algorithm name, output shape, output dtype)."""
    alg = ctx.inputs[0].value
    if alg is None:
        raise ctx.error("algorithm must be a compile-time constant")
    alg = int(np.asarray(alg))
    if alg not in _ALGORITHMS:
        raise ctx.error(f"algorithm {alg} is not one of 1 (PHILOX), 2 (THREEFRY), 3 (AUTO_SELECT)")
    name = _ALGORITHMS[alg]
    state = ctx.inputs[1]
    if state.shape is not None and state.shape != (_STATE_WORDS[name],):
        raise ctx.error(f"{name}'s initial_state must be uint64[{_STATE_WORDS[name]}], got {state}")
    shape = ctx.inputs[2].value
    dtype = np.dtype(ctx.attr("dtype", np.uint64))
    if dtype not in (np.dtype(np.uint32), np.dtype(np.uint64)):
        raise ctx.error(f"dtype {dtype}: XLA's kernel generates uint32 or uint64 bits")
    return name, None if shape is None else tuple(ints(shape)), dtype


def _infer(ctx):
    name, shape, dtype = _plan(ctx)
    return [TensorSpec(np.dtype(np.uint64), (_STATE_WORDS[name],)), TensorSpec(dtype, shape)]


def _kernel(ctx, _alg, state, _shape):
    name, shape, dtype = _plan(ctx)
    generate = rng_bits.philox_bits if name == _PHILOX else rng_bits.threefry_bits
    with np.errstate(over="ignore"):
        new_state, bits = generate(np.asarray(state, np.uint64), shape, dtype.itemsize * 8)
    return [new_state, np.asarray(bits, dtype).reshape(shape)]


def _philox_lower(state, shape, dtype):
    key = scalar_at(state, 0)
    gen = Philox(lo32(key), hi32(key), scalar_at(state, 1), scalar_at(state, 2))
    n = int(np.prod(shape, dtype=np.int64))
    wide = dtype.itemsize == 8
    blocks = -(-(2 * n if wide else n) // 4)
    words = gen.blocks(hlo.iota([blocks], np.uint64, 0))
    if wide:
        bits = _columns([join64(words[0], words[1]), join64(words[2], words[3])], n, list(shape))
    else:
        bits = _columns(words, n, list(shape))
    count = hlo.constant(np.uint64(blocks))
    lo = hlo.add(gen.lo, count)
    hi = hlo.add(gen.hi, hlo.convert(hlo.compare("LT", lo, count), np.uint64))
    return hlo.concatenate([hlo.reshape(v, [1]) for v in (key, lo, hi)], 0), bits


def _lower(ctx, _alg, state, _shape):
    name, shape, dtype = _plan(ctx)
    if name == _PHILOX:
        return list(_philox_lower(state, shape, dtype))
    return hlo.rng_bit_generator(state, shape, dtype, _THREEFRY)


register("XlaRngBitGenerator", infer=_infer, lower=_lower, kernel=_kernel, attrs=("dtype", "Tshape"),
         const_inputs=(0, 2), output_args=("output_key", "output"), dtypes=("uint32", "uint64"),
         dtype_attrs=("dtype",))
