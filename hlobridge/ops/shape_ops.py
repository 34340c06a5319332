"""Shape, layout and indexing ops: Shape, Reshape, Transpose, StridedSlice, Gather, Pad, ...

Most take their shapes, axes and indices as tensors that must be compile-time constants
(StableHLO wants them static). Shape inference must still work when those tensors are
not known yet (a graph with batch dimension -1 computes them from Shape at run time):
each infer rule then gives what it can (the rank, None dims). The folded values appear
once the graph inputs' shapes are fixed.

Shape, ShapeN, Size and Rank set `value` in their specs whenever the input's shape is
known, so that downstream shape arithmetic folds (TensorFlow's grappler does the same).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .. import dtypes
from ..spec import TensorSpec
from .common import broadcast_shapes, normalize_axis
from .registry import register
from .typesets import ANY, NUMBER, SIGNED_NUMBER

I32, I64 = np.dtype(np.int32), np.dtype(np.int64)


# -- helpers --------------------------------------------------------------------------------------

def value_of(ctx, i: int):
    """Input i's value as an array, or None when it is not a compile-time constant."""
    v = ctx.inputs[i].value
    return None if v is None else np.asarray(v)


def ints(values) -> list[int]:
    return [int(v) for v in np.ravel(values)]


def unknown_vector_dims(ctx, i: int):
    """(None,) * n for a shape-tensor input whose length n is known but value is not."""
    s = ctx.inputs[i].shape
    return None if s is None or len(s) != 1 or s[0] is None else (None,) * s[0]


def num_elements(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _spec(ctx, shape, i: int = 0, dtype=None):
    return TensorSpec(dtype if dtype is not None else ctx.inputs[i].dtype,
                      None if shape is None else tuple(shape))


def _as_out(ctx, array, i: int = 0):
    return np.asarray(array).astype(ctx.out(i).dtype)


def _reshape_to_out(ctx, x, i: int = 0):
    return hlo.reshape(x, ctx.out(i).shape)


def take(x, indices, axis: int, batch_dims: int, out_shape):
    """TF GatherV2 as stablehlo.gather: out = params[:axis] + indices[batch_dims:] + params[axis+1:]."""
    pshape = hlo.shape_of(x)
    ir_rank = len(hlo.shape_of(indices))
    b = batch_dims
    out_rank = len(out_shape)
    sizes = [1 if (i == axis or i < b) else d for i, d in enumerate(pshape)]
    return hlo.gather(x, indices, out_shape,
                      offset_dims=list(range(b, axis)) + list(range(axis + ir_rank - b, out_rank)),
                      collapsed_slice_dims=[axis], start_index_map=[axis], index_vector_dim=ir_rank,
                      slice_sizes=sizes, operand_batching_dims=list(range(b)),
                      start_indices_batching_dims=list(range(b)))


# -- Shape, ShapeN, Size, Rank --------------------------------------------------------------------
# op -> (value from a spec, or None when not known; output shape from the spec)

def _shape_value(spec):
    return spec.shape if spec.is_static else None


def _size_value(spec):
    if spec.is_static:
        return num_elements(spec.shape)
    return 0 if spec.shape is not None and 0 in spec.shape else None


QUERIES = {
    "Shape": (_shape_value, lambda spec: (spec.rank,), lambda x: x.shape),
    "Size": (_size_value, lambda spec: (), lambda x: x.size),
    "Rank": (lambda spec: spec.rank, lambda spec: (), lambda x: x.ndim),
}


def _query_infer(ctx, query):
    value_fn, shape_fn, _ = QUERIES[query]
    dtype = np.dtype(ctx.attr("out_type", np.int32))
    out = []
    for spec in ctx.inputs:
        v = value_fn(spec)
        out.append(TensorSpec(dtype, shape_fn(spec), None if v is None else np.asarray(v, dtype)))
    return out


def _query_lower(ctx, *xs):
    return [hlo.constant(ctx.out(i).value, ctx.out(i).dtype) for i in range(len(xs))]


def _query_kernel(ctx, *xs, query):
    return [_as_out(ctx, QUERIES[query][2](x), i) for i, x in enumerate(xs)]


for _op, _attrs in {"Shape": ("T", "out_type"), "ShapeN": ("N", "T", "out_type"),
                    "Size": ("T", "out_type"), "Rank": ("T",)}.items():
    _q = "Shape" if _op == "ShapeN" else _op
    register(_op, infer=lambda ctx, q=_q: _query_infer(ctx, q), attrs=_attrs, lower=_query_lower,
             kernel=lambda ctx, *xs, q=_q: _query_kernel(ctx, *xs, query=q))


# -- Reshape, ExpandDims, Squeeze: the data is unchanged, only the shape --------------------------

def _reshape_infer(ctx):
    x = ctx.inputs[0]
    target = value_of(ctx, 1)
    if target is None:
        return [_spec(ctx, unknown_vector_dims(ctx, 1))]
    dims = ints(target)
    if dims.count(-1) > 1:
        raise ctx.error(f"shape {dims} has more than one -1")
    known = num_elements([d for d in dims if d != -1])
    if -1 in dims:
        where = dims.index(-1)
        if not x.is_static:
            dims[where] = None
        elif known == 0 or x.num_elements % known:
            raise ctx.error(f"cannot reshape {x} to {ints(target)}")
        else:
            dims[where] = x.num_elements // known
    elif x.is_static and x.num_elements != known:
        raise ctx.error(f"cannot reshape {x} ({x.num_elements} elements) to {dims} ({known} elements)")
    return [_spec(ctx, dims)]


def _expand_dims_infer(ctx):
    x, axis = ctx.inputs[0], value_of(ctx, 1)
    if x.shape is None:
        return [_spec(ctx, None)]
    if axis is None:
        return [_spec(ctx, (None,) * (x.rank + 1))]
    a = normalize_axis(ctx, ints(axis)[0], x.rank + 1)
    return [_spec(ctx, x.shape[:a] + (1,) + x.shape[a:])]


def _squeeze_infer(ctx):
    x = ctx.inputs[0]
    if x.shape is None:
        return [_spec(ctx, None)]
    dims = {normalize_axis(ctx, int(d), x.rank) for d in ctx.attr("squeeze_dims", []) or []}
    if not dims:
        if None in x.shape:  # which dims are 1 is not known yet
            return [_spec(ctx, None)]
        dims = {i for i, d in enumerate(x.shape) if d == 1}
    for d in dims:
        if x.shape[d] not in (1, None):
            raise ctx.error(f"cannot squeeze dimension {d} of {x}: its size is not 1")
    return [_spec(ctx, [d for i, d in enumerate(x.shape) if i not in dims])]


def _squeeze_kernel(ctx, x):
    dims = tuple(int(d) for d in ctx.attr("squeeze_dims", []) or [])
    return np.squeeze(x, axis=dims or None)


def _same_data_lower(ctx, x, *_):
    return _reshape_to_out(ctx, x)


register("Reshape", infer=_reshape_infer, attrs=("T", "Tshape"), const_inputs=(1,),
         lower=_same_data_lower, kernel=lambda ctx, x, shape: x.reshape(ints(shape)))
register("ExpandDims", infer=_expand_dims_infer, attrs=("T", "Tdim"), const_inputs=(1,),
         lower=_same_data_lower, kernel=lambda ctx, x, axis: np.expand_dims(x, ints(axis)[0]))
register("Squeeze", infer=_squeeze_infer, attrs=("T", "squeeze_dims"), lower=_same_data_lower,
         kernel=_squeeze_kernel)


# -- Transpose, InvertPermutation -----------------------------------------------------------------

def _transpose_infer(ctx):
    x, perm = ctx.inputs[0], value_of(ctx, 1)
    if perm is None:
        return [_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    perm = ints(perm)
    if x.shape is None:
        return [_spec(ctx, (None,) * len(perm))]
    if sorted(perm) != list(range(x.rank)):
        raise ctx.error(f"perm {perm} is not a permutation of the {x.rank} dimensions of {x}")
    return [_spec(ctx, [x.shape[p] for p in perm])]


register("Transpose", infer=_transpose_infer, attrs=("T", "Tperm"), const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.transpose(x, ints(ctx.const(1))),
         kernel=lambda ctx, x, perm: np.transpose(x, ints(perm)))


def _invert_permutation_kernel(ctx, x):
    if sorted(ints(x)) != list(range(x.size)):
        raise ctx.error(f"{ints(x)} is not a permutation")
    out = np.empty_like(x)
    out[x] = np.arange(x.size, dtype=x.dtype)
    return out


def _invert_permutation_lower(ctx, x):
    from .scatter import scatter_in_bounds  # (scatter.py builds on this module)
    (n,) = hlo.shape_of(x)
    dtype = ctx.out().dtype
    return scatter_in_bounds(hlo.splat(0, [n], dtype), hlo.reshape(x, [n, 1]), hlo.iota([n], dtype, 0),
                             dtype=dtype, index_dtype=dtype, combiner=None)


register("InvertPermutation", infer=lambda ctx: [_spec(ctx, ctx.inputs[0].shape)], attrs=("T",),
         dtypes=("int32", "int64"),
         lower=_invert_permutation_lower, kernel=_invert_permutation_kernel)


# -- Concat, ConcatV2, Pack, Unpack ---------------------------------------------------------------
# ConcatV2's axis is its last input, whose index depends on N: it cannot be listed in
# const_inputs, so the lowering receives it as a (constant) Value and reads ctx.const instead.

def _concat_layout(ctx):
    """(indices of the value inputs, index of the axis input)."""
    n = len(ctx.inputs) - 1
    return (list(range(n)), n) if ctx.op == "ConcatV2" else (list(range(1, n + 1)), 0)


def merge_dims(ctx, *dims):
    known = {d for d in dims if d is not None}
    if len(known) > 1:
        raise ctx.error(f"dimensions {sorted(known)} should be equal")
    return known.pop() if known else None


def _concat_infer(ctx):
    parts, axis_input = _concat_layout(ctx)
    specs = [ctx.inputs[i] for i in parts]
    ranked = [s for s in specs if s.shape is not None]
    if not ranked:
        return [_spec(ctx, None, parts[0])]
    rank = ranked[0].rank
    axis = value_of(ctx, axis_input)
    if axis is None:
        return [_spec(ctx, (None,) * rank, parts[0])]
    axis = normalize_axis(ctx, ints(axis)[0], rank)
    shape = []
    for d in range(rank):
        dims = [s.shape[d] if s.shape is not None else None for s in specs]
        if d == axis:
            shape.append(None if None in dims else sum(dims))
        else:
            shape.append(merge_dims(ctx, *dims))
    return [_spec(ctx, shape, parts[0])]


def _concat_axis(ctx, rank):
    _, axis_input = _concat_layout(ctx)
    return normalize_axis(ctx, ints(ctx.const(axis_input))[0], rank)


def _concat_lower(ctx, *operands):
    parts, _ = _concat_layout(ctx)
    values = [operands[i] for i in parts]
    return hlo.concatenate(values, _concat_axis(ctx, len(hlo.shape_of(values[0]))))


def _concat_kernel(ctx, *arrays):
    parts, axis_input = _concat_layout(ctx)
    values = [arrays[i] for i in parts]
    axis = normalize_axis(ctx, ints(arrays[axis_input])[0], values[0].ndim)
    return _as_out(ctx, np.concatenate(values, axis))


register("ConcatV2", infer=_concat_infer, attrs=("T", "N", "Tidx"), lower=_concat_lower,
         kernel=_concat_kernel)
register("Concat", infer=_concat_infer, attrs=("T", "N"), const_inputs=(0,), lower=_concat_lower,
         kernel=_concat_kernel)


def _pack_infer(ctx):
    shapes = [s.shape for s in ctx.inputs if s.shape is not None]
    if not shapes:
        return [_spec(ctx, None)]
    shape = [merge_dims(ctx, *dims) for dims in zip(*shapes)]
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape) + 1)
    return [_spec(ctx, shape[:axis] + [len(ctx.inputs)] + shape[axis:])]


def _pack_lower(ctx, *xs):
    out = list(ctx.out().shape)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(out))
    return hlo.concatenate([hlo.reshape(x, out[:axis] + [1] + out[axis + 1:]) for x in xs], axis)


register("Pack", infer=_pack_infer, attrs=("T", "N", "axis"), lower=_pack_lower,
         kernel=lambda ctx, *xs: np.stack(xs, normalize_axis(ctx, ctx.attr("axis", 0), xs[0].ndim + 1)))


def _unpack_infer(ctx):
    x, num = ctx.inputs[0], ctx.attr("num")
    if x.shape is None:
        return [_spec(ctx, None)] * num
    axis = normalize_axis(ctx, ctx.attr("axis", 0), x.rank)
    if x.shape[axis] not in (None, num):
        raise ctx.error(f"num={num} but dimension {axis} of {x} has size {x.shape[axis]}")
    return [_spec(ctx, x.shape[:axis] + x.shape[axis + 1:])] * num


def _unpack_lower(ctx, x):
    shape = hlo.shape_of(x)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape))
    outs = []
    for i in range(ctx.attr("num")):
        start = [0] * len(shape)
        start[axis] = i
        limit = shape[:axis] + [i + 1] + shape[axis + 1:]
        outs.append(_reshape_to_out(ctx, hlo.slice(x, start, limit), i))
    return outs


register("Unpack", infer=_unpack_infer, attrs=("T", "num", "axis"), lower=_unpack_lower,
         kernel=lambda ctx, x: [np.take(x, i, normalize_axis(ctx, ctx.attr("axis", 0), x.ndim))
                                for i in range(ctx.attr("num"))])


# -- Split, SplitV ----------------------------------------------------------------------------------
# layout: op -> (value input, axis input, size_splits input or None)
SPLITS = {"Split": (1, 0, None), "SplitV": (0, 2, 1)}


def _split_sizes(ctx, dim, sizes_value):
    """Sizes of the pieces (None where unknown), resolving SplitV's one -1."""
    n = ctx.attr("num_split")
    if sizes_value is None:  # Split: equal pieces
        if dim is not None and dim % n:
            raise ctx.error(f"dimension of size {dim} does not split into {n} equal pieces")
        return [None if dim is None else dim // n] * n
    sizes = ints(sizes_value)
    if len(sizes) != n or sizes.count(-1) > 1:
        raise ctx.error(f"size_splits {sizes} must have num_split={n} entries, at most one -1")
    if -1 in sizes:
        rest = dim - sum(s for s in sizes if s != -1) if dim is not None else None
        sizes = [rest if s == -1 else s for s in sizes]
    return sizes


def _split_plan(ctx, x_shape):
    """(axis, sizes) from constant inputs, or None when the axis is not known."""
    x_in, axis_in, sizes_in = SPLITS[ctx.op]
    axis = value_of(ctx, axis_in)
    if axis is None or x_shape is None:
        return None
    axis = normalize_axis(ctx, ints(axis)[0], len(x_shape))
    sizes_value = None
    if sizes_in is not None:
        sizes_value = value_of(ctx, sizes_in)
        if sizes_value is None:
            return axis, [None] * ctx.attr("num_split")
    return axis, _split_sizes(ctx, x_shape[axis], sizes_value)


def _split_infer(ctx):
    x = ctx.inputs[SPLITS[ctx.op][0]]
    n = ctx.attr("num_split")
    plan = _split_plan(ctx, x.shape)
    if plan is None:
        return [_spec(ctx, None if x.shape is None else (None,) * x.rank, dtype=x.dtype)] * n
    axis, sizes = plan
    return [TensorSpec(x.dtype, x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


def _split_lower(ctx, *operands):
    x = operands[SPLITS[ctx.op][0]]
    shape = hlo.shape_of(x)
    axis, sizes = _split_plan(ctx, tuple(shape))
    outs, offset = [], 0
    for s in sizes:
        start = [0] * len(shape)
        start[axis] = offset
        outs.append(hlo.slice(x, start, shape[:axis] + [offset + s] + shape[axis + 1:]))
        offset += s
    return outs


def _split_kernel(ctx, *arrays):
    x_in, axis_in, sizes_in = SPLITS[ctx.op]
    x = arrays[x_in]
    axis = normalize_axis(ctx, ints(arrays[axis_in])[0], x.ndim)
    sizes = _split_sizes(ctx, x.shape[axis], None if sizes_in is None else arrays[sizes_in])
    return np.split(x, np.cumsum(sizes)[:-1], axis)


register("Split", infer=_split_infer, attrs=("T", "num_split"), const_inputs=(0,),
         lower=_split_lower, kernel=_split_kernel)
register("SplitV", infer=_split_infer, attrs=("T", "num_split", "Tlen"), const_inputs=(1, 2),
         lower=_split_lower, kernel=_split_kernel)


# -- Slice, StridedSlice ------------------------------------------------------------------------------

def _slice_bounds(ctx, shape, begin, size):
    """Per dimension (start, stop); size -1 means to the end. None where not known."""
    out = []
    for d, b, s in zip(shape, ints(begin), ints(size)):
        if s == -1:
            out.append((b, d))
        else:
            out.append((b, b + s))
            if d is not None and (b < 0 or s < 0 or b + s > d):
                raise ctx.error(f"slice [{b}, {b + s}) is out of range for a dimension of size {d}")
    return out


def _slice_infer(ctx):
    x, begin, size = ctx.inputs[0], value_of(ctx, 1), value_of(ctx, 2)
    if x.shape is None or begin is None or size is None:
        return [_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    bounds = _slice_bounds(ctx, x.shape, begin, size)
    return [_spec(ctx, [None if hi is None else hi - lo for lo, hi in bounds])]


def _slice_lower(ctx, x, _b, _s):
    bounds = _slice_bounds(ctx, hlo.shape_of(x), ctx.const(1), ctx.const(2))
    return hlo.slice(x, [lo for lo, _ in bounds], [hi for _, hi in bounds])


def _slice_kernel(ctx, x, begin, size):
    bounds = _slice_bounds(ctx, x.shape, begin, size)
    return x[tuple(slice(lo, hi) for lo, hi in bounds)]


register("Slice", infer=_slice_infer, attrs=("T", "Index"), const_inputs=(1, 2),
         lower=_slice_lower, kernel=_slice_kernel)

STRIDED_SLICE_ATTRS = ("T", "Index", "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                       "shrink_axis_mask")


def strided_index(ctx, begin, end, strides) -> list:
    """The NumPy index TF's masks describe: slices, ints (shrink), None (new axis), Ellipsis.

    TF's rules where bits collide: ellipsis beats new_axis, new_axis beats shrink; a shrunk
    dimension takes begin (end, stride and the masks are ignored).
    """
    masks = {m: ctx.attr(m, 0) for m in STRIDED_SLICE_ATTRS[2:]}
    begin, end, strides = ints(begin), ints(end), ints(strides)
    if not len(begin) == len(end) == len(strides):
        raise ctx.error("begin, end and strides must have the same length")
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        bit = 1 << i
        if masks["ellipsis_mask"] & bit:
            if any(x is Ellipsis for x in index):
                raise ctx.error("more than one ellipsis in the slice spec")
            index.append(Ellipsis)
        elif masks["new_axis_mask"] & bit:
            index.append(None)
        elif masks["shrink_axis_mask"] & bit:
            index.append(b)
        else:
            if s == 0:
                raise ctx.error(f"strides[{i}] is 0")
            index.append(slice(None if masks["begin_mask"] & bit else b,
                               None if masks["end_mask"] & bit else e, s))
    return index


def dense_index(ctx, index: list, rank: int):
    """(one slice or int per input dimension, output dims as input dim numbers / None for new)."""
    real = sum(1 for x in index if x is not None and x is not Ellipsis)
    if not any(x is Ellipsis for x in index):
        index = index + [Ellipsis]  # TF and NumPy: unmentioned trailing dims are kept whole
    if real > rank:
        raise ctx.error(f"slice spec indexes {real} dimensions of a rank-{rank} tensor")
    per_dim, out = [], []
    for x in index:
        if x is Ellipsis:
            for _ in range(rank - real):
                out.append(len(per_dim))
                per_dim.append(slice(None))
        elif x is None:
            out.append(None)
        else:
            if isinstance(x, slice):
                out.append(len(per_dim))
            per_dim.append(x)
    return per_dim, out


def _dim_window(ctx, x, d):
    """(start, stop, step) that NumPy would use for index x on a dimension of size d."""
    if isinstance(x, slice):
        return x.indices(d)
    i = x + d if x < 0 else x
    if not 0 <= i < d:
        raise ctx.error(f"index {x} is out of range for a dimension of size {d}")
    return i, i + 1, 1


def _strided_slice_infer(ctx):
    x = ctx.inputs[0]
    consts = [value_of(ctx, i) for i in (1, 2, 3)]
    if x.shape is None or any(c is None for c in consts):
        return [_spec(ctx, None)]
    per_dim, out = dense_index(ctx, strided_index(ctx, *consts), x.rank)
    shape = []
    for i in out:
        if i is None:
            shape.append(1)
        elif x.shape[i] is None:
            shape.append(None)
        else:
            shape.append(len(range(*_dim_window(ctx, per_dim[i], x.shape[i]))))
    for sel, d in zip(per_dim, x.shape):  # validates shrunk indices
        if not isinstance(sel, slice) and d is not None:
            _dim_window(ctx, sel, d)
    return [_spec(ctx, shape)]


def _strided_windows(ctx, shape, begin, end, strides):
    """(starts, limits, steps, flipped dims): the slice as a forward strided slice of the
    input reversed along `flipped` (StableHLO's slice has no negative strides)."""
    per_dim, _ = dense_index(ctx, strided_index(ctx, begin, end, strides), len(shape))
    starts, limits, steps, flipped = [], [], [], []
    for dim, (sel, d) in enumerate(zip(per_dim, shape)):
        start, stop, step = _dim_window(ctx, sel, d)
        n = len(range(start, stop, step))
        if step < 0:  # reverse the dimension, then slice forward
            flipped.append(dim)
            start, step = d - 1 - start, -step
        if n == 0:
            start = 0
        starts.append(start)
        limits.append(start + (n - 1) * step + 1 if n else start)
        steps.append(step)
    return starts, limits, steps, flipped


def _strided_slice_lower(ctx, x, *_):
    starts, limits, steps, flipped = _strided_windows(ctx, hlo.shape_of(x), *(ctx.const(i) for i in (1, 2, 3)))
    return _reshape_to_out(ctx, hlo.slice(hlo.reverse(x, flipped), starts, limits, steps))


def _strided_slice_kernel(ctx, x, begin, end, strides):
    return _as_out(ctx, x[tuple(strided_index(ctx, begin, end, strides))])


register("StridedSlice", infer=_strided_slice_infer, attrs=STRIDED_SLICE_ATTRS, const_inputs=(1, 2, 3),
         lower=_strided_slice_lower, kernel=_strided_slice_kernel)

# StridedSliceGrad(shape, begin, end, strides, dy): zeros of `shape` with dy where StridedSlice
# read. Lowered as a pad of dy (edges to the window, interior holes for the stride), then the
# same reverses the forward slice made.


def _strided_slice_grad_infer(ctx):
    shape = value_of(ctx, 0)
    return [TensorSpec(ctx.inputs[4].dtype, unknown_vector_dims(ctx, 0) if shape is None else tuple(ints(shape)))]


def _strided_slice_grad_lower(ctx, *operands):
    dy = operands[4]
    shape = list(ctx.out().shape)
    starts, limits, steps, flipped = _strided_windows(ctx, shape, *(ctx.const(i) for i in (1, 2, 3)))
    counts = [len(range(a, b, s)) for a, b, s in zip(starts, limits, steps)]
    if 0 in counts:
        return hlo.constant(np.zeros(shape, ctx.out().dtype))
    dy = hlo.reshape(dy, counts)
    high = [d - (a + (n - 1) * s + 1) for d, a, n, s in zip(shape, starts, counts, steps)]
    dx = hlo.pad(dy, hlo.constant(np.zeros((), ctx.out().dtype)), starts, high, [s - 1 for s in steps])
    return hlo.reverse(dx, flipped)


def _strided_slice_grad_kernel(ctx, shape, begin, end, strides, dy):
    dx = np.zeros(ints(shape), ctx.out().dtype)
    dx[tuple(strided_index(ctx, begin, end, strides))] = dy
    return dx


register("StridedSliceGrad", infer=_strided_slice_grad_infer, attrs=STRIDED_SLICE_ATTRS, const_inputs=(0, 1, 2, 3),
         lower=_strided_slice_grad_lower, kernel=_strided_slice_grad_kernel)


# -- Tile, BroadcastTo, Fill, Range ---------------------------------------------------------------

def _tile_infer(ctx):
    x, multiples = ctx.inputs[0], value_of(ctx, 1)
    if multiples is None:
        return [_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    m = ints(multiples)
    if x.shape is not None and len(m) != x.rank:
        raise ctx.error(f"multiples {m} must have one entry per dimension of {x}")
    shape = x.shape if x.shape is not None else (None,) * len(m)
    return [_spec(ctx, [None if d is None else d * k for d, k in zip(shape, m)])]


def _tile_lower(ctx, x, _):
    shape, m = hlo.shape_of(x), ints(ctx.const(1))
    # [m0, d0, m1, d1, ...] with x on the odd dims, then merge each pair.
    wide = [v for pair in zip(m, shape) for v in pair]
    return _reshape_to_out(ctx, hlo.broadcast_in_dim(x, wide, range(1, 2 * len(shape), 2)))


register("Tile", infer=_tile_infer, attrs=("T", "Tmultiples"), const_inputs=(1,), lower=_tile_lower,
         kernel=lambda ctx, x, m: np.tile(x, ints(m)))


def _broadcast_to_infer(ctx):
    x, target = ctx.inputs[0], value_of(ctx, 1)
    if target is None:
        return [_spec(ctx, unknown_vector_dims(ctx, 1))]
    target = tuple(ints(target))
    if x.shape is not None and broadcast_shapes(ctx, x.shape, target) != target:
        raise ctx.error(f"cannot broadcast {x} to {list(target)}")
    return [_spec(ctx, target)]


register("BroadcastTo", infer=_broadcast_to_infer, attrs=("T", "Tidx"), const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.broadcast_to(x, ctx.out().shape),
         kernel=lambda ctx, x, shape: np.broadcast_to(x, ints(shape)).copy())


def _fill_infer(ctx):
    dims = value_of(ctx, 0)
    shape = unknown_vector_dims(ctx, 0) if dims is None else ints(dims)
    return [_spec(ctx, shape, 1)]


register("Fill", infer=_fill_infer, attrs=("T", "index_type"), const_inputs=(0,),
         lower=lambda ctx, _, v: hlo.broadcast_in_dim(v, ctx.out().shape, []),
         kernel=lambda ctx, dims, v: np.full(ints(dims), v, ctx.out().dtype))


def _range_size(ctx, start, limit, delta) -> int:
    start, limit, delta = (np.ravel(v)[0] for v in (start, limit, delta))
    if delta == 0:
        raise ctx.error("delta must not be 0")
    if (delta > 0 and start > limit) or (delta < 0 and start < limit):
        raise ctx.error(f"start {start} cannot reach limit {limit} with delta {delta}")
    if dtypes.is_integer(np.asarray(start).dtype):
        return int((abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta)))
    return int(np.ceil(abs((float(limit) - float(start)) / float(delta))))


def _range_infer(ctx):
    dtype = np.dtype(ctx.attr("Tidx", ctx.inputs[0].dtype))
    values = [value_of(ctx, i) for i in range(3)]
    size = None if any(v is None for v in values) else _range_size(ctx, *values)
    return [TensorSpec(dtype, (size,))]


def _range_lower(ctx, *_):
    dtype, (n,) = ctx.out().dtype, ctx.out().shape
    start, _, delta = (np.ravel(ctx.const(i))[0] for i in range(3))
    steps = hlo.multiply(hlo.iota([n], dtype, 0), hlo.splat(delta, [n], dtype))
    return hlo.add(steps, hlo.splat(start, [n], dtype))


def _range_kernel(ctx, start, limit, delta):
    dtype = ctx.out().dtype
    n = _range_size(ctx, start, limit, delta)
    return np.arange(n).astype(dtype) * np.ravel(delta)[0].astype(dtype) + np.ravel(start)[0].astype(dtype)


register("Range", infer=_range_infer, attrs=("Tidx",), const_inputs=(0, 1, 2),
         dtypes=SIGNED_NUMBER, dtype_attrs=("Tidx",),
         lower=_range_lower, kernel=_range_kernel)


# -- BroadcastGradientArgs -----------------------------------------------------------------------

def broadcast_gradient_args(s0, s1):
    """TF's BCast reduction indices: the output dims each input was broadcast along.

    Both shapes are 1-padded on the left; input i reduces over every dim where its padded
    size is 1 (including dims where every input is 1), ascending.
    """
    s0, s1 = ints(s0), ints(s1)
    n = max(len(s0), len(s1))
    p0, p1 = [1] * (n - len(s0)) + s0, [1] * (n - len(s1)) + s1
    for a, b in zip(p0, p1):
        if a != b and 1 not in (a, b):
            raise ValueError(f"incompatible shapes {s0} and {s1}")
    return [k for k in range(n) if p0[k] == 1], [k for k in range(n) if p1[k] == 1]


def _bga_infer(ctx):
    dtype = ctx.inputs[0].dtype
    s0, s1 = value_of(ctx, 0), value_of(ctx, 1)
    if s0 is None or s1 is None:
        return [TensorSpec(dtype, (None,)), TensorSpec(dtype, (None,))]
    r0, r1 = _bga_kernel(ctx, s0, s1)
    return [TensorSpec(dtype, r0.shape, r0), TensorSpec(dtype, r1.shape, r1)]


def _bga_kernel(ctx, s0, s1):
    try:
        r0, r1 = broadcast_gradient_args(s0, s1)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    dtype = ctx.inputs[0].dtype
    return [np.asarray(r0, dtype), np.asarray(r1, dtype)]


register("BroadcastGradientArgs", infer=_bga_infer, attrs=("T",), const_inputs=(0, 1),
         dtypes=("int32", "int64"),
         lower=lambda ctx, *_: [hlo.constant(o.value, o.dtype) for o in ctx.outputs],
         kernel=_bga_kernel, output_args=("r0", "r1"))


# -- Gather, GatherV2, GatherNd -----------------------------------------------------------------------
# layout: op -> (axis input or None for axis 0, has batch_dims)

def _gather_params(ctx, axis_value=None):
    """(axis, batch_dims) of GatherV2/Gather, normalised; axis None when not constant."""
    p, ind = ctx.inputs[0], ctx.inputs[1]
    batch = ctx.attr("batch_dims", 0) if ctx.op == "GatherV2" else 0
    if batch < 0 and ind.rank is not None:
        batch += ind.rank
    if ctx.op != "GatherV2":
        return 0, batch
    axis = value_of(ctx, 2) if axis_value is None else axis_value
    if axis is None or p.rank is None:
        return None, batch
    axis = normalize_axis(ctx, ints(axis)[0], p.rank)
    if axis < batch:
        raise ctx.error(f"axis {axis} must not be less than batch_dims {batch}")
    return axis, batch


def _gather_infer(ctx):
    p, ind = ctx.inputs[0], ctx.inputs[1]
    axis, batch = _gather_params(ctx)
    if p.shape is None or ind.shape is None:
        return [_spec(ctx, None)]
    if axis is None:
        return [_spec(ctx, (None,) * (p.rank + ind.rank - 1 - batch))]
    for i in range(batch):
        merge_dims(ctx, p.shape[i], ind.shape[i])
    return [_spec(ctx, p.shape[:axis] + ind.shape[batch:] + p.shape[axis + 1:])]


def _gather_lower(ctx, params, indices, *_):
    axis, batch = _gather_params(ctx)
    return take(params, indices, axis, batch, ctx.out().shape)


def _gather_kernel(ctx, params, indices, *axis):
    axis, batch = _gather_params(ctx, axis[0] if axis else None)
    lead = params.shape[:batch]
    rows = [np.take(params[b], indices[b], axis - batch) for b in np.ndindex(*lead)]
    out = np.stack(rows).reshape(lead + rows[0].shape) if lead else rows[0]
    return _as_out(ctx, out)


register("GatherV2", infer=_gather_infer, attrs=("Tparams", "Tindices", "Taxis", "batch_dims"),
         const_inputs=(2,), lower=_gather_lower, kernel=_gather_kernel)
register("Gather", infer=_gather_infer, attrs=("Tparams", "Tindices", "validate_indices"),
         lower=_gather_lower, kernel=_gather_kernel)


def _gather_nd_infer(ctx):
    p, ind = ctx.inputs
    if p.shape is None or ind.shape is None or ind.shape[-1] is None:
        return [_spec(ctx, None)]
    k = ind.shape[-1]
    if k > p.rank:
        raise ctx.error(f"indices.shape[-1] = {k} must be <= params rank {p.rank}")
    return [_spec(ctx, ind.shape[:-1] + p.shape[k:])]


def _gather_nd_lower(ctx, params, indices):
    pshape, ishape = hlo.shape_of(params), hlo.shape_of(indices)
    k, batch_rank = ishape[-1], len(ishape) - 1
    return hlo.gather(params, indices, ctx.out().shape,
                      offset_dims=list(range(batch_rank, batch_rank + len(pshape) - k)),
                      collapsed_slice_dims=list(range(k)), start_index_map=list(range(k)),
                      index_vector_dim=batch_rank, slice_sizes=[1] * k + pshape[k:])


def _gather_nd_kernel(ctx, params, indices):
    k = indices.shape[-1]
    return _as_out(ctx, params[tuple(indices[..., i] for i in range(k))])


register("GatherNd", infer=_gather_nd_infer, attrs=("Tparams", "Tindices", "bad_indices_policy"),
         lower=_gather_nd_lower, kernel=_gather_nd_kernel)


# -- DynamicStitch ---------------------------------------------------------------------------------
# Inputs: N index tensors, then N data tensors. merged[indices[m][i]] = data[m][i], later
# pairs winning; the indices must be constants. Lowered as one gather from the concatenation
# of the flattened data (plus a zero row for positions no index names).

def _stitch_parts(ctx):
    n = len(ctx.inputs) // 2
    return list(range(n)), list(range(n, 2 * n))


def _stitch_infer(ctx):
    idx_in, data_in = _stitch_parts(ctx)
    first_idx, first_data = ctx.inputs[idx_in[0]], ctx.inputs[data_in[0]]
    rest = None
    if first_idx.shape is not None and first_data.shape is not None:
        rest = first_data.shape[first_idx.rank:]
    values = [value_of(ctx, i) for i in idx_in]
    size = None if any(v is None for v in values) else max(
        [int(v.max()) + 1 for v in values if v.size], default=0)
    return [_spec(ctx, None if rest is None else (size,) + rest, data_in[0])]


def _stitch_sources(values) -> tuple[np.ndarray, int]:
    """For each output row, its row in the concatenated flattened data (-1: none)."""
    flat = [np.ravel(v) for v in values]
    size = max([int(f.max()) + 1 for f in flat if f.size], default=0)
    source = np.full(size, -1, np.int64)
    offset = 0
    for f in flat:
        source[f] = offset + np.arange(f.size)  # assignment order: later entries win
        offset += f.size
    return source, offset


def _stitch_lower(ctx, *operands):
    idx_in, data_in = _stitch_parts(ctx)
    source, total = _stitch_sources([ctx.const(i) for i in idx_in])
    out_shape = list(ctx.out().shape)
    rest = out_shape[1:]
    rows = [hlo.reshape(operands[d], [num_elements(ctx.inputs[i].shape)] + rest)
            for i, d in zip(idx_in, data_in)]
    rows.append(hlo.splat(0, [1] + rest, ctx.out().dtype))
    table = hlo.concatenate(rows, 0)
    picks = hlo.constant(np.where(source < 0, total, source).astype(np.int32))
    return take(table, picks, 0, 0, out_shape)


def _stitch_kernel(ctx, *arrays):
    idx_in, data_in = _stitch_parts(ctx)
    first = arrays[idx_in[0]]
    rest = arrays[data_in[0]].shape[first.ndim:]
    source, total = _stitch_sources([arrays[i] for i in idx_in])
    table = np.concatenate([arrays[d].reshape((-1,) + rest) for d in data_in]
                           + [np.zeros((1,) + rest, arrays[data_in[0]].dtype)])
    return _as_out(ctx, table[np.where(source < 0, total, source)])


for _op in ("DynamicStitch", "ParallelDynamicStitch"):
    register(_op, infer=_stitch_infer, attrs=("T", "N"), lower=_stitch_lower, kernel=_stitch_kernel)


# -- Pad, PadV2, MirrorPad --------------------------------------------------------------------------

def _paddings(ctx, values, rank):
    p = np.asarray(values).reshape(-1, 2)
    if len(p) != rank or (p < 0).any():
        raise ctx.error(f"paddings {p.tolist()} must be [rank={rank}, 2] and non-negative")
    return [(int(lo), int(hi)) for lo, hi in p]


def _pad_infer(ctx):
    x, p = ctx.inputs[0], value_of(ctx, 1)
    if x.shape is None and p is None:
        return [_spec(ctx, None)]
    if p is None:
        return [_spec(ctx, (None,) * x.rank)]
    pads = _paddings(ctx, p, len(p))
    shape = x.shape if x.shape is not None else (None,) * len(pads)
    if len(shape) != len(pads):
        raise ctx.error(f"paddings has {len(pads)} rows for {x}")
    if ctx.op == "MirrorPad":
        _check_mirror(ctx, shape, pads)
    return [_spec(ctx, [None if d is None else d + lo + hi for d, (lo, hi) in zip(shape, pads)])]


def _check_mirror(ctx, shape, pads):
    limit = 1 if ctx.attr("mode") == "REFLECT" else 0
    for d, (lo, hi) in zip(shape, pads):
        if d is not None and max(lo, hi) > d - limit:
            raise ctx.error(f"{ctx.attr('mode')} padding ({lo}, {hi}) is too large for a dimension "
                            f"of size {d}")


def _pad_lower(ctx, x, _p, value=None):
    pads = _paddings(ctx, ctx.const(1), len(hlo.shape_of(x)))
    if value is None:
        value = hlo.constant(np.zeros((), ctx.out().dtype))
    return hlo.pad(x, value, [lo for lo, _ in pads], [hi for _, hi in pads])


def _pad_kernel(ctx, x, p, value=None):
    pads = _paddings(ctx, p, x.ndim)
    fill = 0 if value is None else np.asarray(value).item()
    return _as_out(ctx, np.pad(x, pads, constant_values=fill))


def _mirror_lower(ctx, x, _p):
    shape = hlo.shape_of(x)
    pads = _paddings(ctx, ctx.const(1), len(shape))
    skip = 1 if ctx.attr("mode") == "REFLECT" else 0  # REFLECT does not repeat the edge
    for dim, (lo, hi) in enumerate(pads):
        d = shape[dim]

        def piece(start, stop, dim=dim):
            s, lim = [0] * len(shape), list(hlo.shape_of(x))
            s[dim], lim[dim] = start, stop
            return hlo.reverse(hlo.slice(x, s, lim), [dim])
        parts = ([piece(skip, skip + lo)] if lo else []) + [x] + \
                ([piece(d - skip - hi, d - skip)] if hi else [])
        x = hlo.concatenate(parts, dim)
    return x


def _mirror_kernel(ctx, x, p):
    mode = {"REFLECT": "reflect", "SYMMETRIC": "symmetric"}[ctx.attr("mode")]
    return _as_out(ctx, np.pad(x, _paddings(ctx, p, x.ndim), mode=mode))


register("Pad", infer=_pad_infer, attrs=("T", "Tpaddings"), const_inputs=(1,), lower=_pad_lower,
         kernel=_pad_kernel)
register("PadV2", infer=_pad_infer, attrs=("T", "Tpaddings"), const_inputs=(1,), lower=_pad_lower,
         kernel=_pad_kernel)
register("MirrorPad", infer=_pad_infer, attrs=("T", "Tpaddings", "mode"), const_inputs=(1,),
         lower=_mirror_lower, kernel=_mirror_kernel)


# -- Reverse, ReverseV2 -------------------------------------------------------------------------------

def _reverse_axes(ctx, values, rank):
    values = np.ravel(values)
    if ctx.op == "Reverse":  # v1: one bool per dimension
        return [i for i, flip in enumerate(values) if flip]
    return sorted({normalize_axis(ctx, int(a), rank) for a in values})


register("Reverse", infer=lambda ctx: [_spec(ctx, ctx.inputs[0].shape)], attrs=("T",),
         const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.reverse(x, _reverse_axes(ctx, ctx.const(1), len(hlo.shape_of(x)))),
         kernel=lambda ctx, x, a: np.flip(x, _reverse_axes(ctx, a, x.ndim)).copy())
register("ReverseV2", infer=lambda ctx: [_spec(ctx, ctx.inputs[0].shape)], attrs=("T", "Tidx"),
         const_inputs=(1,),
         lower=lambda ctx, x, _: hlo.reverse(x, _reverse_axes(ctx, ctx.const(1), len(hlo.shape_of(x)))),
         kernel=lambda ctx, x, a: np.flip(x, _reverse_axes(ctx, a, x.ndim)).copy())


# -- OneHot -------------------------------------------------------------------------------------------

def _one_hot_infer(ctx):
    ind, depth = ctx.inputs[0], value_of(ctx, 1)
    if ind.shape is None:
        return [_spec(ctx, None, 2)]
    axis = normalize_axis(ctx, ctx.attr("axis", -1), ind.rank + 1)
    d = None if depth is None else ints(depth)[0]
    return [_spec(ctx, ind.shape[:axis] + (d,) + ind.shape[axis:], 2)]


def _one_hot_lower(ctx, indices, _d, on, off):
    shape = list(ctx.out().shape)
    axis = normalize_axis(ctx, ctx.attr("axis", -1), len(shape))
    kept = [i for i in range(len(shape)) if i != axis]
    hot = hlo.compare("EQ", hlo.broadcast_in_dim(indices, shape, kept),
                      hlo.iota(shape, ctx.inputs[0].dtype, axis))
    return hlo.select(hot, hlo.broadcast_in_dim(on, shape, []), hlo.broadcast_in_dim(off, shape, []))


def _one_hot_kernel(ctx, indices, depth, on, off):
    axis = normalize_axis(ctx, ctx.attr("axis", -1), indices.ndim + 1)
    positions = np.arange(ints(depth)[0]).reshape((-1,) + (1,) * (indices.ndim - axis))
    hot = np.expand_dims(indices, axis) == positions
    return _as_out(ctx, np.where(hot, on, off))


register("OneHot", infer=_one_hot_infer, attrs=("T", "TI", "axis"), const_inputs=(1,),
         lower=_one_hot_lower, kernel=_one_hot_kernel)


# -- Cumsum, Cumprod ----------------------------------------------------------------------------------
# op -> (StableHLO combiner, NumPy cumulative fn, identity). Lowered as a reduce_window whose
# window spans the whole axis, padded with the identity on the side the sum comes from.
CUMULATIVE = {
    "Cumsum": ("add", np.cumsum, 0),
    "Cumprod": ("multiply", np.cumprod, 1),
}


def _cumulative_lower(ctx, x, _axis, *, combiner, identity):
    dtype = ctx.out().dtype
    if dtypes.is_unsigned(dtype):
        # IREE 3.13 cannot lower reduce_window on unsigned types; add and multiply are the
        # same bits on the signed type of that width.
        signed = np.dtype(f"int{8 * dtype.itemsize}")
        x = hlo.bitcast_convert(x, hlo.shape_of(x), signed)
        y = _cumulative_lower_typed(ctx, x, combiner=combiner, identity=identity, dtype=signed)
        return hlo.bitcast_convert(y, hlo.shape_of(y), dtype)
    return _cumulative_lower_typed(ctx, x, combiner=combiner, identity=identity, dtype=dtype)


def _cumulative_lower_typed(ctx, x, *, combiner, identity, dtype):
    shape = hlo.shape_of(x)
    rank = len(shape)
    axis = normalize_axis(ctx, ints(ctx.const(1))[0], rank)
    d = shape[axis]
    reverse, exclusive = ctx.attr("reverse", False), ctx.attr("exclusive", False)
    init = hlo.constant(np.asarray(identity, dtype))
    if exclusive and d:  # shift by one, bringing the identity in
        start, limit = [0] * rank, list(shape)
        lo, hi = [0] * rank, [0] * rank
        if reverse:
            start[axis], hi[axis] = 1, 1
        else:
            limit[axis], lo[axis] = d - 1, 1
        x = hlo.pad(hlo.slice(x, start, limit), init, lo, hi)
    window = [1] * rank
    window[axis] = max(d, 1)
    padding = [(0, 0)] * rank
    padding[axis] = (0, d - 1) if reverse else (d - 1, 0)
    if d == 0:
        return x
    return hlo.reduce_window(x, init, window, [1] * rank, padding, combiner)


def _cumulative_kernel(ctx, x, axis, *, np_fn, identity):
    axis = normalize_axis(ctx, ints(axis)[0], x.ndim)
    dtype = ctx.out().dtype
    if ctx.attr("reverse", False):
        x = np.flip(x, axis)
    y = np_fn(x, axis=axis, dtype=dtype)
    if ctx.attr("exclusive", False):
        y = np.concatenate([np.full_like(np.take(y, [0], axis), identity), np.delete(y, -1, axis)], axis) \
            if x.shape[axis] else y
    if ctx.attr("reverse", False):
        y = np.flip(y, axis)
    return _as_out(ctx, y)


for _op, (_comb, _np_fn, _ident) in CUMULATIVE.items():
    register(_op, infer=lambda ctx: [_spec(ctx, ctx.inputs[0].shape)],
             attrs=("T", "Tidx", "exclusive", "reverse"), const_inputs=(1,), dtypes=NUMBER,
             lower=lambda ctx, x, a, c=_comb, i=_ident: _cumulative_lower(ctx, x, a, combiner=c, identity=i),
             kernel=lambda ctx, x, a, f=_np_fn, i=_ident: _cumulative_kernel(ctx, x, a, np_fn=f, identity=i))


# -- TopKV2 ------------------------------------------------------------------------------------------
# The k largest along the last dimension, largest first; equal values in index order (TF's
# sorted=True order, which we give for sorted=False too).

def _top_k_infer(ctx):
    x, k = ctx.inputs[0], value_of(ctx, 1)
    index_type = np.dtype(ctx.attr("index_type", np.int32))
    if x.shape is None:
        return [_spec(ctx, None), TensorSpec(index_type, None)]
    k = None if k is None else ints(k)[0]
    if k is not None and x.shape[-1] is not None and not 0 <= k <= x.shape[-1]:
        raise ctx.error(f"k = {k} is out of range for the last dimension of {x}")
    shape = x.shape[:-1] + (k,)
    return [_spec(ctx, shape), TensorSpec(index_type, shape)]


def _top_k_lower(ctx, x, _k):
    shape = hlo.shape_of(x)
    last = len(shape) - 1
    index = hlo.iota(shape, ctx.out(1).dtype, last)

    def before(a, b, ia, ib):  # ascending; equal values by descending index
        return hlo.binary("or", hlo.compare("LT", a, b),
                          hlo.binary("and", hlo.compare("EQ", a, b), hlo.compare("GT", ia, ib)))
    # Sorted ascending then reversed, not sorted descending and sliced: IREE rewrites the
    # latter into its own top-k, which drops the comparator's tie-break (ties would come out
    # in any order; TF puts the lower index first).
    limit = shape[:-1] + [ints(ctx.const(1))[0]]
    return [hlo.slice(hlo.reverse(v, [last]), [0] * len(shape), limit)
            for v in hlo.sort([x, index], last, before)]


def _top_k_kernel(ctx, x, k):
    k, n = ints(k)[0], x.shape[-1]
    # A stable ascending sort of the reversed row, reversed back: descending, ties by index.
    order = (n - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable"))[..., ::-1][..., :k]
    return [_as_out(ctx, np.take_along_axis(x, order, -1)), _as_out(ctx, order, 1)]


register("TopKV2", infer=_top_k_infer, attrs=("T", "Tk", "sorted", "index_type"), const_inputs=(1,),
         dtypes=SIGNED_NUMBER,  # IREE 3.13 cannot lower its sort on unsigned types
         lower=_top_k_lower, kernel=_top_k_kernel, output_args=("values", "indices"))


# -- data-dependent output shapes: Where (one input), Unique -----------------------------------------
# No lowering: their output sizes depend on input values. They run on their kernels.

def _where_infer(ctx):
    if len(ctx.inputs) != 1:
        raise ctx.error("Where with 3 inputs is not supported here; TF writes SelectV2 for it")
    return [TensorSpec(I64, (None, ctx.inputs[0].rank))]


register("Where", infer=_where_infer, attrs=("T",),
         kernel=lambda ctx, x: np.argwhere(x).astype(I64))


def _unique_infer(ctx):
    x = ctx.inputs[0]
    if x.rank not in (None, 1):
        raise ctx.error(f"expects a vector, got {x}")
    n = x.shape[0] if x.shape is not None else None
    return [TensorSpec(x.dtype, (None,)), TensorSpec(np.dtype(ctx.attr("out_idx", np.int32)), (n,))]


def _unique_kernel(ctx, x):
    """Unique values in order of first appearance (TF), and each element's position among them."""
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(order.size)
    return [x[np.sort(first)], rank_of[inverse.ravel()].astype(ctx.out(1).dtype)]


register("Unique", infer=_unique_infer, attrs=("T", "out_idx"), kernel=_unique_kernel,
         dtypes=ANY + ("string",),
         output_args=("y", "idx"))
