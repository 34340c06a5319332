"""Indexed reads and writes of resource variables: ResourceGather, ResourceScatterAdd/Sub/Mul/
Div/Min/Max/Update (embedding lookups and sparse optimizer updates), ResourceScatterNdAdd/Sub/
Update (TensorScatterAdd/Sub/Update on the variable's value, written back).

ResourceGather is GatherV2 on the variable's value (axis = batch_dims). A ResourceScatter op
combines updates [indices.shape + var.shape[1:]] (or a scalar) into rows `indices` of the
variable, in place; duplicate indices all apply (ResourceScatterUpdate keeps one of them).
An index outside the variable is TensorFlow's error on the reference kernel; compiled, the
scatter is bounds-checked (see scatter.py) and it is dropped.

Both run as stateful ops: `ctx.state` reads and writes the variable, as NumPy arrays in the
kernel and as StableHLO values (`Traced`) in the lowering.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...errors import InputError
from ...spec import TensorSpec
from ..registry import register
from ..shapes.gather_scatter import _check_updates, _np_scatter, scatter_in_bounds, take
from ..typesets import ANY, NUMBER


def _variable(ctx):
    spec = ctx.inputs[0]
    if spec.handle is None:
        raise ctx.error(f"input 0 must be a variable handle, got {spec}")
    return spec.handle  # (dtype, shape)


def _batch_dims(ctx) -> int:
    return int(ctx.attr("batch_dims", 0))


def _gather_infer(ctx):
    _, shape = _variable(ctx)
    indices, b = ctx.inputs[1], _batch_dims(ctx)
    if shape is None or indices.shape is None:
        return [TensorSpec(ctx.attr("dtype"), None)]
    return [TensorSpec(ctx.attr("dtype"), tuple(shape[:b]) + tuple(indices.shape[b:]) + tuple(shape[b + 1:]))]


def _check_rows(ctx, indices, rows: int):
    bad = indices[(indices < 0) | (indices >= rows)]
    if bad.size:
        raise ctx.error(f"indices contain {int(bad.flat[0])}, outside [0, {rows})", cls=InputError)


def _gather_kernel(ctx, _handle, indices):
    var, b = ctx.state.read(0), _batch_dims(ctx)
    _check_rows(ctx, indices, var.shape[b])
    lead = var.shape[:b]
    rows = [np.take(var[i], indices[i], axis=0) for i in np.ndindex(*lead)]
    return (np.stack(rows).reshape(lead + rows[0].shape) if lead else rows[0]).astype(ctx.out().dtype)


def _gather_lower(ctx, _handle, indices):
    b = _batch_dims(ctx)
    return take(ctx.state.read(0).value, indices, b, b, ctx.out().shape)


register("ResourceGather", infer=_gather_infer, kernel=_gather_kernel, lower=_gather_lower, stateful=True,
         attrs=("dtype", "Tindices", "batch_dims", "validate_indices"), dtypes=ANY)

def _divide(a, b):
    """C++ `/`: true division for floats, truncation toward zero for integers."""
    if np.issubdtype(a.dtype, np.integer):
        return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)
    return a / b


# op -> (StableHLO combiner or None to replace, NumPy combine(old, new) or None, dtypes)
SCATTERS = {
    "ResourceScatterAdd": ("add", np.add, NUMBER),
    "ResourceScatterSub": ("subtract", np.subtract, NUMBER),
    "ResourceScatterMul": ("multiply", np.multiply, NUMBER),
    "ResourceScatterDiv": ("divide", _divide, NUMBER),
    "ResourceScatterMin": ("minimum", np.minimum, NUMBER),
    "ResourceScatterMax": ("maximum", np.maximum, NUMBER),
    "ResourceScatterUpdate": (None, None, ANY),
}


def _scatter_kernel(ctx, _handle, indices, updates, *, combine):
    var = ctx.state.read(0).copy()
    _check_rows(ctx, indices, var.shape[0])
    updates = np.broadcast_to(updates, indices.shape + var.shape[1:])
    flat = indices.reshape(-1)
    rows = updates.reshape((flat.size,) + var.shape[1:])
    for i, row in zip(flat, rows):  # in order: duplicate indices all apply
        var[i] = row if combine is None else combine(var[i], row)
    ctx.state.write(0, var)
    return []


def _scatter_lower(ctx, _handle, indices, updates, *, combiner):
    var = ctx.state.read(0)
    ishape = hlo.shape_of(indices)
    full = ishape + list(var.shape[1:])
    if hlo.shape_of(updates) != full:
        updates = hlo.broadcast_in_dim(updates, full, [])
    ctx.state.write(0, scatter_in_bounds(var.value, hlo.reshape(indices, ishape + [1]), updates, dtype=var.dtype,
                                         index_dtype=ctx.inputs[1].dtype, combiner=combiner))
    return []


for _op, (_comb, _combine, _types) in SCATTERS.items():
    register(_op, infer=lambda ctx: [], stateful=True, attrs=("dtype", "Tindices"), dtypes=_types,
             kernel=lambda ctx, h, i, u, f=_combine: _scatter_kernel(ctx, h, i, u, combine=f),
             lower=lambda ctx, h, i, u, c=_comb: _scatter_lower(ctx, h, i, u, combiner=c))


# -- ResourceScatterNdAdd/Sub/Update ---------------------------------------------------------------
# op -> (StableHLO combiner or None to replace, NumPy ufunc or None to replace, dtypes)
SCATTERS_ND = {
    "ResourceScatterNdAdd": ("add", np.add, NUMBER),
    "ResourceScatterNdSub": ("subtract", np.subtract, NUMBER),
    "ResourceScatterNdUpdate": (None, None, ANY),
}


def _scatter_nd_infer(ctx):
    _check_updates(ctx, _variable(ctx)[1], *ctx.inputs[1:])
    return []


def _scatter_nd_kernel(ctx, _handle, indices, updates, *, ufunc):
    ctx.state.write(0, _np_scatter(ctx, ctx.state.read(0).copy(), indices, updates, ufunc))
    return []


def _scatter_nd_lower(ctx, _handle, indices, updates, *, combiner):
    var = ctx.state.read(0)
    ctx.state.write(0, scatter_in_bounds(var.value, indices, updates, dtype=var.dtype,
                                         index_dtype=ctx.inputs[1].dtype, combiner=combiner))
    return []


for _op, (_comb, _ufunc, _types) in SCATTERS_ND.items():
    register(_op, infer=_scatter_nd_infer, stateful=True, attrs=("T", "Tindices", "use_locking", "bad_indices_policy"),
             dtypes=_types,
             kernel=lambda ctx, h, i, u, f=_ufunc: _scatter_nd_kernel(ctx, h, i, u, ufunc=f),
             lower=lambda ctx, h, i, u, c=_comb: _scatter_nd_lower(ctx, h, i, u, combiner=c))
