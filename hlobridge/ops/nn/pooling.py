"""Pooling, 2-D and 3-D, and its gradients: MaxPool, MaxPoolV2, AvgPool, MaxPool3D, AvgPool3D,
MaxPoolGrad, MaxPoolGradV2, MaxPool3DGrad, AvgPoolGrad, AvgPool3DGrad, and the second-order
MaxPoolGradGrad, MaxPoolGradGradV2, MaxPool3DGradGrad.

As TensorFlow's CPU kernels: padding never wins a max (it is the lowest value), AvgPool divides
by the number of real (non-padding) elements, MaxPoolGrad sends each window's gradient to its
first maximum in row-major order, and MaxPoolGradGrad gives each window the grad-of-grad value
at that same element (tf2xla's pooling_ops.cc: the gradient of MaxPoolGrad, linear in its grad).
TensorFlow's CPU MaxPool3DGrad alone differs on ties: it sends the gradient to every element
within 1e-5 of the maximum (XLA, to one only); hlobridge follows the CPU kernel.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import acc_dtype, known_dims, lowest, require_rank, scalar
from ..registry import register
from ..typesets import FLOAT, SIGNED
from .conv import shape_input
from .geometry import (Format, Window, np_pad, np_windows, spatial_attr, spatial_rank, taps, valid_counts,
                       window)


def _pool_window(ctx, shape) -> tuple[Format, Window]:
    fmt = Format(ctx, spatial_rank(ctx))
    return fmt, window(ctx, fmt, fmt.sizes(shape), spatial_attr(ctx, fmt, "ksize"), dilated=False)


def _pool_infer(ctx):
    rank = spatial_rank(ctx) + 2
    x = ctx.inputs[0]
    require_rank(ctx, 0, (rank,))
    xs = known_dims(x, rank)
    fmt, win = _pool_window(ctx, xs)
    return [TensorSpec(x.dtype, fmt.shape(xs[0], win.out, xs[fmt.channel]))]


def _window_args(fmt: Format, win: Window):
    return fmt.full(win.kernel, 1), fmt.full(win.strides, 1), fmt.full(win.pads, (0, 0))


def _max_pool_lower(ctx, x, *_ksize_strides):
    fmt, win = _pool_window(ctx, hlo.shape_of(x))
    dtype = ctx.out().dtype
    return hlo.reduce_window(x, scalar(lowest(dtype), dtype), *_window_args(fmt, win), op="maximum")


def _avg_pool_lower(ctx, x):
    """Sum over the window, divided by the count of real elements (a constant: shapes are static)."""
    fmt, win = _pool_window(ctx, hlo.shape_of(x))
    out = ctx.out()
    total = hlo.reduce_window(x, scalar(0, out.dtype), *_window_args(fmt, win), op="add")
    counts = hlo.constant(valid_counts(fmt.sizes(hlo.shape_of(x)), win).astype(out.dtype))
    return hlo.divide(total, hlo.broadcast_in_dim(counts, out.shape, fmt.spatial))


def np_pool(ctx, x, *_ksize_strides):
    """NumPy reference of the forward pooling ops (max, or average over real elements)."""
    fmt, win = _pool_window(ctx, x.shape)
    x = fmt.to_last(x)
    kernel_axes = tuple(range(-fmt.rank, 0))
    if ctx.op.startswith("MaxPool"):
        y = np_windows(np_pad(x, win.pads, lowest(x.dtype)), win).max(axis=kernel_axes)
    else:
        sums = np_windows(np_pad(x.astype(acc_dtype(x.dtype)), win.pads), win).sum(axis=kernel_axes)
        y = sums / valid_counts(x.shape[1:-1], win)[None, ..., None]
    return fmt.from_last(y).astype(ctx.out().dtype)


register("MaxPool", infer=_pool_infer, lower=_max_pool_lower, kernel=np_pool,
         dtypes=FLOAT + SIGNED + ("uint8", "uint16"),
         attrs=("T", "ksize", "strides", "padding", "explicit_paddings", "data_format"))
register("MaxPoolV2", infer=_pool_infer, lower=_max_pool_lower, kernel=np_pool, const_inputs=(1, 2),
         dtypes=FLOAT + SIGNED + ("uint8", "uint16"), attrs=("T", "padding", "data_format"))
register("AvgPool", infer=_pool_infer, lower=_avg_pool_lower, kernel=np_pool, dtypes=FLOAT,
         attrs=("T", "ksize", "strides", "padding", "data_format"))
register("MaxPool3D", infer=_pool_infer, lower=_max_pool_lower, kernel=np_pool,
         dtypes=("float16", "bfloat16", "float32"), attrs=("T", "ksize", "strides", "padding", "data_format"))
register("AvgPool3D", infer=_pool_infer, lower=_avg_pool_lower, kernel=np_pool, dtypes=FLOAT,
         attrs=("T", "ksize", "strides", "padding", "data_format"))

# -- gradients ---------------------------------------------------------------------------------------


def _tap_slices(fmt: Format, win: Window, out):
    """Per kernel tap, in row-major order: (start, limit, strides) slicing the padded input at
    this tap for every output position."""
    _, strides, _ = _window_args(fmt, win)
    for tap, _index in taps(win):
        start = fmt.full(tap, 0)
        yield start, [b + (o - 1) * s + 1 for b, o, s in zip(start, out, strides)], strides


def _first_max_taps(fmt: Format, win: Window, xp, best):
    """Per kernel tap: (start, limit, strides, first) where `first` marks the outputs whose window
    holds, at this tap, its first element equal to `best` (the window's maximum). TensorFlow's
    CPU kernels scan each window in row-major order and take the first maximum."""
    taken = None
    for start, limit, strides in _tap_slices(fmt, win, hlo.shape_of(best)):
        hit = hlo.compare("EQ", hlo.slice(xp, start, limit, strides), best)
        first = hit if taken is None else hlo.binary("and", hit, hlo.unary("not", taken))
        taken = hit if taken is None else hlo.binary("or", taken, hit)
        yield start, limit, strides, first


def _near_max_taps(fmt: Format, win: Window, xp, best):
    """Per kernel tap: (start, limit, strides, near) where `near` marks every element within 1e-5
    of `best`: TF's CPU MaxPool3DGrad sends the window's gradient to all of them (its
    LaunchMaxPooling3dGradOp selects |in - out| < 1e-5), not to the first only."""
    for start, limit, strides in _tap_slices(fmt, win, hlo.shape_of(best)):
        diff = hlo.unary("abs", hlo.subtract(hlo.slice(xp, start, limit, strides), best))
        yield start, limit, strides, hlo.compare("LT", diff, hlo.scalar_like(_TIE_TOLERANCE, best))


_TIE_TOLERANCE = 1e-5


def _tiles(win: Window) -> bool:
    """Whether the windows tile the input: no padding and strides equal to the kernel (2x2
    pooling with stride 2, the usual case), so that every element lies in at most one window."""
    return win.strides == win.kernel and all(lo == 0 and hi == 0 for lo, hi in win.pads)


def _tiled_max_pool_grad(fmt: Format, win: Window, x, g, x_dtype, dtype):
    """MaxPoolGrad of windows that tile x, with no window sums: each spatial axis split into
    (window, tap), the first maximum's tap found by one min-reduction over the taps, and every
    element of x given its window's gradient where its tap is that one. Two dispatches, each
    one pass over x, where the general form scatters each tap through an interior pad (cnn_train:
    conv1's gradient took 6% of the step)."""
    shape = hlo.shape_of(x)
    split, taps_at, windows_at, covered = [], [], [], []  # covered: x's part the windows reach
    for axis, size in enumerate(shape):
        windows_at.append(len(split))
        if axis in fmt.spatial:
            i = fmt.spatial.index(axis)
            taps_at.append(len(split) + 1)
            split += [win.out[i], win.kernel[i]]
            covered.append(win.out[i] * win.kernel[i])
        else:
            split.append(size)
            covered.append(size)
    xs = hlo.reshape(hlo.slice(x, [0] * len(shape), covered) if covered != shape else x, split)
    best = hlo.reduce(xs, scalar(lowest(x_dtype), x_dtype), taps_at, op="maximum")
    # Row-major tap number of each element within its window (kh * KW + kw): a broadcast of a
    # tiny constant, which every fusion copies into its readers.
    n_taps = int(np.prod(win.kernel))
    tap = hlo.broadcast_in_dim(hlo.constant(np.arange(n_taps, dtype=np.int32).reshape(win.kernel)), split, taps_at)
    is_max = hlo.compare("EQ", xs, hlo.broadcast_in_dim(best, split, windows_at))
    first = hlo.reduce(hlo.select(is_max, tap, hlo.splat(n_taps, split, np.int32)), scalar(n_taps, np.int32),
                       taps_at, op="minimum")
    chosen = hlo.compare("EQ", tap, hlo.broadcast_in_dim(first, split, windows_at))
    dx = hlo.select(chosen, hlo.broadcast_in_dim(g, split, windows_at), hlo.splat(0, split, dtype))
    dx = hlo.reshape(dx, covered)
    if covered != shape:  # trailing rows/columns no window reaches get no gradient
        dx = hlo.pad(dx, scalar(0, dtype), [0] * len(shape), [s - c for s, c in zip(shape, covered)])
    return dx


def _max_pool_grad_lower(ctx, x, y, g, *_ksize_strides):
    """Each window's gradient goes to its maximum: the first in row-major order (MaxPoolGrad,
    MaxPoolGradV2), or every element within 1e-5 of orig_output (MaxPool3DGrad), as TF's CPU
    kernels.

    Not stablehlo.select_and_scatter: IREE cannot legalize it for overlapping windows, and for
    non-overlapping ones it breaks ties toward a later maximum. Instead x is padded (-inf, or NaN
    which is near nothing: padding never receives a gradient), the window taps are visited in
    row-major order, and each output's gradient is placed on the chosen taps by an
    interior-padded stablehlo.pad; the sum is cropped back to x's shape.
    """
    shape = hlo.shape_of(x)
    fmt, win = _pool_window(ctx, shape)
    x_dtype, dtype = ctx.inputs[0].dtype, ctx.out().dtype
    if fmt.rank == 2 and _tiles(win):
        return _tiled_max_pool_grad(fmt, win, x, g, x_dtype, dtype)
    lows, highs = zip(*fmt.full(win.pads, (0, 0)))
    if fmt.rank == 3:
        xp = hlo.pad(x, scalar(np.nan, x_dtype), lows, highs)
        chosen = _near_max_taps(fmt, win, xp, y)
    else:
        xp = hlo.pad(x, scalar(lowest(x_dtype), x_dtype), lows, highs)
        kernel, strides, _ = _window_args(fmt, win)
        best = hlo.reduce_window(xp, scalar(lowest(x_dtype), x_dtype), kernel, strides, [(0, 0)] * len(shape),
                                 op="maximum")
        chosen = _first_max_taps(fmt, win, xp, best)
    padded = hlo.shape_of(xp)
    dx = None
    for start, limit, strides, mask in chosen:
        placed = hlo.pad(hlo.select(mask, g, hlo.scalar_like(0, g)), scalar(0, dtype), start,
                         [p - e for p, e in zip(padded, limit)], [s - 1 for s in strides])
        dx = placed if dx is None else hlo.add(dx, placed)
    return hlo.slice(dx, lows, [lo + d for lo, d in zip(lows, shape)])


def _np_max_pool_grad(ctx, x, y, g, *_ksize_strides):
    """NumPy twin of _max_pool_grad_lower."""
    fmt, win = _pool_window(ctx, x.shape)
    x, y, g = fmt.to_last(x), fmt.to_last(y), fmt.to_last(g)
    crop = (slice(None), *(slice(lo, lo + size) for size, (lo, _) in zip(x.shape[1:-1], win.pads)))
    if fmt.rank == 3:
        xp = np_pad(x, win.pads, np.nan)
        dx = np.zeros(xp.shape, acc_dtype(g.dtype))
        for _tap, index in taps(win):
            with np.errstate(invalid="ignore"):
                dx[index] += np.where(np.abs(xp[index] - y) < x.dtype.type(_TIE_TOLERANCE), g, 0)
        return fmt.from_last(dx[crop]).astype(ctx.out().dtype)
    xp = np_pad(x, win.pads, lowest(x.dtype))
    windows = np_windows(xp, win)
    n, *out, c = windows.shape[:fmt.rank + 2]
    first = np.unravel_index(windows.reshape(n, *out, c, -1).argmax(axis=-1), win.kernel)
    positions = [np.arange(o).reshape([-1 if a == d else 1 for a in range(fmt.rank)])[None, ..., None] * s + tap
                 for d, (o, s, tap) in enumerate(zip(out, win.strides, first))]
    dx = np.zeros(xp.shape, acc_dtype(g.dtype))
    np.add.at(dx, (np.arange(n).reshape(-1, *[1] * (fmt.rank + 1)), *positions, np.arange(c)), g)
    return fmt.from_last(dx[crop]).astype(ctx.out().dtype)


def _max_pool_grad_infer(ctx):
    """MaxPoolGrad*: orig_input's shape, grad's type (MaxPool3DGrad's TInput may differ from T)."""
    return [TensorSpec(ctx.inputs[2].dtype, ctx.inputs[0].shape)]


# -- second order: the gradient of MaxPoolGrad with respect to its grad input ----------------------


def _max_pool_grad_grad_infer(ctx):
    """orig_output's shape: one value per pooling window."""
    return [TensorSpec(ctx.inputs[2].dtype, ctx.inputs[1].shape)]


def _max_pool_grad_grad_lower(ctx, x, y, gg, *_ksize_strides):
    """Each window takes gg at its first element equal to orig_output, in row-major order, or 0
    (TF's CPU MaxPoolGradGrad compares with the orig_output it is given). Padding is NaN, which
    equals nothing, so it is never picked."""
    shape = hlo.shape_of(x)
    fmt, win = _pool_window(ctx, shape)
    dtype = ctx.out().dtype
    lows, highs = zip(*fmt.full(win.pads, (0, 0)))
    xp = hlo.pad(x, scalar(np.nan, ctx.inputs[0].dtype), lows, highs)
    gp = hlo.pad(gg, scalar(0, dtype), lows, highs)
    picked = hlo.splat(0, hlo.shape_of(y), dtype)
    for start, limit, strides, first in _first_max_taps(fmt, win, xp, y):
        picked = hlo.select(first, hlo.slice(gp, start, limit, strides), picked)
    return picked


def _np_max_pool_grad_grad(ctx, x, y, gg, *_ksize_strides):
    fmt, win = _pool_window(ctx, x.shape)
    x, y, gg = fmt.to_last(x), fmt.to_last(y), fmt.to_last(gg)
    xw = np_windows(np_pad(x.astype(np.float64), win.pads, np.nan), win)
    gw = np_windows(np_pad(gg, win.pads), win)
    n, *out, c = xw.shape[:fmt.rank + 2]
    hits = (xw == y.astype(np.float64)[(...,) + (None,) * fmt.rank]).reshape(n, *out, c, -1)
    picked = np.take_along_axis(gw.reshape(n, *out, c, -1), hits.argmax(axis=-1)[..., None], axis=-1)[..., 0]
    return fmt.from_last(np.where(hits.any(axis=-1), picked, 0)).astype(ctx.out().dtype)


def _avg_pool_grad_infer(ctx):
    g = ctx.inputs[1]
    fmt = Format(ctx, spatial_rank(ctx))
    gs = known_dims(g, fmt.rank + 2)
    return [TensorSpec(g.dtype, shape_input(ctx, 0, None, fmt.shape(gs[0], (None,) * fmt.rank, gs[fmt.channel])))]


def _avg_pool_grad_lower(ctx, _, g):
    """g / counts, spread back over each window: pad with stride-1 holes, then window-sum."""
    out = ctx.out()
    fmt, win = _pool_window(ctx, out.shape)
    dtype = out.dtype
    counts = hlo.constant(valid_counts(fmt.sizes(out.shape), win).astype(dtype))
    g = hlo.divide(g, hlo.broadcast_in_dim(counts, hlo.shape_of(g), fmt.spatial))
    lows, highs = zip(*fmt.full(win.transposed_pads(fmt.sizes(out.shape)), (0, 0)))
    spread = hlo.pad(g, scalar(0, dtype), lows, highs, fmt.full([s - 1 for s in win.strides], 0))
    rank = len(out.shape)
    return hlo.reduce_window(spread, scalar(0, dtype), fmt.full(win.kernel, 1), [1] * rank, [(0, 0)] * rank)


def _np_avg_pool_grad(ctx, _, g):
    out = ctx.out()
    fmt, win = _pool_window(ctx, out.shape)
    n, *sizes, c = fmt.to_last(np.empty(out.shape, np.int8)).shape
    share = fmt.to_last(g).astype(acc_dtype(g.dtype)) / valid_counts(sizes, win)[None, ..., None]
    dx = np.zeros((n, *(size + lo + hi for size, (lo, hi) in zip(sizes, win.pads)), c), share.dtype)
    for _tap, index in taps(win):
        dx[index] += share
    crop = (slice(None), *(slice(lo, lo + size) for size, (lo, _) in zip(sizes, win.pads)))
    return fmt.from_last(dx[crop]).astype(out.dtype)


_POOL_ATTRS = ("T", "ksize", "strides", "padding", "data_format")
_MAX_POOL_GRADS = {  # op -> (attributes, constant inputs)
    "MaxPoolGrad": (_POOL_ATTRS + ("explicit_paddings",), ()),
    "MaxPoolGradV2": (("T", "padding", "data_format"), (3, 4)),
    "MaxPool3DGrad": (_POOL_ATTRS + ("TInput",), ()),
}
for _op, (_attrs, _consts) in _MAX_POOL_GRADS.items():
    register(_op, infer=_max_pool_grad_infer, lower=_max_pool_grad_lower, kernel=_np_max_pool_grad, dtypes=FLOAT,
             attrs=_attrs, const_inputs=_consts)
_MAX_POOL_GRAD_GRADS = {
    "MaxPoolGradGrad": (_POOL_ATTRS, ()),
    "MaxPoolGradGradV2": (("T", "padding", "data_format"), (3, 4)),
    "MaxPool3DGradGrad": (_POOL_ATTRS, ()),
}
for _op, (_attrs, _consts) in _MAX_POOL_GRAD_GRADS.items():
    register(_op, infer=_max_pool_grad_grad_infer, lower=_max_pool_grad_grad_lower, kernel=_np_max_pool_grad_grad,
             dtypes=FLOAT, attrs=_attrs, const_inputs=_consts)
for _op in ("AvgPoolGrad", "AvgPool3DGrad"):
    register(_op, infer=_avg_pool_grad_infer, lower=_avg_pool_grad_lower, kernel=_np_avg_pool_grad, dtypes=FLOAT,
             attrs=_POOL_ATTRS, const_inputs=(0,))
