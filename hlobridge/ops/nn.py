"""Neural-network ops: matmuls, bias, convolutions, pooling, batch norm, softmax, and their gradients.

Every rule follows TensorFlow's CPU kernels, not just their mathematics: SAME padding puts the odd
pixel after, AvgPool divides by the number of real (non-padding) elements, MaxPoolGrad sends the
gradient to the first maximum of each window, FusedBatchNorm scales by rsqrt(var + eps) * scale
computed first, training-mode FusedBatchNorm reports the Bessel-corrected variance, and softmax
multiplies by the reciprocal of the sum.

Image ops take data_format NHWC or NCHW. Lowerings handle NCHW through StableHLO dimension
numbers or windows placed on the spatial axes; NumPy kernels transpose to NHWC and back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from .. import dtypes
from ..spec import TensorSpec
from . import elementwise
from .common import broadcast_shapes, same_as_input
from .registry import register
from .typesets import FLOAT, NUMBER, SIGNED

# -- shared helpers -----------------------------------------------------------------------------


def _scalar(value, dtype) -> hlo.Value:
    """A 0-d constant: the init value of reduce and reduce_window."""
    return hlo.constant(np.array(value, dtype=dtype))


def _lowest(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtypes.is_floating(dtype) else np.iinfo(dtype).min


def _acc_dtype(dtype):
    """NumPy accumulation type for a kernel: float64 keeps the oracle more exact than the device."""
    dtype = np.dtype(dtype)
    if dtypes.is_floating(dtype):
        return np.float64
    return np.int64 if dtype.kind in "iu" else dtype


def _reduce_keep(x, init, axis: int, op: str):
    """Reduce over one axis and broadcast the result back to x's shape (softmax's max and sum)."""
    shape = hlo.shape_of(x)
    r = hlo.reduce(x, init, [axis], op)
    return r, hlo.broadcast_in_dim(r, shape, [d for d in range(len(shape)) if d != axis])


def _dims(spec: TensorSpec, rank: int):
    """A spec's dims, or all-unknown dims of the expected rank when its rank is unknown."""
    return (None,) * rank if spec.shape is None else spec.shape


def _require_rank(ctx, i: int, ranks):
    shape = ctx.inputs[i].shape
    if shape is not None and len(shape) not in ranks:
        raise ctx.error(f"input {i} must have rank {' or '.join(map(str, ranks))}, got shape {list(shape)}")


# -- MatMul and BatchMatMul -------------------------------------------------------------------------


def _matmul_dims(ctx, a, b, ta: bool, tb: bool):
    m, k1 = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if k1 is not None and k2 is not None and k1 != k2:
        raise ctx.error(f"inner dimensions differ: {k1} vs {k2} (shapes {list(a)} and {list(b)})")
    return m, n


def _matmul_flags(ctx):
    if ctx.op in ("MatMul", "_FusedMatMul"):
        return bool(ctx.attr("transpose_a", False)), bool(ctx.attr("transpose_b", False))
    return bool(ctx.attr("adj_x", False)), bool(ctx.attr("adj_y", False))


def _matmul_out_dtype(ctx):
    return ctx.attr("Tout") if ctx.op == "BatchMatMulV3" else ctx.inputs[0].dtype


def _batch_matmul_infer(ctx):
    """MatMul: rank 2. BatchMatMul: equal batch dims. V2/V3: batch dims broadcast."""
    a, b = ctx.inputs[:2]
    ta, tb = _matmul_flags(ctx)
    if ctx.op in ("MatMul", "_FusedMatMul"):
        _require_rank(ctx, 0, (2,))
        _require_rank(ctx, 1, (2,))
        m, n = _matmul_dims(ctx, _dims(a, 2), _dims(b, 2), ta, tb)
        return [TensorSpec(a.dtype, (m, n))]
    if a.shape is None or b.shape is None:
        return [TensorSpec(_matmul_out_dtype(ctx), None)]
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ctx.error(f"operands must have rank >= 2, got {list(a.shape)} and {list(b.shape)}")
    m, n = _matmul_dims(ctx, a.shape, b.shape, ta, tb)
    if ctx.op == "BatchMatMul":
        if len(a.shape) != len(b.shape):
            raise ctx.error(f"operands must have the same rank, got {list(a.shape)} and {list(b.shape)}")
        batch = broadcast_shapes(ctx, a.shape[:-2], b.shape[:-2])
    else:
        batch = broadcast_shapes(ctx, a.shape[:-2], b.shape[:-2])
    return [TensorSpec(_matmul_out_dtype(ctx), tuple(batch) + (m, n))]


def _dot(ctx, a, b, out_shape, dtype):
    """dot_general over broadcast batch dims; a/b contract on their (maybe transposed) inner dims."""
    ta, tb = _matmul_flags(ctx)
    batch = list(out_shape[:-2])
    nb = len(batch)
    a = hlo.broadcast_to(a, batch + hlo.shape_of(a)[-2:])
    b = hlo.broadcast_to(b, batch + hlo.shape_of(b)[-2:])
    return hlo.dot_general(a, b, out_shape, dtype, lhs_batch=range(nb), rhs_batch=range(nb),
                           lhs_contract=[nb if ta else nb + 1], rhs_contract=[nb + 1 if tb else nb])


def _batch_matmul_lower(ctx, a, b):
    out = ctx.out()
    if ctx.op == "BatchMatMulV3":  # Ta, Tb may differ from Tout (e.g. int8 x int8 -> int32)
        a, b = (v if s.dtype == out.dtype else hlo.convert(v, out.dtype) for v, s in zip((a, b), ctx.inputs))
    return _dot(ctx, a, b, out.shape, out.dtype)


def _batch_matmul_kernel(ctx, a, b):
    ta, tb = _matmul_flags(ctx)
    acc = _acc_dtype(ctx.out().dtype)
    a = np.swapaxes(a, -1, -2) if ta else a
    b = np.swapaxes(b, -1, -2) if tb else b
    return np.matmul(a.astype(acc), b.astype(acc)).astype(ctx.out().dtype)


_MATMUL_ATTRS = {
    "MatMul": ("T", "transpose_a", "transpose_b", "grad_a", "grad_b"),
    "BatchMatMul": ("T", "adj_x", "adj_y", "grad_x", "grad_y"),
    "BatchMatMulV2": ("T", "adj_x", "adj_y", "grad_x", "grad_y"),
    "BatchMatMulV3": ("Ta", "Tb", "Tout", "adj_x", "adj_y", "grad_x", "grad_y"),
}
_MATMUL_DTYPES = FLOAT + ("int32", "int64")
for _op, _attrs in _MATMUL_ATTRS.items():
    register(_op, infer=_batch_matmul_infer, lower=_batch_matmul_lower, kernel=_batch_matmul_kernel,
             attrs=_attrs, dtypes=FLOAT + SIGNED + ("uint8",) if _op == "BatchMatMulV3" else _MATMUL_DTYPES)

# -- data formats -----------------------------------------------------------------------------------


class _Format:
    """Where batch, spatial and channel axes sit for data_format NHWC or NCHW (rank 4)."""

    def __init__(self, ctx, attr: str = "data_format"):
        name = ctx.attr(attr, "NHWC")
        if name not in ("NHWC", "NCHW"):
            raise ctx.error(f"data_format '{name}' is not supported (NHWC or NCHW)")
        self.nchw = name == "NCHW"
        self.channel = 1 if self.nchw else 3
        self.spatial = (2, 3) if self.nchw else (1, 2)

    def nhwc(self, values):
        """A 4-list in this format's order, reordered to NHWC."""
        values = list(values)
        return [values[0], values[2], values[3], values[1]] if self.nchw else values

    def hw(self, shape):
        return tuple(shape[a] for a in self.spatial)

    def shape(self, n, hw, c) -> tuple:
        return (n, c, *hw) if self.nchw else (n, *hw, c)

    def full(self, hw, fill) -> list:
        """A per-axis list with `hw` on the spatial axes and `fill` elsewhere (reduce_window args)."""
        out = [fill] * 4
        for a, v in zip(self.spatial, hw):
            out[a] = v
        return out

    def to_nhwc(self, x: np.ndarray) -> np.ndarray:
        return x.transpose(0, 2, 3, 1) if self.nchw else x

    def from_nhwc(self, x: np.ndarray) -> np.ndarray:
        return x.transpose(0, 3, 1, 2) if self.nchw else x

    @property
    def conv_io(self) -> str:
        """StableHLO's spelling of this layout for a convolution's input or output."""
        return "[b, f, 0, 1]" if self.nchw else "[b, 0, 1, f]"


# -- BiasAdd ----------------------------------------------------------------------------------------


def _bias_axis(ctx, rank: int) -> int:
    """NCHW puts the bias on axis 1 (any rank >= 3, like TF); otherwise the last axis."""
    if ctx.op != "BiasAddV1" and ctx.attr("data_format", "NHWC") == "NCHW" and rank >= 3:
        return 1
    return rank - 1


def _bias_add_infer(ctx):
    x, b = ctx.inputs
    if x.shape is not None:
        if len(x.shape) < 2:
            raise ctx.error(f"value must have rank >= 2, got {list(x.shape)}")
        c, bc = x.shape[_bias_axis(ctx, len(x.shape))], _dims(b, 1)[0]
        if c is not None and bc is not None and c != bc:
            raise ctx.error(f"bias has {bc} elements, the channel dimension is {c}")
    return same_as_input(ctx)


def _add_bias(ctx, x, bias):
    shape = hlo.shape_of(x)
    return hlo.add(x, hlo.broadcast_in_dim(bias, shape, [_bias_axis(ctx, len(shape))]))


def _np_add_bias(ctx, x, bias):
    axis = _bias_axis(ctx, x.ndim)
    return (x + bias.reshape((-1,) + (1,) * (x.ndim - 1 - axis))).astype(x.dtype)


register("BiasAdd", infer=_bias_add_infer, attrs=("T", "data_format"), dtypes=NUMBER,
         lower=_add_bias, kernel=_np_add_bias)
register("BiasAddV1", infer=_bias_add_infer, attrs=("T",), lower=_add_bias, kernel=_np_add_bias,
         dtypes=NUMBER)


def _bias_add_grad_infer(ctx):
    g = ctx.inputs[0]
    c = None if g.shape is None else g.shape[_bias_axis(ctx, len(g.shape))]
    return [TensorSpec(g.dtype, (c,))]


def _bias_add_grad_lower(ctx, g):
    rank = len(hlo.shape_of(g))
    axis = _bias_axis(ctx, rank)
    return hlo.reduce(g, _scalar(0, ctx.out().dtype), [d for d in range(rank) if d != axis])


def _bias_add_grad_kernel(ctx, g):
    axis = _bias_axis(ctx, g.ndim)
    return g.sum(axis=tuple(d for d in range(g.ndim) if d != axis), dtype=_acc_dtype(g.dtype)).astype(g.dtype)


register("BiasAddGrad", infer=_bias_add_grad_infer, attrs=("T", "data_format"), dtypes=NUMBER,
         lower=_bias_add_grad_lower, kernel=_bias_add_grad_kernel)

# -- window geometry ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    """TF's sliding-window geometry over the two spatial dims (H, W), whatever the data format.

    pads are (lo, hi) per dim (SAME puts the odd pixel after); out/pads hold None where they
    depend on an unknown size.
    """

    kernel: tuple
    strides: tuple
    dilations: tuple
    pads: tuple
    out: tuple

    @property
    def effective(self) -> tuple:
        return tuple((k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations))


_V2_INPUTS = {"ksize": 1, "strides": 2}  # MaxPoolV2 takes these as (constant) inputs


def _spatial_attr(ctx, fmt: _Format, name: str, default=None) -> tuple:
    """A 4-element per-axis attribute (strides, dilations, ksize): its (H, W) entries, checked."""
    if ctx.op == "MaxPoolV2" and name in _V2_INPUTS:
        values = [int(v) for v in np.ravel(ctx.const(_V2_INPUTS[name]))]
    else:
        values = ctx.attr(name, default)
    if len(values) != 4:
        raise ctx.error(f"{name} must have 4 elements, got {list(values)}")
    n, h, w, c = fmt.nhwc(values)
    if (n, c) != (1, 1):
        raise ctx.error(f"{name} must be 1 on the batch and channel dimensions, got {list(values)}")
    return h, w


def _explicit_pads(ctx, fmt: _Format):
    flat = list(ctx.attr("explicit_paddings", []))
    if len(flat) != 8:
        raise ctx.error(f"padding EXPLICIT needs 8 explicit_paddings, got {flat}")
    pairs = fmt.nhwc([tuple(flat[i:i + 2]) for i in range(0, 8, 2)])
    if pairs[0] != (0, 0) or pairs[3] != (0, 0) or min(flat) < 0:
        raise ctx.error(f"explicit_paddings must be non-negative and 0 on batch and channels, got {flat}")
    return pairs[1], pairs[2]


def _window_1d(ctx, size, k, stride, dilation, padding, explicit):
    if k is None:
        return None, None
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        pad = (0, 0)
    elif padding == "EXPLICIT":
        pad = tuple(explicit)
    elif size is None:
        return None, None
    else:  # SAME: output ceil(size / stride), the odd padding pixel goes after
        total = max((-(-size // stride) - 1) * stride + eff - size, 0)
        pad = (total // 2, total - total // 2)
    if size is None:
        return None, pad
    if size + pad[0] + pad[1] < eff:
        raise ctx.error(f"window of {eff} (kernel {k}, dilation {dilation}) is larger than the padded "
                        f"input size {size + pad[0] + pad[1]}")
    return (size + pad[0] + pad[1] - eff) // stride + 1, pad


def _window(ctx, fmt: _Format, in_hw, kernel, *, dilated: bool = True) -> _Window:
    strides = _spatial_attr(ctx, fmt, "strides")
    dilations = _spatial_attr(ctx, fmt, "dilations", [1, 1, 1, 1]) if dilated else (1, 1)
    padding = ctx.attr("padding")
    if padding not in ("SAME", "VALID", "EXPLICIT"):
        raise ctx.error(f"padding '{padding}' is not SAME, VALID or EXPLICIT")
    explicit = _explicit_pads(ctx, fmt) if padding == "EXPLICIT" else ((0, 0), (0, 0))
    dims = [_window_1d(ctx, *args, padding, e)
            for args, e in zip(zip(in_hw, kernel, strides, dilations), explicit)]
    return _Window(tuple(kernel), strides, dilations, tuple(d[1] for d in dims), tuple(d[0] for d in dims))


def _np_windows(xp: np.ndarray, win: _Window) -> np.ndarray:
    """Strided view [N, OH, OW, C, KH, KW] of an already padded NHWC array."""
    view = np.lib.stride_tricks.sliding_window_view(xp, win.effective, axis=(1, 2))
    (sh, sw), (dh, dw) = win.strides, win.dilations
    return view[:, ::sh, ::sw, :, ::dh, ::dw][:, :win.out[0], :win.out[1]]


def _np_pad_hw(x: np.ndarray, pads, value=0) -> np.ndarray:
    return np.pad(x, ((0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)), constant_values=value)


def _np_taps(win: _Window, out_hw):
    """For each kernel tap: the (H, W) slices of the padded input that the outputs read through it."""
    (sh, sw), (dh, dw) = win.strides, win.dilations
    oh, ow = out_hw
    for i in range(win.kernel[0]):
        for j in range(win.kernel[1]):
            yield i, j, (slice(None), slice(i * dh, i * dh + (oh - 1) * sh + 1, sh),
                         slice(j * dw, j * dw + (ow - 1) * sw + 1, sw))


# -- convolutions -------------------------------------------------------------------------------------

# Conv2D's filter is [KH, KW, C/groups, O]; DepthwiseConv2dNative's is [KH, KW, C, multiplier],
# i.e. a grouped convolution with C groups of one input channel each.


def _is_depthwise(ctx) -> bool:
    return ctx.op == "DepthwiseConv2dNative"


def _conv_shapes(ctx, x_shape, w_shape):
    """(window, groups, out channels) of a forward convolution; unknown dims stay None."""
    fmt = _Format(ctx)
    c = x_shape[fmt.channel]
    kh, kw, wi, wo = w_shape
    if _is_depthwise(ctx):
        if c is not None and wi is not None and c != wi:
            raise ctx.error(f"filter has {wi} input channels, the input has {c}")
        groups, out_c = c, (None if c is None or wo is None else c * wo)
    else:
        if c is not None and wi is not None and (wi == 0 or c % wi):
            raise ctx.error(f"input channels {c} are not a multiple of the filter's input depth {wi}")
        groups, out_c = (None if c is None or wi is None else c // wi), wo
        if groups and wo is not None and wo % groups:
            raise ctx.error(f"filter output depth {wo} is not a multiple of the group count {groups}")
    return _window(ctx, fmt, fmt.hw(x_shape), (kh, kw)), groups, out_c


def _conv_infer(ctx):
    x, w = ctx.inputs[:2]
    _require_rank(ctx, 0, (4,))
    _require_rank(ctx, 1, (4,))
    xs = _dims(x, 4)
    win, _, out_c = _conv_shapes(ctx, xs, _dims(w, 4))
    return [TensorSpec(x.dtype, _Format(ctx).shape(xs[0], win.out, out_c))]


# IREE 3.13 lowers stablehlo.convolution to a direct-convolution linalg.generic whose CPU code
# runs at 1-2 GFLOP/s (cnn_train: a 5x5x32x64 conv took 340 ms, its two gradients 460 ms).
# So NHWC convolutions become im2col + one dot_general, which IREE runs as a tiled matmul
# (6272x64x800 in ~10 ms). The patch matrix is built from strided slices of the padded input,
# concatenated tap-major, so that it lines up with the [KH, KW, C, O] filter reshaped to
# [KH*KW*C, O]. It multiplies memory by KH*KW, hence the size cap (above it, the convolution).
_IM2COL_MAX_BYTES = 1 << 28


def _patches(x, dtype, spatial, concat_axis, kernel, strides, dilations, pads, out_hw,
             lhs_dilation=(1, 1)):
    """Im2col of x: the KH*KW taps concatenated (tap-major) along `concat_axis`, or None.

    Each tap is a strided slice of x padded with zeros (edges `pads`, and `lhs_dilation - 1`
    interior zeros for a transposed convolution) on the two `spatial` axes. None when a pad is
    negative or the patches would exceed _IM2COL_MAX_BYTES: the caller keeps the convolution.
    """
    shape = hlo.shape_of(x)
    n_taps = kernel[0] * kernel[1]
    if min(p for pair in pads for p in pair) < 0:
        return None
    size = np.prod([d for a, d in enumerate(shape) if a not in spatial]) * out_hw[0] * out_hw[1] * n_taps
    if size * np.dtype(dtype).itemsize > _IM2COL_MAX_BYTES:
        return None
    low, high, interior = [0] * len(shape), [0] * len(shape), [0] * len(shape)
    for a, (lo, hi), ld in zip(spatial, pads, lhs_dilation):
        low[a], high[a], interior[a] = lo, hi, ld - 1
    if any(low) or any(high) or any(interior):
        x = hlo.pad(x, _scalar(0, dtype), low, high, interior)
    padded = hlo.shape_of(x)
    taps = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            start, limit, step = [0] * len(shape), list(padded), [1] * len(shape)
            for a, k, o, s, d in zip(spatial, (i, j), out_hw, strides, dilations):
                start[a], limit[a], step[a] = k * d, k * d + (o - 1) * s + 1, s
            taps.append(hlo.slice(x, start, limit, step))
    return hlo.concatenate(taps, concat_axis)


def _conv_lower(ctx, x, w):
    fmt = _Format(ctx)
    win, groups, out_c = _conv_shapes(ctx, hlo.shape_of(x), hlo.shape_of(w))
    if _is_depthwise(ctx):
        kh, kw, c, m = hlo.shape_of(w)
        w = hlo.reshape(w, [kh, kw, 1, c * m])
    out = ctx.out()
    if groups == 1 and not fmt.nchw:
        cols = _patches(x, out.dtype, (1, 2), 3, win.kernel, win.strides, win.dilations, win.pads,
                        win.out)
        if cols is not None:
            kh, kw, c, o = hlo.shape_of(w)
            return hlo.dot_general(cols, hlo.reshape(w, [kh * kw * c, o]), out.shape, out.dtype,
                                   lhs_contract=[3], rhs_contract=[0])
    return hlo.convolution(x, w, out.shape, out.dtype,
                           layout=f"{fmt.conv_io}x[0, 1, i, o]->{fmt.conv_io}",
                           strides=win.strides, padding=win.pads, rhs_dilation=win.dilations,
                           feature_group_count=groups)


def _np_conv(ctx, x, w):
    fmt = _Format(ctx)
    win, groups, out_c = _conv_shapes(ctx, x.shape, w.shape)
    x = fmt.to_nhwc(x)
    acc = _acc_dtype(x.dtype)
    windows = _np_windows(_np_pad_hw(x.astype(acc), win.pads), win)  # N OH OW C KH KW
    n, oh, ow, c, kh, kw = windows.shape
    windows = windows.reshape(n, oh, ow, groups, c // groups, kh, kw)
    wg = w.astype(acc).reshape(kh, kw, c // groups, groups, out_c // groups)
    y = np.einsum("nhwgcij,ijcgo->nhwgo", windows, wg, optimize=True).reshape(n, oh, ow, out_c)
    return fmt.from_nhwc(y).astype(x.dtype)


_CONV_ATTRS = ("T", "strides", "padding", "explicit_paddings", "data_format", "dilations")
register("Conv2D", infer=_conv_infer, lower=_conv_lower, kernel=_np_conv, dtypes=FLOAT,
         attrs=_CONV_ATTRS + ("use_cudnn_on_gpu",))
register("DepthwiseConv2dNative", infer=_conv_infer, lower=_conv_lower, kernel=_np_conv, dtypes=FLOAT,
         attrs=_CONV_ATTRS)

# Gradients of Conv2D. Their shape input (input_sizes / filter_sizes) must be a compile-time
# constant; grouped convolutions are not supported.


def _sizes(ctx, i: int, fmt: _Format | None, fill):
    """The 4-d shape held by constant input i, or (when it is not constant) `fill`."""
    value = ctx.inputs[i].value
    if value is None:
        return fill
    value = [int(v) for v in np.asarray(value).reshape(-1)]
    if len(value) == 2 and fmt is not None:  # spatial sizes only: batch and channels from elsewhere
        return fmt.shape(fill[0], value, fill[fmt.channel])
    if len(value) != 4:
        raise ctx.error(f"input {i} must hold a 4-d shape, got {value}")
    return tuple(value)


def _backprop_input_infer(ctx):
    _, w, dy = ctx.inputs
    fmt = _Format(ctx)
    fill = fmt.shape(_dims(dy, 4)[0], (None, None), _dims(w, 4)[2])
    return [TensorSpec(dy.dtype, _sizes(ctx, 0, fmt, fill))]


def _backprop_filter_infer(ctx):
    x, _, dy = ctx.inputs
    fmt = _Format(ctx)
    fill = (None, None, _dims(x, 4)[fmt.channel], _dims(dy, 4)[fmt.channel])
    return [TensorSpec(x.dtype, _sizes(ctx, 1, None, fill))]


def _backprop_geometry(ctx, x_shape, w_shape, dy_shape):
    """Forward window of the convolution being differentiated; checks it reproduces dy's shape."""
    fmt = _Format(ctx)
    if x_shape[fmt.channel] != w_shape[2]:
        raise ctx.error(f"grouped convolutions are not supported in gradients (input depth "
                        f"{x_shape[fmt.channel]}, filter depth {w_shape[2]})")
    win = _window(ctx, fmt, fmt.hw(x_shape), w_shape[:2])
    if tuple(win.out) != fmt.hw(dy_shape):
        raise ctx.error(f"out_backprop spatial size {list(fmt.hw(dy_shape))} does not match the "
                        f"convolution's output {list(win.out)}")
    return fmt, win


def _backprop_input_lower(ctx, _, w, dy):
    """Transposed convolution: dy dilated by the strides, convolved with the flipped filter
    (for NHWC as im2col + dot_general, see _patches)."""
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, out.shape, hlo.shape_of(w), hlo.shape_of(dy))
    pads = []
    for size, o, eff, s, (lo, _hi) in zip(fmt.hw(out.shape), win.out, win.effective, win.strides, win.pads):
        pads.append((eff - 1 - lo, size - 1 - (o - 1) * s + lo))
    if not fmt.nchw:  # im2col of the dilated dy; filter flipped and [KH, KW, O, C]
        cols = _patches(dy, out.dtype, (1, 2), 3, win.kernel, (1, 1), win.dilations, pads,
                        fmt.hw(out.shape), lhs_dilation=win.strides)
        if cols is not None:
            kh, kw, c, o = hlo.shape_of(w)
            wt = hlo.transpose(hlo.reverse(w, [0, 1]), [0, 1, 3, 2])
            return hlo.dot_general(cols, hlo.reshape(wt, [kh * kw * o, c]), out.shape, out.dtype,
                                   lhs_contract=[3], rhs_contract=[0])
    return hlo.convolution(dy, hlo.reverse(w, [0, 1]), out.shape, out.dtype,
                           layout=f"{fmt.conv_io}x[0, 1, o, i]->{fmt.conv_io}", strides=(1, 1),
                           padding=pads, lhs_dilation=win.strides, rhs_dilation=win.dilations)


def _backprop_filter_lower(ctx, x, _, dy):
    """NHWC: im2col of x times dy (see _patches). Otherwise a convolution of x with dy that
    contracts over the batch: batch acts as the feature dim."""
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, hlo.shape_of(x), out.shape, hlo.shape_of(dy))
    if not fmt.nchw:
        # Patches of x^T ([C, N, H, W]) stacked on axis 0: [KH*KW*C, N, OH, OW] times dy, which
        # contracts over (N, OH, OW) with the patch matrix as a plain row-major LHS. A trailing
        # pad the windows never reach is simply not sliced.
        (plh, phh), (plw, phw) = win.pads
        cols = _patches(hlo.transpose(x, [3, 0, 1, 2]), out.dtype, (2, 3), 0, win.kernel, win.strides,
                        win.dilations, ((plh, max(phh, 0)), (plw, max(phw, 0))), win.out)
        if cols is not None:
            kh, kw, c, o = out.shape
            dw = hlo.dot_general(cols, dy, [kh * kw * c, o], out.dtype,
                                 lhs_contract=[1, 2, 3], rhs_contract=[0, 1, 2])
            return hlo.reshape(dw, out.shape)
    pads = []
    for axis, size, o, eff, s, (lo, _hi) in zip(fmt.spatial, fmt.hw(hlo.shape_of(x)), win.out,
                                                win.effective, win.strides, win.pads):
        hi = eff + (o - 1) * s - size - lo
        if hi < 0:  # trailing input rows no window reaches: drop them instead of negative padding
            shape = hlo.shape_of(x)
            limit = list(shape)
            limit[axis] = size + hi
            x, hi = hlo.slice(x, [0] * 4, limit), 0
        pads.append((lo, hi))
    lhs = "[f, b, 0, 1]" if fmt.nchw else "[f, 0, 1, b]"
    rhs = "[i, o, 0, 1]" if fmt.nchw else "[i, 0, 1, o]"
    return hlo.convolution(x, dy, out.shape, out.dtype, layout=f"{lhs}x{rhs}->[0, 1, b, f]",
                           strides=win.dilations, padding=pads, rhs_dilation=win.strides)


def _np_backprop_input(ctx, _, w, dy):
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, out.shape, w.shape, dy.shape)
    acc = _acc_dtype(dy.dtype)
    n, h, wd, c = fmt.to_nhwc(np.empty(out.shape, np.int8)).shape
    (plh, phh), (plw, phw) = win.pads
    dx = np.zeros((n, h + plh + phh, wd + plw + phw, c), acc)
    g = fmt.to_nhwc(dy).astype(acc)
    for i, j, sl in _np_taps(win, win.out):
        dx[sl] += np.einsum("nhwo,co->nhwc", g, w[i, j].astype(acc))
    return fmt.from_nhwc(dx[:, plh:plh + h, plw:plw + wd]).astype(out.dtype)


def _np_backprop_filter(ctx, x, _, dy):
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, x.shape, out.shape, dy.shape)
    acc = _acc_dtype(x.dtype)
    xp = _np_pad_hw(fmt.to_nhwc(x).astype(acc), win.pads)
    g = fmt.to_nhwc(dy).astype(acc)
    dw = np.zeros(out.shape, acc)
    for i, j, sl in _np_taps(win, win.out):
        dw[i, j] = np.einsum("nhwc,nhwo->co", xp[sl], g)
    return dw.astype(out.dtype)


_CONV_GRAD_ATTRS = _CONV_ATTRS + ("use_cudnn_on_gpu",)
register("Conv2DBackpropInput", infer=_backprop_input_infer, lower=_backprop_input_lower, dtypes=FLOAT,
         kernel=_np_backprop_input, attrs=_CONV_GRAD_ATTRS, const_inputs=(0,))
register("Conv2DBackpropFilter", infer=_backprop_filter_infer, lower=_backprop_filter_lower, dtypes=FLOAT,
         kernel=_np_backprop_filter, attrs=_CONV_GRAD_ATTRS, const_inputs=(1,))

# Gradients of DepthwiseConv2dNative (filter [KH, KW, C, M], output channel c * M + m).
# Input: a transposed convolution with C groups of M input channels each, the filter flipped
# and [KH, KW, M, C]. Filter: per tap, the padded input's window times dy, summed over batch
# and positions, channel by channel.


def _depthwise_backprop_input_lower(ctx, _, w, dy):
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, out.shape, hlo.shape_of(w), hlo.shape_of(dy))
    pads = [(eff - 1 - lo, size - 1 - (o - 1) * s + lo)
            for size, o, eff, s, (lo, _hi) in zip(fmt.hw(out.shape), win.out, win.effective, win.strides, win.pads)]
    kernel = hlo.transpose(hlo.reverse(w, [0, 1]), [0, 1, 3, 2])
    return hlo.convolution(dy, kernel, out.shape, out.dtype, layout=f"{fmt.conv_io}x[0, 1, i, o]->{fmt.conv_io}",
                           strides=(1, 1), padding=pads, lhs_dilation=win.strides, rhs_dilation=win.dilations,
                           feature_group_count=hlo.shape_of(w)[2])


def _depthwise_backprop_filter_lower(ctx, x, _, dy):
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, hlo.shape_of(x), out.shape, hlo.shape_of(dy))
    if fmt.nchw:
        x, dy = hlo.transpose(x, [0, 2, 3, 1]), hlo.transpose(dy, [0, 2, 3, 1])
    kh, kw, c, m = out.shape
    n, oh, ow, _ = hlo.shape_of(dy)
    (plh, phh), (plw, phw) = win.pads
    x = hlo.pad(x, _scalar(0, out.dtype), [0, plh, plw, 0], [0, max(phh, 0), max(phw, 0), 0])
    dy = hlo.reshape(dy, [n, oh, ow, c, m])
    taps = []
    for i, j, (_, rows, cols) in _np_taps(win, win.out):
        window = hlo.slice(x, [0, rows.start, cols.start, 0], [n, rows.stop, cols.stop, c], [1, rows.step, cols.step, 1])
        prod = hlo.multiply(hlo.broadcast_in_dim(window, [n, oh, ow, c, m], [0, 1, 2, 3]), dy)
        taps.append(hlo.reshape(hlo.reduce(prod, _scalar(0, out.dtype), [0, 1, 2]), [1, c, m]))
    return hlo.reshape(hlo.concatenate(taps, 0), out.shape)


def _np_depthwise_backprop_input(ctx, _, w, dy):
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, out.shape, w.shape, dy.shape)
    acc = _acc_dtype(dy.dtype)
    n, h, wd, c = fmt.to_nhwc(np.empty(out.shape, np.int8)).shape
    (plh, phh), (plw, phw) = win.pads
    dx = np.zeros((n, h + plh + max(phh, 0), wd + plw + max(phw, 0), c), acc)
    g = fmt.to_nhwc(dy).astype(acc)
    g = g.reshape(*g.shape[:3], c, -1)
    for i, j, sl in _np_taps(win, win.out):
        dx[sl] += np.einsum("nhwcm,cm->nhwc", g, w[i, j].astype(acc))
    return fmt.from_nhwc(dx[:, plh:plh + h, plw:plw + wd]).astype(out.dtype)


def _np_depthwise_backprop_filter(ctx, x, _, dy):
    out = ctx.out()
    fmt, win = _backprop_geometry(ctx, x.shape, out.shape, dy.shape)
    acc = _acc_dtype(x.dtype)
    (plh, phh), (plw, phw) = win.pads
    xp = np.pad(fmt.to_nhwc(x).astype(acc), ((0, 0), (plh, max(phh, 0)), (plw, max(phw, 0)), (0, 0)))
    g = fmt.to_nhwc(dy).astype(acc)
    g = g.reshape(*g.shape[:3], out.shape[2], out.shape[3])
    dw = np.zeros(out.shape, acc)
    for i, j, sl in _np_taps(win, win.out):
        dw[i, j] = np.einsum("nhwc,nhwcm->cm", xp[sl], g)
    return dw.astype(out.dtype)


register("DepthwiseConv2dNativeBackpropInput", infer=_backprop_input_infer, lower=_depthwise_backprop_input_lower,
         kernel=_np_depthwise_backprop_input, attrs=_CONV_ATTRS, const_inputs=(0,), dtypes=FLOAT)
register("DepthwiseConv2dNativeBackpropFilter", infer=_backprop_filter_infer, lower=_depthwise_backprop_filter_lower,
         kernel=_np_depthwise_backprop_filter, attrs=_CONV_ATTRS, const_inputs=(1,), dtypes=FLOAT)

# -- pooling --------------------------------------------------------------------------------------------


def _pool_window(ctx, shape) -> tuple[_Format, _Window]:
    fmt = _Format(ctx)
    return fmt, _window(ctx, fmt, fmt.hw(shape), _spatial_attr(ctx, fmt, "ksize"), dilated=False)


def _pool_infer(ctx):
    x = ctx.inputs[0]
    _require_rank(ctx, 0, (4,))
    xs = _dims(x, 4)
    fmt, win = _pool_window(ctx, xs)
    return [TensorSpec(x.dtype, fmt.shape(xs[0], win.out, xs[fmt.channel]))]


def _np_valid_counts(sizes, win: _Window) -> np.ndarray:
    """[OH, OW]: how many real (non-padding) elements each pooling window covers."""
    counts = []
    for size, o, k, s, (lo, _) in zip(sizes, win.out, win.kernel, win.strides, win.pads):
        start = np.arange(o) * s - lo
        counts.append(np.minimum(start + k, size) - np.maximum(start, 0))
    return np.outer(*counts)


def _window_args(fmt: _Format, win: _Window):
    return fmt.full(win.kernel, 1), fmt.full(win.strides, 1), fmt.full(win.pads, (0, 0))


def _max_pool_lower(ctx, x, *_ksize_strides):
    fmt, win = _pool_window(ctx, hlo.shape_of(x))
    dtype = ctx.out().dtype
    return hlo.reduce_window(x, _scalar(_lowest(dtype), dtype), *_window_args(fmt, win), op="maximum")


def _avg_pool_lower(ctx, x):
    """Sum over the window, divided by the count of real elements (a constant: shapes are static)."""
    fmt, win = _pool_window(ctx, hlo.shape_of(x))
    out = ctx.out()
    total = hlo.reduce_window(x, _scalar(0, out.dtype), *_window_args(fmt, win), op="add")
    counts = hlo.constant(_np_valid_counts(fmt.hw(hlo.shape_of(x)), win).astype(out.dtype))
    return hlo.divide(total, hlo.broadcast_in_dim(counts, out.shape, fmt.spatial))


def _np_pool(ctx, x, *_ksize_strides):
    fmt, win = _pool_window(ctx, x.shape)
    x = fmt.to_nhwc(x)
    if ctx.op in ("MaxPool", "MaxPoolV2"):
        y = _np_windows(_np_pad_hw(x, win.pads, _lowest(x.dtype)), win).max(axis=(-2, -1))
    else:
        sums = _np_windows(_np_pad_hw(x.astype(_acc_dtype(x.dtype)), win.pads), win).sum(axis=(-2, -1))
        y = sums / _np_valid_counts(x.shape[1:3], win)[None, :, :, None]
    return fmt.from_nhwc(y).astype(ctx.out().dtype)


register("MaxPool", infer=_pool_infer, lower=_max_pool_lower, kernel=_np_pool,
         dtypes=FLOAT + SIGNED + ("uint8", "uint16"),
         attrs=("T", "ksize", "strides", "padding", "explicit_paddings", "data_format"))
register("MaxPoolV2", infer=_pool_infer, lower=_max_pool_lower, kernel=_np_pool, const_inputs=(1, 2),
         dtypes=FLOAT + SIGNED + ("uint8", "uint16"), attrs=("T", "padding", "data_format"))
register("AvgPool", infer=_pool_infer, lower=_avg_pool_lower, kernel=_np_pool, dtypes=FLOAT,
         attrs=("T", "ksize", "strides", "padding", "data_format"))


def _max_pool_grad_lower(ctx, x, _y, g):
    """Each window's gradient goes to its first maximum in row-major order (TF's CPU kernel).

    Not stablehlo.select_and_scatter: IREE cannot legalize it for overlapping windows, and for
    non-overlapping ones it breaks ties toward a later maximum. Instead x is padded with -inf
    (padding never holds the maximum), the window taps are visited in row-major order, and each
    output's gradient is placed on the first tap equal to its maximum by an interior-padded
    stablehlo.pad; the sum is cropped back to x's shape.
    """
    shape = hlo.shape_of(x)
    fmt, win = _pool_window(ctx, shape)
    dtype = ctx.out().dtype
    lows, highs = zip(*fmt.full(win.pads, (0, 0)))
    xp = hlo.pad(x, _scalar(_lowest(dtype), dtype), lows, highs)
    window, strides, _ = _window_args(fmt, win)
    zero = _scalar(0, dtype)
    best = hlo.reduce_window(xp, _scalar(_lowest(dtype), dtype), window, strides, [(0, 0)] * 4, op="maximum")
    padded, out = hlo.shape_of(xp), hlo.shape_of(g)
    taken, dx = None, None
    for i in range(win.kernel[0]):
        for j in range(win.kernel[1]):
            start = fmt.full((i, j), 0)
            limit = [b + (o - 1) * s + 1 for b, o, s in zip(start, out, strides)]
            hit = hlo.compare("EQ", hlo.slice(xp, start, limit, strides), best)
            first = hit if taken is None else hlo.binary("and", hit, hlo.unary("not", taken))
            taken = hit if taken is None else hlo.binary("or", taken, hit)
            placed = hlo.pad(hlo.select(first, g, hlo.scalar_like(0, g)), zero, start,
                             [p - e for p, e in zip(padded, limit)], [s - 1 for s in strides])
            dx = placed if dx is None else hlo.add(dx, placed)
    return hlo.slice(dx, lows, [lo + d for lo, d in zip(lows, shape)])


def _np_max_pool_grad(ctx, x, _y, g):
    """Each window's gradient goes to its first maximum in row-major order, as TF's CPU kernel."""
    fmt, win = _pool_window(ctx, x.shape)
    x, g = fmt.to_nhwc(x), fmt.to_nhwc(g)
    xp = _np_pad_hw(x, win.pads, _lowest(x.dtype))
    windows = _np_windows(xp, win)
    n, oh, ow, c, kh, kw = windows.shape
    di, dj = np.divmod(windows.reshape(n, oh, ow, c, kh * kw).argmax(axis=-1), kw)
    rows = np.arange(oh)[None, :, None, None] * win.strides[0] + di
    cols = np.arange(ow)[None, None, :, None] * win.strides[1] + dj
    dx = np.zeros(xp.shape, _acc_dtype(g.dtype))
    np.add.at(dx, (np.arange(n)[:, None, None, None], rows, cols, np.arange(c)), g)
    (plh, _), (plw, _) = win.pads
    dx = dx[:, plh:plh + x.shape[1], plw:plw + x.shape[2]]
    return fmt.from_nhwc(dx).astype(ctx.out().dtype)


def _avg_pool_grad_infer(ctx):
    g = ctx.inputs[1]
    fmt = _Format(ctx)
    gs = _dims(g, 4)
    return [TensorSpec(g.dtype, _sizes(ctx, 0, None, fmt.shape(gs[0], (None, None), gs[fmt.channel])))]


def _avg_pool_grad_lower(ctx, _, g):
    """g / counts, spread back over each window: pad with stride-1 holes, then window-sum."""
    out = ctx.out()
    fmt, win = _pool_window(ctx, out.shape)
    dtype = out.dtype
    counts = hlo.constant(_np_valid_counts(fmt.hw(out.shape), win).astype(dtype))
    g = hlo.divide(g, hlo.broadcast_in_dim(counts, hlo.shape_of(g), fmt.spatial))
    pads = [(k - 1 - lo, size - 1 - (o - 1) * s + lo)
            for size, o, k, s, (lo, _) in zip(fmt.hw(out.shape), win.out, win.kernel, win.strides, win.pads)]
    lows, highs = zip(*fmt.full(pads, (0, 0)))
    spread = hlo.pad(g, _scalar(0, dtype), lows, highs, fmt.full([s - 1 for s in win.strides], 0))
    return hlo.reduce_window(spread, _scalar(0, dtype), fmt.full(win.kernel, 1), [1] * 4, [(0, 0)] * 4)


def _np_avg_pool_grad(ctx, _, g):
    out = ctx.out()
    fmt, win = _pool_window(ctx, out.shape)
    n, h, w, c = fmt.to_nhwc(np.empty(out.shape, np.int8)).shape
    share = fmt.to_nhwc(g).astype(_acc_dtype(g.dtype)) / _np_valid_counts((h, w), win)[None, :, :, None]
    (plh, phh), (plw, phw) = win.pads
    dx = np.zeros((n, h + plh + phh, w + plw + phw, c), share.dtype)
    for _i, _j, sl in _np_taps(win, win.out):
        dx[sl] += share
    return fmt.from_nhwc(dx[:, plh:plh + h, plw:plw + w]).astype(out.dtype)


register("MaxPoolGrad", infer=same_as_input, lower=_max_pool_grad_lower, kernel=_np_max_pool_grad, dtypes=FLOAT,
         attrs=("T", "ksize", "strides", "padding", "explicit_paddings", "data_format"))
register("AvgPoolGrad", infer=_avg_pool_grad_infer, lower=_avg_pool_grad_lower, kernel=_np_avg_pool_grad, dtypes=FLOAT,
         attrs=("T", "ksize", "strides", "padding", "data_format"), const_inputs=(0,))

# -- FusedBatchNorm -----------------------------------------------------------------------------------
# Inputs x, scale, offset, mean, variance. Outputs y (T); batch_mean, batch_variance,
# reserve_space_1, reserve_space_2 (U); V3 adds reserve_space_3, a scalar zero on CPU.
# Inference: y from the given mean/variance, which are passed through. Training: y from the
# batch mean and biased variance; batch_variance is Bessel-corrected (n / (n - 1)), both mixed
# into the given running values when exponential_avg_factor != 1; reserve spaces hold the batch
# mean and the biased variance.


def _bn_channel_axis(ctx, rank: int) -> int:
    fmt = ctx.attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise ctx.error(f"data_format '{fmt}' is not supported")
    return 1 if fmt.startswith("NC") else rank - 1


def _bn_param_dtype(ctx):
    return ctx.attr("U", ctx.inputs[0].dtype)


def _bn_infer(ctx):
    x, scale = ctx.inputs[:2]
    _require_rank(ctx, 0, (4, 5))
    c = None if x.shape is None else x.shape[_bn_channel_axis(ctx, len(x.shape))]
    c = c if c is not None else _dims(scale, 1)[0]
    u = _bn_param_dtype(ctx)
    outs = [TensorSpec(x.dtype, x.shape)] + [TensorSpec(u, (c,)) for _ in range(4)]
    if _has_reserve_space_3(ctx):
        outs.append(TensorSpec(u, ()))
    return outs


def _bn_normalize(x, axis, mean, var, scale, offset, eps):
    """(x - mean) * (rsqrt(var + eps) * scale) + offset, the scaling factor first as TF does."""
    shape = hlo.shape_of(x)

    def bc(v):
        return hlo.broadcast_in_dim(v, shape, [axis])
    factor = hlo.multiply(hlo.unary("rsqrt", hlo.add(var, hlo.scalar_like(eps, var))), scale)
    return hlo.add(hlo.multiply(hlo.subtract(x, bc(mean)), bc(factor)), bc(offset))


def _bn_lower(ctx, x, scale, offset, mean, var):
    u = np.dtype(_bn_param_dtype(ctx))
    xu = x if ctx.inputs[0].dtype == u else hlo.convert(x, u)
    shape = hlo.shape_of(x)
    axis = _bn_channel_axis(ctx, len(shape))
    eps = ctx.attr("epsilon", 1e-4)
    if ctx.attr("is_training", True):
        n = int(np.prod(shape)) // shape[axis]
        rest = [d for d in range(len(shape)) if d != axis]
        inv_n = hlo.scalar_like(float(u.type(1) / u.type(n)), scale)
        batch_mean = hlo.multiply(hlo.reduce(xu, _scalar(0, u), rest), inv_n)
        centered = hlo.subtract(xu, hlo.broadcast_in_dim(batch_mean, shape, [axis]))
        batch_var = hlo.multiply(hlo.reduce(hlo.multiply(centered, centered), _scalar(0, u), rest), inv_n)
        y = _bn_normalize(xu, axis, batch_mean, batch_var, scale, offset, eps)
        factor = ctx.attr("exponential_avg_factor", 1.0)
        adjust = float(u.type(n) / u.type(max(n - 1, 1)))
        if factor == 1.0:
            new_mean, new_var = batch_mean, hlo.multiply(batch_var, hlo.scalar_like(adjust, scale))
        else:
            keep = hlo.scalar_like(1 - factor, scale)
            new_mean = hlo.add(hlo.multiply(keep, mean), hlo.multiply(hlo.scalar_like(factor, scale), batch_mean))
            new_var = hlo.add(hlo.multiply(keep, var),
                              hlo.multiply(hlo.scalar_like(float(u.type(factor) * u.type(adjust)), scale), batch_var))
        outs = [y, new_mean, new_var, batch_mean, batch_var]
    else:
        outs = [_bn_normalize(xu, axis, mean, var, scale, offset, eps), mean, var, mean, var]
    if ctx.inputs[0].dtype != u:
        outs[0] = hlo.convert(outs[0], ctx.inputs[0].dtype)
    if _has_reserve_space_3(ctx):
        outs.append(_scalar(0, u))
    return outs


def _np_bn(ctx, x, scale, offset, mean, var):
    u = np.dtype(_bn_param_dtype(ctx))
    axis = _bn_channel_axis(ctx, x.ndim)
    rest = tuple(d for d in range(x.ndim) if d != axis)
    bshape = [1] * x.ndim
    bshape[axis] = -1
    xu = x.astype(np.float64)
    eps = u.type(ctx.attr("epsilon", 1e-4))
    training = ctx.attr("is_training", True)
    if training:
        n = x.size // max(x.shape[axis], 1)
        m = xu.mean(axis=rest)
        v = ((xu - m.reshape(bshape)) ** 2).mean(axis=rest)
    else:
        m, v = mean.astype(np.float64), var.astype(np.float64)
    factor = (1 / np.sqrt(v + eps)) * scale
    y = (xu - m.reshape(bshape)) * factor.reshape(bshape) + offset.reshape(bshape)
    if training:
        f = ctx.attr("exponential_avg_factor", 1.0)
        corrected = v * (n / max(n - 1, 1))
        new_m, new_v = (m, corrected) if f == 1.0 else ((1 - f) * mean + f * m, (1 - f) * var + f * corrected)
        outs = [y, new_m, new_v, m, v]
    else:
        outs = [y, mean, var, mean, var]
    outs = [outs[0].astype(x.dtype)] + [np.asarray(o).astype(u) for o in outs[1:]]
    if _has_reserve_space_3(ctx):
        outs.append(np.zeros((), u))
    return outs


_BN_ATTRS = ("T", "epsilon", "exponential_avg_factor", "data_format", "is_training")
_BN_OUTPUTS = ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3")
for _op, _extra in {"FusedBatchNorm": (), "FusedBatchNormV2": ("U",), "FusedBatchNormV3": ("U",)}.items():
    register(_op, infer=_bn_infer, lower=_bn_lower, kernel=_np_bn, attrs=_BN_ATTRS + _extra, dtypes=FLOAT,
             output_args=_BN_OUTPUTS[:6 if _op == "FusedBatchNormV3" else 5])

# FusedBatchNormGrad/V2/V3: inputs y_backprop, x, scale, reserve_space_1 (the forward's batch
# mean, or the population mean in inference), reserve_space_2 (its biased variance, or the
# population variance) [, reserve_space_3]; outputs x_backprop (T), scale_backprop and
# offset_backprop (U, per channel), and two empty reserve spaces. TensorFlow's formulas:
#   r = rsqrt(var + eps), xc = x - mean
#   offset_backprop = sum(dy), scale_backprop = sum(dy * xc) * r
#   training:  x_backprop = scale * r * (dy - mean(dy) - xc * mean(dy * xc) * r^2)
#   inference: x_backprop = dy * scale * r


def _bn_grad_infer(ctx):
    dy, x, scale = ctx.inputs[:3]
    _require_rank(ctx, 0, (4, 5))
    c = None if x.shape is None else x.shape[_bn_channel_axis(ctx, len(x.shape))]
    c = c if c is not None else _dims(scale, 1)[0]
    u = _bn_param_dtype(ctx)
    return [TensorSpec(dy.dtype, x.shape if x.shape is not None else dy.shape), TensorSpec(u, (c,)),
            TensorSpec(u, (c,)), TensorSpec(u, (0,)), TensorSpec(u, (0,))]


def _bn_grad_lower(ctx, dy, x, scale, mean, var, *_reserve_3):
    u = np.dtype(_bn_param_dtype(ctx))
    if ctx.inputs[0].dtype != u:
        dy, x = hlo.convert(dy, u), hlo.convert(x, u)
    shape = hlo.shape_of(x)
    axis = _bn_channel_axis(ctx, len(shape))
    rest = [d for d in range(len(shape)) if d != axis]
    n = int(np.prod(shape)) // shape[axis]

    def bc(v):
        return hlo.broadcast_in_dim(v, shape, [axis])

    def total(v):
        return hlo.reduce(v, _scalar(0, u), rest)
    r = hlo.unary("rsqrt", hlo.add(var, hlo.scalar_like(ctx.attr("epsilon", 1e-4), var)))
    xc = hlo.subtract(x, bc(mean))
    dy_xc = total(hlo.multiply(dy, xc))
    scale_backprop, offset_backprop = hlo.multiply(dy_xc, r), total(dy)
    if ctx.attr("is_training", True):
        inv_n = hlo.scalar_like(1.0 / n, r)
        inner = hlo.subtract(hlo.subtract(dy, bc(hlo.multiply(offset_backprop, inv_n))),
                             hlo.multiply(xc, bc(hlo.multiply(hlo.multiply(dy_xc, inv_n), hlo.multiply(r, r)))))
        dx = hlo.multiply(inner, bc(hlo.multiply(scale, r)))
    else:
        dx = hlo.multiply(dy, bc(hlo.multiply(scale, r)))
    if ctx.inputs[0].dtype != u:
        dx = hlo.convert(dx, ctx.inputs[0].dtype)
    empty = hlo.constant(np.zeros((0,), u))
    return [dx, scale_backprop, offset_backprop, empty, empty]


def _np_bn_grad(ctx, dy, x, scale, mean, var, *_reserve_3):
    u = np.dtype(_bn_param_dtype(ctx))
    axis = _bn_channel_axis(ctx, x.ndim)
    rest = tuple(d for d in range(x.ndim) if d != axis)
    bshape = [1] * x.ndim
    bshape[axis] = -1
    d, xd = dy.astype(np.float64), x.astype(np.float64)
    r = 1 / np.sqrt(var.astype(np.float64) + np.float64(u.type(ctx.attr("epsilon", 1e-4))))
    xc = xd - mean.astype(np.float64).reshape(bshape)
    scale_backprop, offset_backprop = (d * xc).sum(axis=rest) * r, d.sum(axis=rest)
    coef = (scale * r).reshape(bshape)
    if ctx.attr("is_training", True):
        dx = coef * (d - d.mean(axis=rest).reshape(bshape)
                     - xc * ((d * xc).mean(axis=rest) * r * r).reshape(bshape))
    else:
        dx = d * coef
    empty = np.zeros((0,), u)
    return [dx.astype(dy.dtype), scale_backprop.astype(u), offset_backprop.astype(u), empty, empty]


_BN_GRAD_ATTRS = ("T", "epsilon", "data_format", "is_training")
for _op, _extra in {"FusedBatchNormGrad": (), "FusedBatchNormGradV2": ("U",), "FusedBatchNormGradV3": ("U",)}.items():
    register(_op, infer=_bn_grad_infer, lower=_bn_grad_lower, kernel=_np_bn_grad, attrs=_BN_GRAD_ATTRS + _extra,
             dtypes=FLOAT, output_args=("x_backprop", "scale_backprop", "offset_backprop", "reserve_space_4",
                                        "reserve_space_5"))

# _FusedBatchNormEx: Grappler's FusedBatchNormV3, plus optionally one side input added to y, then
# activation_mode (Identity or Relu, the two TensorFlow implements): y = act(bn(x) + side).


def _bn_ex_mode(ctx) -> str:
    mode, n_side = ctx.attr("activation_mode", "Identity"), ctx.attr("num_side_inputs", 0)
    if mode not in ("Identity", "Relu"):
        raise ctx.error(f"activation_mode '{mode}' is not supported (Identity or Relu)")
    if n_side not in (0, 1) or len(ctx.inputs) != 5 + n_side:
        raise ctx.error(f"num_side_inputs={n_side} with {len(ctx.inputs)} inputs (0 or 1 side input)")
    return mode


def _bn_ex_infer(ctx):
    _bn_ex_mode(ctx)
    outs = _bn_infer(ctx)
    if len(ctx.inputs) == 6:
        merged = broadcast_shapes(ctx, outs[0].shape, ctx.inputs[5].shape)
        if merged != outs[0].shape:
            raise ctx.error(f"side input {ctx.inputs[5]} does not match y {outs[0]}")
    return outs


def _bn_ex_lower(ctx, x, scale, offset, mean, var, *side):
    mode = _bn_ex_mode(ctx)
    outs = _bn_lower(ctx, x, scale, offset, mean, var)
    y = hlo.add(outs[0], side[0]) if side else outs[0]
    return [hlo.maximum(y, hlo.scalar_like(0, y)) if mode == "Relu" else y] + outs[1:]


def _np_bn_ex(ctx, x, scale, offset, mean, var, *side):
    mode = _bn_ex_mode(ctx)
    outs = _np_bn(ctx, x, scale, offset, mean, var)
    y = outs[0] + side[0] if side else outs[0]
    return [np.maximum(y, 0).astype(x.dtype) if mode == "Relu" else y] + outs[1:]


register("_FusedBatchNormEx", infer=_bn_ex_infer, lower=_bn_ex_lower, kernel=_np_bn_ex, dtypes=FLOAT,
         attrs=_BN_ATTRS + ("U", "num_side_inputs", "activation_mode"), output_args=_BN_OUTPUTS)


def _has_reserve_space_3(ctx) -> bool:
    return ctx.op in ("FusedBatchNormV3", "_FusedBatchNormEx")

# -- softmax and cross entropy ------------------------------------------------------------------------


def _softmax_parts(x, axis: int, dtype):
    """(x - max, exp(x - max), sum of exp, that sum broadcast back) along `axis`."""
    _, m = _reduce_keep(x, _scalar(-np.inf, dtype), axis, "maximum")
    shifted = hlo.subtract(x, m)
    e = hlo.unary("exponential", shifted)
    total, total_b = _reduce_keep(e, _scalar(0, dtype), axis, "add")
    return shifted, e, total, total_b


def _softmax_lower(ctx, x):
    axis = len(hlo.shape_of(x)) - 1
    shifted, e, _, s = _softmax_parts(x, axis, ctx.out().dtype)
    if ctx.op == "LogSoftmax":
        return hlo.subtract(shifted, hlo.unary("log", s))
    return hlo.multiply(e, hlo.divide(hlo.scalar_like(1, s), s))


def _np_softmax(ctx, x):
    xd = x.astype(np.float64)
    shifted = xd - xd.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=-1, keepdims=True)
    y = shifted - np.log(s) if ctx.op == "LogSoftmax" else e / s
    return y.astype(x.dtype)


def _softmax_infer(ctx):
    _require_rank(ctx, 0, range(1, 64))
    return same_as_input(ctx)


register("Softmax", infer=_softmax_infer, lower=_softmax_lower, kernel=_np_softmax, attrs=("T",), dtypes=FLOAT)
register("LogSoftmax", infer=_softmax_infer, lower=_softmax_lower, kernel=_np_softmax, attrs=("T",), dtypes=FLOAT)


def _xent_infer(ctx):
    logits, labels = ctx.inputs
    shape = broadcast_shapes(ctx, logits.shape, labels.shape)
    if shape is not None and len(shape) != 2:
        raise ctx.error(f"logits and labels must broadcast to rank 2, got {list(shape)}")
    shape = shape or (None, None)
    return [TensorSpec(logits.dtype, shape[:1]), TensorSpec(logits.dtype, shape)]


def _xent_lower(ctx, logits, labels):
    """loss = sum(labels * (log(sum exp) - shifted)), backprop = softmax - labels."""
    shape = ctx.out(1).shape
    logits, labels = hlo.broadcast_to(logits, shape), hlo.broadcast_to(labels, shape)
    dtype = ctx.out().dtype
    shifted, e, _, s = _softmax_parts(logits, 1, dtype)
    loss = hlo.reduce(hlo.multiply(labels, hlo.subtract(hlo.unary("log", s), shifted)), _scalar(0, dtype), [1])
    return [loss, hlo.subtract(hlo.divide(e, s), labels)]


def _np_xent(ctx, logits, labels):
    shape = ctx.out(1).shape
    lg = np.broadcast_to(logits, shape).astype(np.float64)
    lb = np.broadcast_to(labels, shape).astype(np.float64)
    shifted = lg - lg.max(axis=1, keepdims=True)
    s = np.exp(shifted).sum(axis=1, keepdims=True)
    loss = (lb * (np.log(s) - shifted)).sum(axis=1)
    return [loss.astype(logits.dtype), (np.exp(shifted) / s - lb).astype(logits.dtype)]


register("SoftmaxCrossEntropyWithLogits", infer=_xent_infer, lower=_xent_lower, kernel=_np_xent, dtypes=FLOAT,
         attrs=("T",), output_args=("loss", "backprop"))


def _sparse_xent_infer(ctx):
    logits, labels = ctx.inputs
    _require_rank(ctx, 0, (2,))
    _require_rank(ctx, 1, (1,))
    b, c = _dims(logits, 2)
    b = b if b is not None else _dims(labels, 1)[0]
    return [TensorSpec(logits.dtype, (b,)), TensorSpec(logits.dtype, (b, c))]


def _sparse_xent_lower(ctx, logits, labels):
    """Like the dense op with one-hot labels; out-of-range labels give NaN rows (as XLA does)."""
    b, c = hlo.shape_of(logits)
    dtype = ctx.out().dtype
    shifted, e, total, s = _softmax_parts(logits, 1, dtype)
    label_dtype = ctx.inputs[1].dtype
    hot = hlo.compare("EQ", hlo.iota([b, c], label_dtype, 1), hlo.broadcast_in_dim(labels, [b, c], [0]))
    zero = hlo.scalar_like(0, shifted)
    picked = hlo.reduce(hlo.select(hot, shifted, zero), _scalar(0, dtype), [1])
    loss = hlo.subtract(hlo.unary("log", total), picked)
    backprop = hlo.subtract(hlo.divide(e, s), hlo.convert(hot, ctx.out(1).dtype))
    valid = hlo.binary("and", hlo.compare("GE", labels, hlo.scalar_like(0, labels)),
                       hlo.compare("LT", labels, hlo.scalar_like(c, labels)))
    nan = hlo.scalar_like(np.nan, loss)
    return [hlo.select(valid, loss, nan),
            hlo.select(hlo.broadcast_in_dim(valid, [b, c], [0]), backprop, hlo.scalar_like(np.nan, backprop))]


def _np_sparse_xent(ctx, logits, labels):
    lg = logits.astype(np.float64)
    b, c = lg.shape
    shifted = lg - lg.max(axis=1, keepdims=True)
    s = np.exp(shifted).sum(axis=1, keepdims=True)
    valid = (labels >= 0) & (labels < c)
    hot = np.arange(c)[None, :] == labels[:, None]
    # the label's logit, picked (a one-hot product would turn a -inf logit elsewhere into NaN)
    picked = np.take_along_axis(shifted, np.where(valid, labels, 0)[:, None].astype(np.int64), 1)[:, 0]
    loss = np.log(s[:, 0]) - picked
    backprop = np.exp(shifted) / s - hot
    loss = np.where(valid, loss, np.nan)
    backprop = np.where(valid[:, None], backprop, np.nan)
    return [loss.astype(logits.dtype), backprop.astype(logits.dtype)]


register("SparseSoftmaxCrossEntropyWithLogits", infer=_sparse_xent_infer, lower=_sparse_xent_lower, dtypes=FLOAT,
         kernel=_np_sparse_xent, attrs=("T", "Tlabels"), output_args=("loss", "backprop"))

# -- activation gradients ---------------------------------------------------------------------------
# TF op -> (lowering, NumPy kernel), both over the op's two inputs in TF's order and in the
# evaluation order of TF's Eigen functors.


def _c(x, value):
    return hlo.scalar_like(value, x)


_SELU_ALPHA, _SELU_SCALE = elementwise._SELU_ALPHA, elementwise._SELU_SCALE


def _square(x):
    return hlo.multiply(x, x)


def _relu_grad(g, f):
    return hlo.select(hlo.compare("GT", f, _c(f, 0)), g, _c(g, 0))


def _relu6_grad(g, f):
    inside = hlo.binary("and", hlo.compare("GT", f, _c(f, 0)), hlo.compare("LT", f, _c(f, 6)))
    return hlo.select(inside, g, _c(g, 0))


ACTIVATION_GRADS = {
    "ReluGrad": (_relu_grad, lambda g, f: np.where(f > 0, g, 0)),
    "Relu6Grad": (_relu6_grad, lambda g, f: np.where((f > 0) & (f < 6), g, 0)),
    "SigmoidGrad": (lambda y, dy: hlo.multiply(hlo.multiply(dy, y), hlo.subtract(_c(y, 1), y)),
                    lambda y, dy: dy * y * (1 - y)),
    "TanhGrad": (lambda y, dy: hlo.multiply(dy, hlo.subtract(_c(y, 1), hlo.multiply(y, y))),
                 lambda y, dy: dy * (1 - y * y)),
    "SoftplusGrad": (lambda g, f: hlo.divide(g, hlo.add(hlo.unary("exponential", hlo.unary("negate", f)), _c(f, 1))),
                     lambda g, f: g / (np.exp(-f) + 1)),
    "RsqrtGrad": (lambda y, dy: hlo.multiply(hlo.multiply(_c(y, -0.5), hlo.multiply(dy, y)), hlo.multiply(y, y)),
                  lambda y, dy: -0.5 * (dy * y) * (y * y)),
    "SqrtGrad": (lambda y, dy: hlo.divide(hlo.multiply(_c(dy, 0.5), dy), y),
                 lambda y, dy: 0.5 * dy / y),
    "ReciprocalGrad": (lambda y, dy: hlo.multiply(hlo.multiply(hlo.unary("negate", dy), y), y),
                       lambda y, dy: -dy * y * y),
    "InvGrad": (lambda y, dy: hlo.multiply(hlo.multiply(hlo.unary("negate", dy), y), y),
                lambda y, dy: -dy * y * y),
    "EluGrad": (lambda g, y: hlo.select(hlo.compare("LT", y, _c(y, 0)), hlo.multiply(g, hlo.add(y, _c(y, 1))), g),
                lambda g, y: np.where(y < 0, g * (y + 1), g)),
    "SeluGrad": (lambda g, y: hlo.select(hlo.compare("LT", y, _c(y, 0)),
                                         hlo.multiply(g, hlo.add(y, _c(y, _SELU_SCALE * _SELU_ALPHA))),
                                         hlo.multiply(g, _c(g, _SELU_SCALE))),
                 lambda g, y: np.where(y < 0, g * (y + _SELU_SCALE * _SELU_ALPHA), g * _SELU_SCALE)),
    "SoftsignGrad": (lambda g, f: hlo.divide(g, _square(hlo.add(_c(f, 1), hlo.unary("abs", f)))),
                     lambda g, f: g / np.square(1 + np.abs(f))),
}


def _grad_infer(ctx):
    a, b = ctx.inputs
    return [TensorSpec(a.dtype, broadcast_shapes(ctx, a.shape, b.shape))]


for _op, (_lower, _np_fn) in ACTIVATION_GRADS.items():
    register(_op, infer=_grad_infer, attrs=("T",), dtypes=FLOAT,
             lower=lambda ctx, a, b, f=_lower: f(hlo.broadcast_to(a, ctx.out().shape),
                                                 hlo.broadcast_to(b, ctx.out().shape)),
             kernel=lambda ctx, a, b, f=_np_fn: np.asarray(f(a, b)).astype(ctx.out().dtype))



def _leaky_relu_grad_lower(ctx, g, f):
    shape = ctx.out().shape
    g, f = hlo.broadcast_to(g, shape), hlo.broadcast_to(f, shape)
    return hlo.select(hlo.compare("GT", f, _c(f, 0)), g, hlo.multiply(g, _c(g, ctx.attr("alpha", 0.2))))


register("LeakyReluGrad", infer=_grad_infer, attrs=("T", "alpha"), dtypes=FLOAT, lower=_leaky_relu_grad_lower,
         kernel=lambda ctx, g, f: np.where(f > 0, g, g * np.asarray(ctx.attr("alpha", 0.2), g.dtype))
         .astype(ctx.out().dtype))

# -- grappler's fused ops -------------------------------------------------------------------------------
# _FusedMatMul / _FusedConv2D: the contraction, then fused_ops in order: "BiasAdd" (args[0]) or,
# for convolutions, "FusedBatchNorm" (args: scale, offset, mean, variance), then at most one
# activation.

_ACTIVATIONS = ("Relu", "Relu6", "Elu", "Tanh", "Sigmoid", "LeakyRelu")


def _fused_plan(ctx):
    ops = list(ctx.attr("fused_ops", []))
    num_args = ctx.attr("num_args", len(ctx.inputs) - 2)
    if ctx.attr("num_host_args", 0):
        raise ctx.error("host_args (quantized _FusedConv2D) are not supported")
    first = {"BiasAdd": 1, "FusedBatchNorm": 4}
    if not ops or ops[0] not in first or (ops[0] == "FusedBatchNorm" and ctx.op != "_FusedConv2D") \
            or len(ops) > 2 or (len(ops) == 2 and ops[1] not in _ACTIVATIONS) or num_args != first[ops[0]]:
        raise ctx.error(f"fused_ops {ops} with num_args {num_args} is not supported (BiasAdd"
                        f"{' or FusedBatchNorm' if ctx.op == '_FusedConv2D' else ''}, then one of "
                        f"{', '.join(_ACTIVATIONS)})")
    return ops[0], (ops[1] if len(ops) == 2 else None)


def _fused_infer(ctx):
    _fused_plan(ctx)
    _check_filter_format(ctx)
    if ctx.op == "_FusedMatMul":
        return _batch_matmul_infer(ctx)
    return _conv_infer(ctx)


def _activation_lower(ctx, name, x):
    if name == "LeakyRelu":
        alpha = _c(x, ctx.attr("leakyrelu_alpha", 0.2))
        return hlo.select(hlo.compare("GT", x, _c(x, 0)), x, hlo.multiply(alpha, x))
    how = elementwise.UNARY[name][0]
    return hlo.unary(how, x) if isinstance(how, str) else how(x)


def _activation_np(ctx, name, x):
    if name == "LeakyRelu":
        return np.where(x > 0, x, x * ctx.attr("leakyrelu_alpha", 0.2))
    return elementwise.UNARY[name][1](x)


def _channel_axis(ctx, rank):
    return _Format(ctx).channel if ctx.op == "_FusedConv2D" else rank - 1


def _fused_lower(ctx, a, b, *args):
    first, act = _fused_plan(ctx)
    out = ctx.out()
    y = _dot(ctx, a, b, out.shape, out.dtype) if ctx.op == "_FusedMatMul" else _conv_lower(ctx, a, b)
    axis = _channel_axis(ctx, len(out.shape))
    if first == "BiasAdd":
        y = hlo.add(y, hlo.broadcast_in_dim(args[0], out.shape, [axis]))
    else:
        scale, offset, mean, var = args
        y = _bn_normalize(y, axis, mean, var, scale, offset, ctx.attr("epsilon", 1e-4))
    return _activation_lower(ctx, act, y) if act else y


def _np_fused(ctx, a, b, *args):
    first, act = _fused_plan(ctx)
    y = _batch_matmul_kernel(ctx, a, b) if ctx.op == "_FusedMatMul" else _np_conv(ctx, a, b)
    shape = [1] * y.ndim
    shape[_channel_axis(ctx, y.ndim)] = -1
    y = y.astype(np.float64)
    if first == "BiasAdd":
        y = y + args[0].reshape(shape)
    else:
        scale, offset, mean, var = (v.astype(np.float64).reshape(shape) for v in args)
        eps = np.float32(ctx.attr("epsilon", 1e-4))
        y = (y - mean) * ((1 / np.sqrt(var + eps)) * scale) + offset
    y = _activation_np(ctx, act, y) if act else y
    return np.asarray(y).astype(ctx.out().dtype)


_FUSED_ATTRS = ("T", "num_args", "fused_ops", "epsilon", "leakyrelu_alpha")


def _check_filter_format(ctx):
    if ctx.attr("filter_format", "HWIO") != "HWIO":
        raise ctx.error(f"filter_format '{ctx.attr('filter_format')}' is not supported (HWIO)")
register("_FusedMatMul", infer=_fused_infer, lower=_fused_lower, kernel=_np_fused, dtypes=FLOAT,
         attrs=_FUSED_ATTRS + ("transpose_a", "transpose_b", "grad_a", "grad_b"))
register("_FusedConv2D", infer=_fused_infer, lower=_fused_lower, kernel=_np_fused, dtypes=FLOAT,
         attrs=_FUSED_ATTRS + _CONV_ATTRS + ("use_cudnn_on_gpu", "TArgs", "num_host_args", "filter_format"))
