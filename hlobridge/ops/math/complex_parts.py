"""Complex numbers' own ops: Complex, Real, Imag, Conj, ComplexAbs, Angle, ConjugateTranspose.

TensorFlow's pairs: complex64 <-> float32 and complex128 <-> float64 (attributes T and Tout;
graphs written before Tout existed omit it, so the part type is derived from T). Complex
broadcasts its two operands as any binary op does (cwise_op_complex.cc registers a
BinaryOp). StableHLO has complex, real, imag and abs on complex tensors, but no conjugate:
Conj is complex(real(x), -imag(x)). Angle is atan2(imag, real), which compiles only where
float atan2 does (not float64: see typesets.FLOAT_NO_F64). ConjugateTranspose is Transpose
followed by Conj (the identity on real types, as in TF).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from .elementwise import BINARY
from ..helpers import broadcast_shapes, same_as_input
from ..registry import lookup, register
from ..typesets import COMPLEX

PART_OF = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
COMPLEX_OF = {part: whole for whole, part in PART_OF.items()}
PART_TYPES = ("float32", "float64")


def part_dtype(ctx):
    """The float type of a complex input's parts: Tout when the node has it, else T's."""
    x = np.dtype(ctx.inputs[0].dtype)
    if x not in PART_OF:
        raise ctx.error(f"expects a complex input, got {x.name}")
    return np.dtype(ctx.attr("Tout", PART_OF[x]))


def _part_infer(ctx):
    return [TensorSpec(part_dtype(ctx), ctx.inputs[0].shape)]


def _complex_infer(ctx):
    re, im = ctx.inputs
    if re.dtype != im.dtype or np.dtype(re.dtype) not in COMPLEX_OF:
        raise ctx.error(f"expects two float32 or two float64 operands, got {re.dtype} and {im.dtype}")
    return [TensorSpec(np.dtype(ctx.attr("Tout", COMPLEX_OF[np.dtype(re.dtype)])),
                       broadcast_shapes(ctx, re.shape, im.shape))]


def _complex_lower(ctx, re, im):
    shape = ctx.out().shape
    return hlo.complex_(hlo.broadcast_to(re, shape), hlo.broadcast_to(im, shape))


def _angle_lower(x):
    atan2 = BINARY["Atan2"][0]  # Atan2's lowering, with its fixes for signed zeros and infinities
    return atan2(hlo.imag(x), hlo.real(x))


def _complex_kernel(ctx, re, im):
    """Parts set, not re + 1j * im (which makes inf * 1j NaN + inf j)."""
    out = np.empty(np.broadcast_shapes(re.shape, im.shape), ctx.out().dtype)
    out.real, out.imag = re, im
    return out


def _abs_lower(x):
    """|x| as C's hypot (TF's std::abs): stablehlo.abs of a complex is sqrt(re^2 + im^2) in IREE
    3.13, which overflows to inf from |x| ~ 1e19 and underflows to 0 below ~ 1e-19 (float32).
    hypot(+-inf, NaN) is inf."""
    a, b = hlo.unary("abs", hlo.real(x)), hlo.unary("abs", hlo.imag(x))
    big, small = hlo.maximum(a, b), hlo.minimum(a, b)
    ratio = hlo.divide(small, big)
    r = hlo.multiply(big, hlo.unary("sqrt", hlo.add(hlo.scalar_like(1, ratio), hlo.multiply(ratio, ratio))))
    r = hlo.select(hlo.compare("EQ", big, hlo.scalar_like(0, big)), big, r)
    inf = hlo.scalar_like(np.inf, big)
    return hlo.select(hlo.binary("or", hlo.compare("EQ", a, inf), hlo.compare("EQ", b, inf)), inf, r)


# op -> (lowering of the complex Value, NumPy kernel, dtypes it compiles for)
PARTS = {
    "Real": (hlo.real, np.real, COMPLEX + PART_TYPES),
    "Imag": (hlo.imag, np.imag, COMPLEX + PART_TYPES),
    "ComplexAbs": (_abs_lower, np.abs, COMPLEX + PART_TYPES),
    "Angle": (_angle_lower, np.angle, ("complex64", "float32")),
}
for _op, (_lower, _np_fn, _types) in PARTS.items():
    register(_op, infer=_part_infer, attrs=("T", "Tout"), dtypes=_types,
             lower=lambda ctx, x, f=_lower: f(x),
             kernel=lambda ctx, x, f=_np_fn: np.asarray(f(x)).astype(ctx.out().dtype))

register("Complex", infer=_complex_infer, attrs=("T", "Tout"), dtypes=PART_TYPES + COMPLEX, lower=_complex_lower,
         kernel=_complex_kernel)
register("Conj", infer=same_as_input, attrs=("T",), dtypes=COMPLEX,
         lower=lambda ctx, x: hlo.conj(x), kernel=lambda ctx, x: np.conj(x))


def _conjugate_transpose_lower(ctx, x, perm):
    return hlo.conj(lookup("Transpose").lower(ctx, x, perm))


def _conjugate_transpose_kernel(ctx, x, perm):
    return np.conj(lookup("Transpose").kernel(ctx, x, perm))  # (np.conj keeps a real dtype)


register("ConjugateTranspose", infer=lambda ctx: lookup("Transpose").infer(ctx), attrs=("T", "Tperm"),
         const_inputs=(1,), lower=_conjugate_transpose_lower, kernel=_conjugate_transpose_kernel)
