"""3-D convolution and pooling: Conv3D, MaxPool3D, AvgPool3D (data_format NDHWC or NCDHW).

The same rules as the 2-D ops in nn.py, over three spatial dims: SAME padding puts the odd
element after, AvgPool3D divides by the number of real (non-padding) elements, Conv3D's
filter is [KD, KH, KW, C/groups, O]. TensorFlow's own CPU kernel runs neither NCDHW nor
dilations; those follow XLA (tf2xla's conv_ops), which takes both.

Conv3D lowers to stablehlo.convolution, which IREE 3.13 runs as a direct loop (slow on CPU,
see nn.py's im2col note); the 3-D ops are rare enough that correctness comes first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .. import dtypes
from ..spec import TensorSpec
from .registry import register
from .typesets import FLOAT

RANK = 5


class _Format3D:
    """Where batch, spatial and channel axes sit for NDHWC or NCDHW."""

    def __init__(self, ctx):
        name = ctx.attr("data_format", "NDHWC")
        if name not in ("NDHWC", "NCDHW"):
            raise ctx.error(f"data_format '{name}' is not supported (NDHWC or NCDHW)")
        self.first = name == "NCDHW"
        self.channel = 1 if self.first else 4
        self.spatial = (2, 3, 4) if self.first else (1, 2, 3)
        self.io = "[b, f, 0, 1, 2]" if self.first else "[b, 0, 1, 2, f]"

    def dhw(self, values) -> tuple:
        return tuple(values[a] for a in self.spatial)

    def shape(self, n, dhw, c) -> tuple:
        return (n, c, *dhw) if self.first else (n, *dhw, c)

    def full(self, dhw, fill) -> list:
        out = [fill] * RANK
        for a, v in zip(self.spatial, dhw):
            out[a] = v
        return out

    def to_last(self, x: np.ndarray) -> np.ndarray:
        return x.transpose(0, 2, 3, 4, 1) if self.first else x

    def from_last(self, x: np.ndarray) -> np.ndarray:
        return x.transpose(0, 4, 1, 2, 3) if self.first else x


@dataclass(frozen=True)
class _Window3D:
    kernel: tuple
    strides: tuple
    dilations: tuple
    pads: tuple   # (lo, hi) per spatial dim; None where the input size is unknown
    out: tuple    # output sizes; None where unknown


def _per_axis(ctx, fmt: _Format3D, name: str, default=None) -> tuple:
    values = list(ctx.attr(name, default))
    if len(values) != RANK:
        raise ctx.error(f"{name} must have {RANK} elements, got {values}")
    if values[0] != 1 or values[fmt.channel] != 1:
        raise ctx.error(f"{name} must be 1 on the batch and channel dimensions, got {values}")
    return fmt.dhw(values)


def _window(ctx, fmt: _Format3D, in_dhw, kernel, dilations=(1, 1, 1)) -> _Window3D:
    strides = _per_axis(ctx, fmt, "strides")
    padding = ctx.attr("padding")
    if padding not in ("SAME", "VALID"):
        raise ctx.error(f"padding '{padding}' is not SAME or VALID")
    pads, out = [], []
    for size, k, s, d in zip(in_dhw, kernel, strides, dilations):
        eff = (k - 1) * d + 1
        if size is None:
            pads.append(None if padding == "SAME" else (0, 0))
            out.append(None)
            continue
        if padding == "VALID":
            pad = (0, 0)
        else:
            total = max((-(-size // s) - 1) * s + eff - size, 0)
            pad = (total // 2, total - total // 2)
        if size + pad[0] + pad[1] < eff:
            raise ctx.error(f"window of {eff} is larger than the padded input size {size + sum(pad)}")
        pads.append(pad)
        out.append((size + pad[0] + pad[1] - eff) // s + 1)
    return _Window3D(tuple(kernel), strides, tuple(dilations), tuple(pads), tuple(out))


def _dims(spec) -> tuple:
    return (None,) * RANK if spec.shape is None else spec.shape


def _require_rank5(ctx, i):
    shape = ctx.inputs[i].shape
    if shape is not None and len(shape) != RANK:
        raise ctx.error(f"input {i} must have rank 5, got {ctx.inputs[i]}")


def _acc(dtype):
    return np.float64 if dtypes.is_floating(dtype) else np.int64


def _np_pad(x, win: _Window3D, value=0):
    return np.pad(x, [(0, 0), *win.pads, (0, 0)], constant_values=value)


def _np_taps(xp: np.ndarray, win: _Window3D):
    """(tap, the padded channels-last input's elements each output reads through that tap)."""
    for tap in itertools.product(*(range(k) for k in win.kernel)):
        index = [slice(None)]
        for t, d, s, o in zip(tap, win.dilations, win.strides, win.out):
            index.append(slice(t * d, t * d + (o - 1) * s + 1, s))
        yield tap, xp[tuple(index)]


# -- Conv3D -----------------------------------------------------------------------------------------


def _conv_geometry(ctx, x_shape, w_shape):
    """(format, window, groups, output channels); unknown sizes stay None."""
    fmt = _Format3D(ctx)
    c, (kd, kh, kw, wi, wo) = x_shape[fmt.channel], w_shape
    if c is not None and wi is not None and (wi == 0 or c % wi):
        raise ctx.error(f"input channels {c} are not a multiple of the filter's input depth {wi}")
    groups = None if c is None or wi is None else c // wi
    if groups and wo is not None and wo % groups:
        raise ctx.error(f"filter output depth {wo} is not a multiple of the group count {groups}")
    dilations = _per_axis(ctx, fmt, "dilations", [1] * RANK)
    return fmt, _window(ctx, fmt, fmt.dhw(x_shape), (kd, kh, kw), dilations), groups, wo


def _conv_infer(ctx):
    _require_rank5(ctx, 0)
    _require_rank5(ctx, 1)
    xs = _dims(ctx.inputs[0])
    fmt, win, _, out_c = _conv_geometry(ctx, xs, _dims(ctx.inputs[1]))
    return [TensorSpec(ctx.inputs[0].dtype, fmt.shape(xs[0], win.out, out_c))]


def _conv_lower(ctx, x, w):
    fmt, win, groups, _ = _conv_geometry(ctx, hlo.shape_of(x), hlo.shape_of(w))
    out = ctx.out()
    return hlo.convolution(x, w, out.shape, out.dtype, layout=f"{fmt.io}x[0, 1, 2, i, o]->{fmt.io}",
                           strides=win.strides, padding=win.pads, rhs_dilation=win.dilations,
                           feature_group_count=groups)


def _np_conv(ctx, x, w):
    fmt, win, groups, out_c = _conv_geometry(ctx, x.shape, w.shape)
    acc = _acc(x.dtype)
    xp = _np_pad(fmt.to_last(x).astype(acc), win)
    n, c = xp.shape[0], xp.shape[-1]
    y = np.zeros((n, *win.out, groups, out_c // groups), acc)
    for tap, xs in _np_taps(xp, win):
        wg = w[tap].astype(acc).reshape(c // groups, groups, out_c // groups).transpose(1, 0, 2)
        y += np.einsum("...gc,gco->...go", xs.reshape(*xs.shape[:-1], groups, c // groups), wg)
    return fmt.from_last(y.reshape(n, *win.out, out_c)).astype(x.dtype)


register("Conv3D", infer=_conv_infer, lower=_conv_lower, kernel=_np_conv, dtypes=FLOAT,
         attrs=("T", "strides", "padding", "data_format", "dilations"))


# -- MaxPool3D, AvgPool3D ------------------------------------------------------------------------------


def _pool_geometry(ctx, shape):
    fmt = _Format3D(ctx)
    return fmt, _window(ctx, fmt, fmt.dhw(shape), _per_axis(ctx, fmt, "ksize"))


def _pool_infer(ctx):
    _require_rank5(ctx, 0)
    xs = _dims(ctx.inputs[0])
    fmt, win = _pool_geometry(ctx, xs)
    return [TensorSpec(ctx.inputs[0].dtype, fmt.shape(xs[0], win.out, xs[fmt.channel]))]


def _lowest(dtype):
    return -np.inf if dtypes.is_floating(dtype) else np.iinfo(dtype).min


def _valid_counts(sizes, win: _Window3D) -> np.ndarray:
    """[OD, OH, OW]: how many real (non-padding) elements each window covers."""
    counts = []
    for size, o, k, s, (lo, _) in zip(sizes, win.out, win.kernel, win.strides, win.pads):
        start = np.arange(o) * s - lo
        counts.append(np.minimum(start + k, size) - np.maximum(start, 0))
    return counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]


def _pool_lower(ctx, x):
    fmt, win = _pool_geometry(ctx, hlo.shape_of(x))
    out = ctx.out()
    args = (fmt.full(win.kernel, 1), fmt.full(win.strides, 1), fmt.full(win.pads, (0, 0)))
    if ctx.op == "MaxPool3D":
        return hlo.reduce_window(x, hlo.constant(np.array(_lowest(out.dtype), out.dtype)), *args, op="maximum")
    total = hlo.reduce_window(x, hlo.constant(np.zeros((), out.dtype)), *args, op="add")
    counts = hlo.constant(_valid_counts(fmt.dhw(hlo.shape_of(x)), win).astype(out.dtype))
    return hlo.divide(total, hlo.broadcast_in_dim(counts, out.shape, fmt.spatial))


def _np_pool(ctx, x):
    fmt, win = _pool_geometry(ctx, x.shape)
    xl = fmt.to_last(x)
    if ctx.op == "MaxPool3D":
        y = None
        for _, xs in _np_taps(_np_pad(xl, win, _lowest(x.dtype)), win):
            y = xs if y is None else np.maximum(y, xs)
    else:
        y = sum(xs for _, xs in _np_taps(_np_pad(xl.astype(_acc(x.dtype)), win), win))
        y = y / _valid_counts(xl.shape[1:4], win)[None, ..., None]
    return fmt.from_last(y).astype(x.dtype)


for _op, _types in (("MaxPool3D", ("float16", "bfloat16", "float32")), ("AvgPool3D", FLOAT)):
    register(_op, infer=_pool_infer, lower=_pool_lower, kernel=_np_pool, dtypes=_types,
             attrs=("T", "ksize", "strides", "padding", "data_format"))
