"""Constant folding of the StableHLO ops that upstream leaves: computed in NumPy, written back
as `stablehlo.constant`.

What is left to fold was measured (tools/constant_census.py) on every corpus graph's lowered
clusters after `canonicalize` and IREE's `iree-stablehlo-canonicalize`: shape inference
already folds TF's constant subgraphs, and IREE's pass folds add/multiply/reshape of
constants and broadcasts of splats. What remained: `rsqrt` of batch-norm variances
(cnn_infer_bn), a scalar `compare` (control_flow_v1), and broadcasts of non-splat vectors.
The precision pass adds `convert`s of every f32 constant. So this pass folds:

    elementwise ops (arithmetic, compare, select, clamp, bitwise, convert, math functions)
    reshape, transpose, slice, concatenate (at any size: they only move bytes)
    broadcast_in_dim of a splat only

Broadcasts of non-splat constants stay, as XLA's HloConstantFolding leaves them: they
multiply a constant's size and IREE fuses them into their consumers for free. Computed
results over MAX_ELEMENTS stay too (IREE const-evaluates bigger constant expressions at
compile time).

Numerics: exact ops are computed in their own dtype, which is what IEEE arithmetic gives
at run time. Math functions (exp, log, tanh, rsqrt, ...) are computed in float64 and rounded
once, within an ulp of any runtime's result, as XLA's evaluator does. Where StableHLO's
semantics and NumPy's could differ (integer division by zero, float->int conversion of NaN
or out-of-range values, max/min of zeros with different signs) the op is left alone.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import (constant_array, element_type_name, erase_dead_ops, i64_list, numpy_dtype,
                         ops_named, producer_named, replace, shape)

MAX_ELEMENTS = 1 << 16  # largest non-splat result (and operand) computed
# Layout ops only move bytes (NumPy does it at memory speed), so they fold at any size a
# constant may have. IREE's own folder of a reshaped 2.4M-element weight walks it element
# by element: on Keras ResNet50 that was 55 of a cold start's 80 s.
LAYOUT_OPS = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.slice", "stablehlo.concatenate")
MAX_LAYOUT_ELEMENTS = 1 << 31


def _out_dtype(op) -> np.dtype | None:
    et = element_type_name(op.results[0])
    return np.dtype(ml_dtypes.bfloat16) if et == "bf16" else numpy_dtype(et)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16


# -- folders: (op, operand arrays, result dtype) -> array or None (leave the op alone) -------

def _exact(fn):
    return lambda op, args, dtype: fn(*args)


def _via_float64(fn):
    """A math function: computed in float64, rounded once to the result type."""
    def fold(op, args, dtype):
        if not all(_is_float(a) for a in args):
            return None
        return fn(*(a.astype(np.float64) for a in args)).astype(dtype)
    return fold


def _no_signed_zero_ties(fn):
    """max/min/clamp: NumPy and IREE may pick different zeros for max(-0.0, +0.0)."""
    def fold(op, args, dtype):
        if any(_is_float(a) and bool((a == 0).any()) for a in args):
            return None
        return fn(*args)
    return fold


def _divide(op, args, dtype):
    a, b = args
    if _is_float(a):
        return a / b
    if a.dtype == np.bool_ or (b == 0).any():
        return None
    if a.dtype.kind == "i" and ((a == np.iinfo(a.dtype).min) & (b == -1)).any():
        return None
    q = np.abs(a) // np.abs(b)  # StableHLO rounds toward zero; NumPy's // rounds down
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _remainder(op, args, dtype):
    a, b = args
    if a.dtype == np.bool_ or (not _is_float(a) and (b == 0).any()):
        return None
    return np.fmod(a, b)  # the sign of the dividend, as StableHLO's remainder


def _compare(op, args, dtype):
    compare_type = str(op.attributes["compare_type"]) if "compare_type" in op.attributes else ""
    if "TOTALORDER" in compare_type:
        return None
    direction = str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")
    fn = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
          "GT": np.greater, "GE": np.greater_equal}[direction]
    return fn(*args)


def _convert(op, args, dtype):
    (a,) = args
    if _is_float(a) and dtype.kind in "iub":
        if not np.isfinite(a.astype(np.float64)).all():
            return None
        if dtype.kind != "b":
            t = np.trunc(a.astype(np.float64))
            info = np.iinfo(dtype)
            if (t < info.min).any() or (t > info.max).any():
                return None
            return t.astype(dtype)
    return a.astype(dtype)


def _reshape(op, args, dtype):
    (a,) = args
    return a if a.ndim == 0 else a.reshape(shape(op.results[0]))


def _transpose(op, args, dtype):
    (a,) = args
    return a if a.ndim == 0 else a.transpose(i64_list(op.attributes["permutation"]))


def _slice(op, args, dtype):
    (a,) = args
    if a.ndim == 0:
        return a
    start, limit, strides = (i64_list(op.attributes[k]) for k in ("start_indices", "limit_indices", "strides"))
    return a[tuple(slice(s, e, st) for s, e, st in zip(start, limit, strides))]


def _concatenate(op, args, dtype):
    dim = ir.IntegerAttr(op.attributes["dimension"]).value
    if all(a.ndim == 0 for a in args) and len({a.tobytes() for a in args}) == 1:
        return args[0]  # the same splat throughout
    full = [np.broadcast_to(a, shape(v)) for a, v in zip(args, op.operands)]
    return np.concatenate(full, axis=dim)


def _broadcast_in_dim(op, args, dtype):
    (a,) = args
    return a if a.ndim == 0 else None  # a splat stays a splat; anything else would grow


def _select(op, args, dtype):
    pred, on_true, on_false = args
    return np.where(pred, on_true, on_false)


def _clamp(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)


_MATH = {"exponential": np.exp, "log": np.log, "tanh": np.tanh, "sqrt": np.sqrt,
         "rsqrt": lambda x: 1.0 / np.sqrt(x), "logistic": lambda x: 1.0 / (1.0 + np.exp(-x)),
         "sine": np.sin, "cosine": np.cos, "exponential_minus_one": np.expm1,
         "log_plus_one": np.log1p, "atan2": np.arctan2, "power": np.power}
_EXACT = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "negate": np.negative,
          "abs": np.abs, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
          "not": np.invert, "floor": np.floor, "ceil": np.ceil, "round_nearest_even": np.rint,
          "is_finite": np.isfinite}

FOLDERS = {
    **{f"stablehlo.{n}": _exact(fn) for n, fn in _EXACT.items()},
    **{f"stablehlo.{n}": _via_float64(fn) for n, fn in _MATH.items()},
    "stablehlo.maximum": _no_signed_zero_ties(np.maximum),
    "stablehlo.minimum": _no_signed_zero_ties(np.minimum),
    "stablehlo.clamp": _no_signed_zero_ties(_clamp),
    "stablehlo.divide": _divide, "stablehlo.remainder": _remainder,
    "stablehlo.compare": _compare, "stablehlo.select": _select, "stablehlo.convert": _convert,
    "stablehlo.reshape": _reshape, "stablehlo.transpose": _transpose, "stablehlo.slice": _slice,
    "stablehlo.concatenate": _concatenate, "stablehlo.broadcast_in_dim": _broadcast_in_dim,
}


def _fold(op) -> np.ndarray | None:
    if not all(producer_named(v, "stablehlo.constant") for v in op.operands):
        return None
    limit = MAX_LAYOUT_ELEMENTS if op.name in LAYOUT_OPS else MAX_ELEMENTS
    args = [constant_array(v, limit) for v in op.operands]
    dtype = _out_dtype(op)
    if dtype is None or any(a is None for a in args):
        return None
    try:
        with np.errstate(all="ignore"):  # integer wrap-around and inf/NaN are the semantics
            value = FOLDERS[op.name](op, args, dtype)
    except (TypeError, ValueError):  # e.g. NumPy has no subtract for bool: leave it to IREE
        return None
    if value is None:
        return None
    value = np.asarray(value)
    if value.ndim and value.size > limit:
        return None
    return value.astype(dtype) if value.dtype != dtype else value


def constant_fold(module: ir.Module) -> int:
    """Fold every foldable op whose operands are all constants; returns how many. Chains fold
    in one sweep: each folded op's constant is what the next op reads."""
    folded = 0
    for op in ops_named(module, FOLDERS):
        value = _fold(op)
        if value is None:
            continue
        result_type = op.results[0].type
        with ir.InsertionPoint(op), op.location:
            if value.ndim == 0:
                new = hlo.splat(value.item(), shape(op.results[0]), value.dtype)
            else:
                new = hlo.constant(value.reshape(shape(op.results[0])), value.dtype)
        if new.type != result_type:  # a type NumPy cannot spell exactly: keep the op
            new.owner.operation.erase()
            continue
        replace(op, new)
        folded += 1
    erase_dead_ops(module)
    return folded
