"""UnsortedSegmentSum/Prod/Max/Min and SegmentSum/Prod/Max/MinV2: combine rows of `data` by segment id.

output[i] = combine of data[j...] over every j with segment_ids[j] == i; output's shape is
[num_segments] + data.shape[segment_ids.rank:]. As TensorFlow: a negative id drops its row,
an id >= num_segments is an error (on the reference kernel; compiled, stablehlo.scatter
drops it, see scatter.py), and an empty segment holds the combiner's identity: 0, 1, and for Max/Min the
type's lowest/highest finite value (numeric_limits::lowest(), not -inf).

Lowered as one (bounds-checked) stablehlo.scatter into a tensor of that identity.

The V2 forms of the sorted Segment* ops take num_segments too, so their output shape is static
and XLA compiles them as the unsorted ones (tf2xla segment_reduction_ops.cc); they differ in
what the reference kernel checks: segment_ids is a vector over data's first dimension,
sorted, and every id is in [0, num_segments) (TF's SegmentReductionOp errors). Empty segments
hold the same identities (V2's documented lowest() for Max, unlike V1's 0).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ... import dtypes
from ...errors import InputError
from ...spec import TensorSpec
from ..helpers import ints, value_of
from ..registry import register
from ..shapes.gather_scatter import scatter_in_bounds
from ..typesets import NUMBER


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


def _register_segment(op, infer, kernel, combiner, ufunc, identity):
    register(op, infer=infer, attrs=("T", "Tindices", "Tnumsegments"), const_inputs=(2,), dtypes=NUMBER,
             lower=lambda ctx, d, i, n: _segment_lower(ctx, d, i, n, combiner=combiner, identity=identity),
             kernel=lambda ctx, d, i, n: kernel(ctx, d, i, n, ufunc=ufunc, identity=identity))


for _op, _row in SEGMENT_OPS.items():
    _register_segment(_op, _segment_infer, _segment_kernel, *_row)


def _sorted_segment_infer(ctx):
    ids = ctx.inputs[1]
    if ids.shape is not None and len(ids.shape) != 1:
        raise ctx.error(f"segment_ids should be a vector, got {ids}")
    return _segment_infer(ctx)


def _sorted_segment_kernel(ctx, data, ids, n, *, ufunc, identity):
    flat = np.asarray(ids).reshape(-1)
    if np.any(flat[1:] < flat[:-1]):
        i = int(np.argmax(flat[1:] < flat[:-1])) + 1
        raise ctx.error(f"segment ids are not increasing: segment_ids[{i}] = {int(flat[i])} follows "
                        f"{int(flat[i - 1])}", cls=InputError)
    if flat.size and flat[0] < 0:
        raise ctx.error(f"segment_ids[0] = {int(flat[0])} is out of range [0, {ints(n)[0]})", cls=InputError)
    return _segment_kernel(ctx, data, ids, n, ufunc=ufunc, identity=identity)


for _op, _unsorted in (("SegmentSumV2", "UnsortedSegmentSum"), ("SegmentProdV2", "UnsortedSegmentProd"),
                       ("SegmentMaxV2", "UnsortedSegmentMax"), ("SegmentMinV2", "UnsortedSegmentMin")):
    _register_segment(_op, _sorted_segment_infer, _sorted_segment_kernel, *SEGMENT_OPS[_unsorted])
