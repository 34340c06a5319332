"""Graph plumbing ops: Const, Placeholder, Identity and friends, NoOp."""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...device_checks import check_message
from ...errors import CheckNumericsError, InputError
from ...spec import TensorSpec
from ..helpers import list_facts, same_as_input
from ..registry import register
from ..typesets import FLOAT


def _const_infer(ctx):
    value = ctx.attr("value")
    dtype = ctx.attr("dtype")
    return [TensorSpec(dtype, tuple(value.shape), np.asarray(value, dtype=dtype))]


register("Const", infer=_const_infer, attrs=("value", "dtype"),
         lower=lambda ctx: None,  # always folded: the driver materialises its value where used
         kernel=lambda ctx: ctx.attr("value"))


def _placeholder_infer(ctx):
    return [TensorSpec(ctx.attr("dtype"), ctx.attr("shape", None))]


def _placeholder_lower(ctx):
    raise ctx.lowering_error("placeholder is not an input of the compiled function: feed it or "
                             "list it with --inputs")


def _placeholder_kernel(ctx):
    raise ctx.error("placeholder was not fed", cls=InputError)


register("Placeholder", infer=_placeholder_infer, attrs=("dtype", "shape"),
         lower=_placeholder_lower, kernel=_placeholder_kernel)
register("PlaceholderWithDefault", infer=lambda ctx: [TensorSpec(ctx.attr("dtype"), ctx.inputs[0].shape)],
         attrs=("dtype", "shape"), lower=lambda ctx, x: x, kernel=lambda ctx, x: x)

# Ops that pass their input through unchanged (gradient markers, snapshots, shape checks).
for _op, _attrs in {"Identity": ("T",), "StopGradient": ("T",), "PreventGradient": ("T", "message"),
                    "Snapshot": ("T",), "EnsureShape": ("T", "shape")}.items():
    register(_op, infer=same_as_input, attrs=_attrs, lower=lambda ctx, x: x, kernel=lambda ctx, x: x)


def _identity_n_infer(ctx):
    return [TensorSpec(s.dtype, s.shape, handle=list_facts(s)) for s in ctx.inputs]


register("IdentityN", infer=_identity_n_infer, attrs=("T",),
         lower=lambda ctx, *xs: list(xs), kernel=lambda ctx, *xs: list(xs))
register("NoOp", infer=lambda ctx: [], attrs=(), lower=lambda ctx: [], kernel=lambda ctx: [], dtypes=())


def _numerics_error(ctx, found) -> str:
    return f"node '{ctx.name}' (CheckNumerics): {ctx.attr('message')} : Tensor had {' and '.join(found)} values"


def _check_numerics_kernel(ctx, x):
    """TensorFlow's CheckNumerics: the input passes through unless it holds a NaN or an
    infinity; then the run stops with the op's message, worded as TF words it."""
    x = np.asarray(x)
    found = [what for what, test in (("Inf", np.isinf), ("NaN", np.isnan)) if test(x).any()]
    if found:
        raise CheckNumericsError(_numerics_error(ctx, found))
    return x


def _check_numerics_lower(ctx, x):
    """XLA drops the check; compiled here it stays, as host assertions on two device-side
    reductions (any Inf, any NaN), so a checked graph no longer splits its clusters and still
    stops the run with the kernel's error (device_checks.py); the first failing assertion
    names what was found, as the kernel does."""
    dims = list(range(len(hlo.shape_of(x))))
    any_of = lambda flags: hlo.reduce(flags, hlo.constant(np.array(False)), dims, "or")  # noqa: E731
    inf = any_of(hlo.compare("EQ", hlo.unary("abs", x), hlo.scalar_like(np.inf, x)))
    nan = any_of(hlo.compare("NE", x, x))
    for bad, found in ((hlo.binary("and", inf, nan), ["Inf", "NaN"]), (inf, ["Inf"]), (nan, ["NaN"])):
        hlo.assert_(hlo.unary("not", bad), check_message(CheckNumericsError, _numerics_error(ctx, found)))
    return x


register("CheckNumerics", infer=same_as_input, attrs=("T", "message"), kernel=_check_numerics_kernel,
         lower=_check_numerics_lower, dtypes=FLOAT)


# Plumbing that TensorFlow's own passes write and XLA compiles as nothing at all.
register("_EagerConst", infer=same_as_input, attrs=("T",), lower=lambda ctx, x: x, kernel=lambda ctx, x: x)
register("ControlTrigger", infer=lambda ctx: [], attrs=(), lower=lambda ctx: [], kernel=lambda ctx: [],
         dtypes=())


def _retyped_list_infer(ctx):
    """_ArrayToList / _ListToArray: the same tensors, typed as a list(type) or N x T."""
    return [TensorSpec(s.dtype, s.shape) for s in ctx.inputs]


for _op, _attrs in {"_ArrayToList": ("T", "N", "out_types"), "_ListToArray": ("T", "N", "Tin")}.items():
    register(_op, infer=_retyped_list_infer, attrs=_attrs,
             lower=lambda ctx, *xs: list(xs), kernel=lambda ctx, *xs: list(xs))


def _fake_param_infer(ctx):
    shape = ctx.attr("shape")
    if shape is None or None in shape:
        raise ctx.error(f"FakeParam needs a fully known shape, got {shape}")
    return [TensorSpec(ctx.attr("dtype"), tuple(shape))]


# A stand-in for an If branch's output that the other branch's gradient needs and this branch
# never computes: its value is never read. TF's kernel leaves it uninitialised; zeros are a
# deterministic choice of "any value".
register("FakeParam", infer=_fake_param_infer, attrs=("dtype", "shape"),
         lower=lambda ctx: hlo.splat(0, ctx.out().shape, ctx.out().dtype),
         kernel=lambda ctx: np.zeros(ctx.out().shape, ctx.out().dtype))
