"""UnsortedSegmentSum/Prod/Max/Min: combine rows of `data` by segment id.

output[i] = combine of data[j...] over every j with segment_ids[j] == i; output's shape is
[num_segments] + data.shape[segment_ids.rank:]. As TensorFlow: a negative id drops its row,
an id >= num_segments is an error (on the reference kernel; compiled, stablehlo.scatter
drops it, see scatter.py), and an empty segment holds the combiner's identity: 0, 1, and for Max/Min the
type's lowest/highest finite value (numeric_limits::lowest(), not -inf).

Lowered as one (bounds-checked) stablehlo.scatter into a tensor of that identity.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .. import dtypes
from ..errors import InputError
from ..spec import TensorSpec
from .helpers import ints, value_of
from .registry import register
from .shapes.gather_scatter import scatter_in_bounds
from .typesets import NUMBER


def _finite_limit(dtype, high: bool):
    dtype = np.dtype(dtype)
    info = ml_dtypes.finfo(dtype) if dtypes.is_floating(dtype) else np.iinfo(dtype)
    return info.max if high else info.min


# op -> (StableHLO combiner, NumPy ufunc, identity(dtype))
SEGMENT_OPS = {
    "UnsortedSegmentSum": ("add", np.add, lambda dt: 0),
    "UnsortedSegmentProd": ("multiply", np.multiply, lambda dt: 1),
    "UnsortedSegmentMax": ("maximum", np.maximum, lambda dt: _finite_limit(dt, high=False)),
    "UnsortedSegmentMin": ("minimum", np.minimum, lambda dt: _finite_limit(dt, high=True)),
}


def _segment_infer(ctx):
    data, ids = ctx.inputs[:2]
    n = value_of(ctx, 2)
    n = None if n is None else ints(n)[0]
    if data.shape is None or ids.shape is None:
        return [TensorSpec(data.dtype, None)]
    if ids.shape != data.shape[:len(ids.shape)]:
        raise ctx.error(f"segment_ids {ids} must be a prefix of data's shape {data}")
    return [TensorSpec(data.dtype, (n,) + tuple(data.shape[len(ids.shape):]))]


def _segment_lower(ctx, data, ids, _n, *, combiner, identity):
    out = ctx.out()
    ids_shape = hlo.shape_of(ids)
    init = hlo.constant(np.full(out.shape, identity(out.dtype), out.dtype))
    return scatter_in_bounds(init, hlo.reshape(ids, ids_shape + [1]), data, dtype=out.dtype,
                             index_dtype=ctx.inputs[1].dtype, combiner=combiner)


def _segment_kernel(ctx, data, ids, n, *, ufunc, identity):
    n = ints(n)[0]
    out = np.full((n,) + data.shape[ids.ndim:], identity(data.dtype), data.dtype)
    flat_ids = ids.reshape(-1)
    rows = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
    bad = flat_ids[flat_ids >= n]
    if bad.size:
        raise ctx.error(f"segment_ids[...] = {int(bad[0])} is out of range [0, {n})", cls=InputError)
    keep = flat_ids >= 0
    ufunc.at(out, flat_ids[keep], rows[keep])
    return out


for _op, (_comb, _ufunc, _ident) in SEGMENT_OPS.items():
    register(_op, infer=_segment_infer, attrs=("T", "Tindices", "Tnumsegments"), const_inputs=(2,), dtypes=NUMBER,
             lower=lambda ctx, d, i, n, c=_comb, e=_ident: _segment_lower(ctx, d, i, n, combiner=c, identity=e),
             kernel=lambda ctx, d, i, n, f=_ufunc, e=_ident: _segment_kernel(ctx, d, i, n, ufunc=f, identity=e))
