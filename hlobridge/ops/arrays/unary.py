"""Unary ops Grappler and tf.cond write: ToBool and _UnaryOpsComposition.

  ToBool                 a scalar: x != 0; any other tensor: whether it has elements (TF's
                         to_bool_op and tf2xla's ToBoolOp; a string scalar: non-empty).
  _UnaryOpsComposition   Grappler's fused chain of unary float ops (op_names, applied in order);
                         each link is the registered op's own rule (elementwise.UNARY), so the
                         fused node gives exactly what the unfused chain gives.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..math.elementwise import UNARY
from ..helpers import same_as_input
from ..registry import register
from ..typesets import ANY

BOOL = np.dtype(np.bool_)

# -- ToBool ----------------------------------------------------------------------------------------------


def _to_bool_kernel(ctx, x):
    x = np.asarray(x)
    if x.ndim:
        return np.array(x.size > 0)
    if x.dtype == object or x.dtype.kind in "SU":
        return np.array(len(x.item()) > 0)
    return np.array(x != 0)


def _to_bool_lower(ctx, x):
    shape = hlo.shape_of(x)
    if shape:
        return hlo.constant(np.array(int(np.prod(shape)) > 0))
    return hlo.compare("NE", x, hlo.scalar_like(0, x))


register("ToBool", infer=lambda ctx: [TensorSpec(BOOL, ())], attrs=("T",), dtypes=ANY,  # (strings: the kernel)
         lower=_to_bool_lower, kernel=_to_bool_kernel)


# -- _UnaryOpsComposition ---------------------------------------------------------------------------------

# TF's list (unary_ops_composition.cc), all in elementwise.UNARY.
COMPOSABLE = ("Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Expm1", "Exp",
              "Floor", "Inv", "Log", "Log1p", "Neg", "Reciprocal", "Rint", "Round", "Rsqrt", "Sigmoid", "Sin",
              "Sinh", "Sqrt", "Square", "Tan", "Tanh", "Elu", "Relu", "Relu6", "Selu")


def _chain(ctx) -> list[tuple]:
    names = [n.decode() if isinstance(n, bytes) else n for n in ctx.attr("op_names")]
    unknown = [n for n in names if n not in COMPOSABLE]
    if unknown:
        raise ctx.error(f"op_names {unknown} are not unary ops TF composes ({', '.join(COMPOSABLE)})")
    return [UNARY[n] for n in names]


def _composition_infer(ctx):
    _chain(ctx)
    return same_as_input(ctx)


def _composition_kernel(ctx, x):
    for _, np_fn, _ in _chain(ctx):
        x = np.asarray(np_fn(x)).astype(ctx.out().dtype)
    return x


def _composition_lower(ctx, x):
    for how, _, _ in _chain(ctx):
        x = hlo.unary(how, x) if isinstance(how, str) else how(x)
    return x


# (float64 stays on the kernel: several links (Tanh, Sin, ...) do not compile for it)
register("_UnaryOpsComposition", infer=_composition_infer, attrs=("T", "op_names"),
         dtypes=("float16", "float32"), lower=_composition_lower, kernel=_composition_kernel)
