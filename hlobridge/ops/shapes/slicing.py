"""Slices and their inverse, padding: Slice, StridedSlice, StridedSliceGrad, Pad, PadV2, MirrorPad.

The begin/end/size and paddings inputs are compile-time constants (StableHLO's slice and pad
take them as attributes; a cluster reads them as constant inputs, const_analysis.py). Inside a
loop body they cannot be: there a Slice's `begin` with constant, explicit sizes, and a
StridedSlice's `begin`/`end` when every entry is a shrunk index or a whole dimension, lower to
stablehlo.dynamic_slice, as tf2xla's SliceOp and StridedSliceOp do (keras-hub's generate()
slices the token at the loop's index). Compiled, such a start is clamped into range,
as XLA does; TensorFlow's CPU kernel (and hlobridge's) raises instead.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import dynamic_shapes
from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import as_out, ints, out_spec, reshape_to_out, unknown_vector_dims, value_of
from ..registry import register



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
    partial = ctx.inputs[2].partial
    if begin is not None and size is None and partial is not None and x.shape is not None:
        # a size from tf.shape arithmetic ([seq, -1]): its known entries are sizes, -1 the rest
        return [out_spec(ctx, [None if np.isnan(s) else (None if d is None else d - b) if s == -1 else int(s)
                               for d, b, s in zip(x.shape, ints(begin), partial)])]
    if begin is None and size is not None and all(s >= 0 for s in ints(size)):
        bad = [(s, d) for s, d in zip(ints(size), x.shape or ()) if d is not None and s > d]
        if bad:
            raise ctx.error(f"slice size {bad[0][0]} is larger than the dimension's {bad[0][1]}")
        return [out_spec(ctx, ints(size))]  # a run-time begin: the sizes are the shape
    if x.shape is None or begin is None or size is None:
        return [out_spec(ctx, None if x.shape is None else (None,) * x.rank)]
    bounds = _slice_bounds(ctx, x.shape, begin, size)
    return [out_spec(ctx, [None if hi is None else hi - lo for lo, hi in bounds])]


def _slice_lower(ctx, x, begin, size):
    if ctx.inputs[2].value is None and ctx.inputs[1].value is not None:
        return _run_time_size_slice(ctx, x, ints(ctx.const(1)), size)
    if ctx.inputs[1].value is None:  # a run-time begin: dynamic_slice of the constant sizes
        sizes = ints(ctx.const(2))
        if any(s < 0 for s in sizes):
            raise ctx.lowering_error(f"begin is computed at run time, so size {sizes} must be explicit "
                                     f"(no -1), as XLA requires")
        return hlo.dynamic_slice(x, [hlo.reshape(hlo.slice(begin, [i], [i + 1]), []) for i in range(len(sizes))],
                                 sizes)
    bounds = _slice_bounds(ctx, hlo.shape_of(x), ctx.const(1), ctx.const(2))
    return hlo.slice(x, [lo for lo, _ in bounds], [hi for _, hi in bounds])


def _run_time_size_slice(ctx, x, begin, size):
    """x[begin : begin + size] with `size` computed at run time (a position table cut to
    tf.shape(ids)[1]): stablehlo.real_dynamic_slice, its limits begin + size, or a dimension's
    end where an entry of size is -1."""
    i32 = np.int32
    starts = hlo.constant(np.asarray(begin, i32))
    ends = [dynamic_shapes.dim_size(x, i) if d is None else d for i, d in enumerate(hlo.shape_of(x))]
    traced = [dynamic_shapes.traced_entry(size, k) for k in range(len(begin))]
    if all(t is not None and (t[0] == "const" or b == 0) for t, b in zip(traced, begin)):
        # sizes known on the host (tf.shape(ids)[1], -1): limits IREE need not read back
        limit = dynamic_shapes.shape_tensor([
            e if t == ("const", -1) else b + t[1] if t[0] == "const" else dynamic_shapes.dim_size(t[1], t[2])
            for t, b, e in zip(traced, begin, ends)])
    else:
        size = hlo.convert(size, i32)
        limit = hlo.select(hlo.compare("LT", size, hlo.constant(np.zeros(len(begin), i32))),
                           dynamic_shapes.shape_tensor(ends), hlo.binary("add", starts, size))
    strides = hlo.constant(np.ones(len(begin), i32))
    return dynamic_shapes.real_slice(x, starts, limit, strides, ctx.out().shape)


def _slice_kernel(ctx, x, begin, size):
    bounds = _slice_bounds(ctx, x.shape, begin, size)
    return x[tuple(slice(lo, hi) for lo, hi in bounds)]


register("Slice", infer=_slice_infer, attrs=("T", "Index"), const_inputs=(1, 2), dynamic_inputs=(1, 2),
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


_MARK = 1 << 40  # begin values that say which spec entry a shrunk dimension came from


def _dynamic_spec(ctx) -> int | None:
    """The spec's length when begin/end are computed at run time and the slice is still
    XLA's dynamic case (tf2xla's StridedSliceOp): strides constant, and each entry an ellipsis,
    a new axis, a shrunk index (size 1, at a run-time position) or a whole dimension (both
    masks, stride 1); else None."""
    strides = value_of(ctx, 3)
    if strides is None:
        return None
    masks = {m: ctx.attr(m, 0) for m in STRIDED_SLICE_ATTRS[2:]}
    for j, step in enumerate(ints(strides)):
        bit = 1 << j
        whole = masks["begin_mask"] & masks["end_mask"] & bit and step == 1
        if not (masks["ellipsis_mask"] & bit or masks["new_axis_mask"] & bit or masks["shrink_axis_mask"] & bit
                or whole):
            return None
    return len(ints(strides))


def _strided_slice_infer(ctx):
    x = ctx.inputs[0]
    consts = [value_of(ctx, i) for i in (1, 2, 3)]
    n = _dynamic_spec(ctx) if x.shape is not None and None not in x.shape else None
    if (consts[0] is None or consts[1] is None) and n is not None:  # shapes from the masks alone
        consts = [np.zeros(n, np.int64), np.zeros(n, np.int64), consts[2]]
    if x.shape is None or any(c is None for c in consts):
        return [out_spec(ctx, None)]
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
    return [out_spec(ctx, shape)]


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


def _dynamic_strided_slice(ctx, x, begin):
    """A run-time begin (_dynamic_spec's case): dynamic_slice of size 1 at each shrunk index
    (a negative one counts from the end; XLA clamps the rest) and whole dims elsewhere."""
    n = _dynamic_spec(ctx)
    if n is None:
        raise ctx.lowering_error("begin/end are computed at run time; hlobridge compiles that only as XLA "
                                 "does: constant strides, every entry a shrunk index or a whole dimension")
    shape, dtype = hlo.shape_of(x), ctx.inputs[1].dtype
    per_dim, _ = dense_index(ctx, strided_index(ctx, [_MARK + j for j in range(n)], [0] * n, ctx.const(3)), len(shape))
    starts, sizes = [], []
    for sel, d in zip(per_dim, shape):
        if isinstance(sel, slice):
            starts.append(hlo.constant(np.zeros((), dtype)))
            sizes.append(d)
            continue
        b = hlo.reshape(hlo.slice(begin, [sel - _MARK], [sel - _MARK + 1]), [])
        wrapped = hlo.add(b, hlo.constant(np.array(d, dtype)))
        starts.append(hlo.select(hlo.compare("LT", b, hlo.constant(np.zeros((), dtype))), wrapped, b))
        sizes.append(1)
    return reshape_to_out(ctx, hlo.dynamic_slice(x, starts, sizes))


def _strided_slice_lower(ctx, x, begin, *_):
    if ctx.inputs[1].value is None or ctx.inputs[2].value is None:
        return _dynamic_strided_slice(ctx, x, begin)
    if None in hlo.shape_of(x):
        return _slice_beside_dynamic(ctx, x)
    starts, limits, steps, flipped = _strided_windows(ctx, hlo.shape_of(x), *(ctx.const(i) for i in (1, 2, 3)))
    return reshape_to_out(ctx, hlo.slice(hlo.reverse(x, flipped), starts, limits, steps))


def _slice_beside_dynamic(ctx, x):
    """A strided slice of a tensor with `?` dimensions that takes each `?` whole (x[:, 1:3],
    x[tf.newaxis]) or one non-negative index of it (a BERT's first token, h[:, 0]): a
    real_dynamic_slice of the static dims (docs/dynamic_shapes.md)."""
    shape = hlo.shape_of(x)
    per_dim, _ = dense_index(ctx, strided_index(ctx, *(ctx.const(i) for i in (1, 2, 3))), len(shape))
    starts, limits, steps = [], [], []
    for sel, d in zip(per_dim, shape):
        if d is None and not isinstance(sel, slice) and sel >= 0:  # x[:, 0] of a `?` length: one row
            starts.append(sel), limits.append(sel + 1), steps.append(1)
            continue
        if d is None:
            if not (isinstance(sel, slice) and sel.start in (None, 0) and sel.stop is None and sel.step in (None, 1)):
                raise dynamic_shapes.DynamicDimError(f"a strided slice {sel} of a `?` dimension")
            starts.append(0), limits.append(None), steps.append(1)
            continue
        start, stop, step = _dim_window(ctx, sel, d)
        if step < 0:
            raise dynamic_shapes.DynamicDimError("a reversing strided slice beside a `?` dimension")
        n = len(range(start, stop, step))
        starts.append(start), limits.append(start + (n - 1) * step + 1 if n else start), steps.append(step)
    if starts != [0] * len(shape) or steps != [1] * len(shape) or \
            any(hi is not None and hi != d for hi, d in zip(limits, shape)):
        x = dynamic_shapes.slice(x, starts, limits, steps)
    return reshape_to_out(ctx, x)


def _strided_slice_kernel(ctx, x, begin, end, strides):
    return as_out(ctx, x[tuple(strided_index(ctx, begin, end, strides))])


register("StridedSlice", infer=_strided_slice_infer, attrs=STRIDED_SLICE_ATTRS, const_inputs=(1, 2, 3),
         dynamic_inputs=(1, 2),
         lower=_strided_slice_lower, kernel=_strided_slice_kernel)

# StridedSliceGrad(shape, begin, end, strides, dy): zeros of `shape` with dy where StridedSlice
# read (strided_place).


def _strided_slice_grad_infer(ctx):
    shape = value_of(ctx, 0)
    return [TensorSpec(ctx.inputs[4].dtype, unknown_vector_dims(ctx, 0) if shape is None else tuple(ints(shape)))]


def strided_place(ctx, shape, values, fill, begin, end, strides):
    """A `shape` tensor holding `values` where StridedSlice(begin, end, strides) reads and the
    scalar Value `fill` elsewhere (values: the slice's elements in any shape of their count),
    as a pad of the values (edges to the window, interior holes for the stride), reversed
    where the forward slice reverses; None when the slice is empty."""
    starts, limits, steps, flipped = _strided_windows(ctx, shape, begin, end, strides)
    counts = [len(range(a, b, s)) for a, b, s in zip(starts, limits, steps)]
    if 0 in counts:
        return None
    high = [d - (a + (n - 1) * s + 1) for d, a, n, s in zip(shape, starts, counts, steps)]
    return hlo.reverse(hlo.pad(hlo.reshape(values, counts), fill, starts, high, [s - 1 for s in steps]), flipped)


def _strided_slice_grad_lower(ctx, *operands):
    shape, zero = list(ctx.out().shape), np.zeros((), ctx.out().dtype)
    dx = strided_place(ctx, shape, operands[4], hlo.constant(zero), *(ctx.const(i) for i in (1, 2, 3)))
    return hlo.constant(np.zeros(shape, ctx.out().dtype)) if dx is None else dx


def _strided_slice_grad_kernel(ctx, shape, begin, end, strides, dy):
    dx = np.zeros(ints(shape), ctx.out().dtype)
    dx[tuple(strided_index(ctx, begin, end, strides))] = dy
    return dx


register("StridedSliceGrad", infer=_strided_slice_grad_infer, attrs=STRIDED_SLICE_ATTRS, const_inputs=(0, 1, 2, 3),
         lower=_strided_slice_grad_lower, kernel=_strided_slice_grad_kernel)


# -- Pad, PadV2, MirrorPad --------------------------------------------------------------------------

def _paddings(ctx, values, rank):
    p = np.asarray(values).reshape(-1, 2)
    if len(p) != rank or (p < 0).any():
        raise ctx.error(f"paddings {p.tolist()} must be [rank={rank}, 2] and non-negative")
    return [(int(lo), int(hi)) for lo, hi in p]


def _pad_infer(ctx):
    x, p = ctx.inputs[0], value_of(ctx, 1)
    if x.shape is None and p is None:
        return [out_spec(ctx, None)]
    if p is None:
        return [out_spec(ctx, (None,) * x.rank)]
    pads = _paddings(ctx, p, len(p))
    shape = x.shape if x.shape is not None else (None,) * len(pads)
    if len(shape) != len(pads):
        raise ctx.error(f"paddings has {len(pads)} rows for {x}")
    if ctx.op == "MirrorPad":
        _check_mirror(ctx, shape, pads)
    return [out_spec(ctx, [None if d is None else d + lo + hi for d, (lo, hi) in zip(shape, pads)])]


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
    return as_out(ctx, np.pad(x, pads, constant_values=fill))


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
    return as_out(ctx, np.pad(x, _paddings(ctx, p, x.ndim), mode=mode))


register("Pad", infer=_pad_infer, attrs=("T", "Tpaddings"), const_inputs=(1,), lower=_pad_lower,
         kernel=_pad_kernel)
register("PadV2", infer=_pad_infer, attrs=("T", "Tpaddings"), const_inputs=(1,), lower=_pad_lower,
         kernel=_pad_kernel)
register("MirrorPad", infer=_pad_infer, attrs=("T", "Tpaddings", "mode"), const_inputs=(1,),
         lower=_mirror_lower, kernel=_mirror_kernel)
