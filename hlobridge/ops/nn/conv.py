"""Convolutions and their gradients: Conv2D, DepthwiseConv2dNative, Conv3D, Conv2DBackpropInput/Filter,
DepthwiseConv2dNativeBackpropInput/Filter, Conv3DBackpropInputV2/FilterV2.

One rule for every rank, with depthwise as a case of grouped convolution, the way tf2xla's
ConvOp does it (conv_op_helpers.cc): Conv2D's and Conv3D's filter is [spatial..., C/groups, O];
DepthwiseConv2dNative's is [KH, KW, C, M], which is the grouped filter [KH, KW, 1, C*M] of a
convolution with C groups (output channel c * M + m). TensorFlow's own CPU kernel runs
neither NCDHW nor dilations for Conv3D; those follow XLA, which takes both.

The gradients take their shape input (input_sizes / filter_sizes) as a compile-time
constant; grouped convolutions other than depthwise ones have no gradients here.
"""

from __future__ import annotations

import math

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..backend_style import lowering_backend
from ..helpers import acc_dtype, known_dims, require_rank, scalar
from ..registry import register
from ..typesets import FLOAT
from .geometry import Format, Window, np_pad, spatial_rank, taps, window


from .conv_dynamic import depthwise_taps


def _is_depthwise(ctx) -> bool:
    return ctx.op.startswith("DepthwiseConv2dNative")


def conv_geometry(ctx, x_shape, w_shape):
    """(format, window, groups, output channels) of a forward convolution; unknown sizes stay None."""
    fmt = Format(ctx, spatial_rank(ctx))
    c = x_shape[fmt.channel]
    *kernel, wi, wo = w_shape
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
    return fmt, window(ctx, fmt, fmt.sizes(x_shape), kernel), groups, out_c


def conv_infer(ctx):
    """Output spec of Conv2D, DepthwiseConv2dNative, Conv3D (and _FusedConv2D)."""
    rank = spatial_rank(ctx) + 2
    x, w = ctx.inputs[:2]
    require_rank(ctx, 0, (rank,))
    require_rank(ctx, 1, (rank,))
    xs = known_dims(x, rank)
    fmt, win, _, out_c = conv_geometry(ctx, xs, known_dims(w, rank))
    return [TensorSpec(x.dtype, fmt.shape(xs[0], win.out, out_c))]


def _np_grouped_filter(ctx, w):
    """The filter as [spatial..., C/groups, O] (tf2xla: depthwise [.., C, M] -> [.., 1, C*M])."""
    return w.reshape(*w.shape[:-2], 1, -1) if _is_depthwise(ctx) else w


# IREE 3.13 lowers stablehlo.convolution to a direct-convolution linalg.generic whose CPU code
# runs at 1-2 GFLOP/s (cnn_train: a 5x5x32x64 conv took 340 ms, its two gradients 460 ms).
# So NHWC convolutions become im2col + one dot_general, which IREE runs as a tiled matmul
# (6272x64x800 in ~10 ms). The patch matrix is built from strided slices of the padded input,
# concatenated tap-major, so that it lines up with the [KH, KW, C, O] filter reshaped to
# [KH*KW*C, O]. It multiplies memory by KH*KW, hence the size cap (above it, the convolution).
# Grouped (depthwise) and 3-D convolutions, rarer, keep stablehlo.convolution. IREE runs each
# tap's slice as a copy dispatch of its own (a concatenation on an inner axis); building the
# patch matrix as one stablehlo.gather instead (a [KH, KW, C] window per output position) made
# Keras ResNet50 1.27x slower (2-core VM, interleaved blocks, medians), so the taps stay slices.
_IM2COL_MAX_BYTES = 1 << 28


def _im2col(ctx, fmt: Format, groups, dynamic_batch: bool = False) -> bool:
    """Whether the convolution is built from patches and matmuls (the forms below): on the CPU,
    for 2-D NHWC ungrouped convolutions. For CUDA every convolution and gradient stays one
    stablehlo.convolution, NHWC as TensorFlow writes it: IREE lowers that to an implicit GEMM
    (its TileAndFuse pipeline with use_igemm_convolution), on tensor cores in bf16, where the
    CPU's patches are tens of MB of copies per layer (docs/gpu.md has the measured table). XLA
    takes stablehlo.convolution on every target (ops/backend_style.py). With `dynamic_batch`
    (the forward convolution) a `?` batch takes them too."""
    known = ctx.inputs[0].is_static or dynamic_batch and _static_but_batch(ctx.inputs[0])
    return (ctx.target != "cuda" and lowering_backend() == "iree" and groups == 1
            and not fmt.channels_first and fmt.rank == 2 and known)


def _static_but_batch(spec) -> bool:
    """Whether every dimension of `spec` but the batch (dimension 0) is known. A `?` batch takes
    the same patches and matmuls as a static one (docs/dynamic_shapes.md): as one padded
    stablehlo.convolution IREE 3.13 compiled MobileNetV2's `?`-batch module 1.9-2.4x slower than
    the static one, and failed it with data tiling or pad fusion on, which then left the static
    bucket functions of the same module without either."""
    return spec.shape is not None and len(spec.shape) > 0 and all(d is not None for d in spec.shape[1:])


def _pad_spatial(x, dtype, spatial, pads, lhs_dilation):
    """x zero-padded on the `spatial` axes: edges `pads`, `lhs_dilation - 1` interior zeros."""
    shape = hlo.shape_of(x)
    low, high, interior = [0] * len(shape), [0] * len(shape), [0] * len(shape)
    for a, (lo, hi), ld in zip(spatial, pads, lhs_dilation):
        low[a], high[a], interior[a] = lo, hi, ld - 1
    if any(low) or any(high) or any(interior):
        x = hlo.pad(x, scalar(0, dtype), low, high, interior)
    return x


def _patches(x, dtype, spatial, concat_axis, kernel, strides, dilations, pads, out_sizes, lhs_dilation=None,
             flip=False):
    """Im2col of x: the kernel's taps concatenated (tap-major) along `concat_axis`, or None;
    with `flip`, in reverse order, for the spatially flipped filter (see _backprop_input_lower).

    Each tap is a strided slice of x padded with zeros (edges `pads`, and `lhs_dilation - 1`
    interior zeros for a transposed convolution) on the `spatial` axes. None when a pad is
    negative or the patches would exceed _IM2COL_MAX_BYTES: the caller keeps the convolution.
    """
    shape = hlo.shape_of(x)
    lhs_dilation = lhs_dilation or (1,) * len(spatial)
    if min(p for pair in pads for p in pair) < 0:
        return None
    # (a `?` batch counts as 1: the cap then bounds the patches of one example)
    size = np.prod([d or 1 for a, d in enumerate(shape) if a not in spatial]) * math.prod(out_sizes) * math.prod(kernel)
    if size * np.dtype(dtype).itemsize > _IM2COL_MAX_BYTES:
        return None
    x = _pad_spatial(x, dtype, spatial, pads, lhs_dilation)
    padded = hlo.shape_of(x)
    win = Window(tuple(kernel), tuple(strides), tuple(dilations), tuple(pads), tuple(out_sizes))
    slices = []
    for _tap, index in taps(win):
        start, limit, step = [0] * len(shape), list(padded), [1] * len(shape)
        for a, sl in zip(spatial, index[1:]):
            start[a], limit[a], step[a] = sl.start, sl.stop, sl.step
        slices.append(hlo.slice(x, start, limit, step))
    return hlo.concatenate(slices[::-1] if flip else slices, concat_axis)


# Full im2col writes KH*KW copies of the input; for a wide input that copy costs as much as the
# matmul (cnn_train's conv2 input gradient: 40 MB of patches, 2.3 ms of a 24 ms step). When the
# window moves one row at a time, the KH row taps need no copies: with the padded input laid
# out rows first ([H, N, W, C]), the rows a tap reads are one contiguous block, which IREE reads
# in place. Only the KW column taps are concatenated (KH times less data), and the product is KH
# matmuls of K = KW*C, added in order. Measured (2-core VM, best blocks): cnn_train's step
# 24.1 -> 22.0-22.9 ms, ResNet-50 training 96.5-98.1 -> 95.3-96.9 ms; the first conv of
# cnn_train's input gradient 0.8x (K = 320), even at K = 160, slower where K gets small. Where
# the filter is a constant (frozen inference) the module is data-tiled (compile/options.py) and
# one long-K matmul packs better: Keras ResNet50 10.7-10.9 ms full, 11.4-11.7 in row taps. A
# constant is told by the lowered filter itself: shape inference knows the values of small
# tensors only, and a test of those left Keras ResNet50's 13 largest 3x3 filters in row taps
# (all of them full: 0.92-0.97x the step, medians of 15 interleaved blocks, two runs).
_ROW_TAP_MIN_K = 128

# A first layer (a few input channels): patches of x^T ([C, N, H, W]) stacked tap-major,
# [KH*KW*C, N*OH*OW], which are the filter gradient's own patches (in training one set serves
# both: CSE merges them), and the product computed transposed, out^T = w^T @ patches, so that
# the patches are its right operand as they lie. NHWC patches copy each tap in rows of C
# floats, scattered (cnn_train's conv1: 25 copies of 4-byte rows, 0.03 ms each); tap-major ones
# copy contiguous rows, and a training step's forward pass no longer builds its own. Measured
# (2-core VM; dispatch times from the profiler's replay, steps in interleaved blocks):
# - cnn_train (trained 5x5 filter, one channel): conv1 forward 1.09 -> 0.39 ms, its filter
#   gradient 0.39 -> 0.24 ms, 149 -> 124 dispatches; the step 0.979x (median of 21 blocks);
# - ResNet-50 training (7x7, stride 2, 3 channels): unchanged within the noise (best 0.999x);
# - frozen filters, data-tiled: Keras ResNet50's conv1 0.61 -> 0.38 ms, its step 0.988x
#   (median of 15; best 1.000x); MobileNetV2 batch 5 0.980x (best 0.975x), batch 2 best 0.958x.
# Untiled (data tiling off) the transposed product is the slower one where the NHWC copies
# were cheap: ResNet-50's conv1 forward alone 0.56 -> 0.60-0.72 ms. Earlier forms of the same
# patches lost: as the left operand contracting axis 0 (4-d, IREE fused the copies but
# `--fusion none` exceeded its stack limit; 2-d, IREE transposed it back: no gain).
# A frozen first layer, though, is faster still as IREE's own convolution (one dispatch, no
# patches) now that its padding is fused in (compile/options.py's pad_fusion): the first
# convolution alone, data-tiled and pad-fused, iree-benchmark-module local-sync CPU time,
# median of 5-7 interleaved runs (2-core VM, 2026-11-28): cnn_infer_bn's 3x3 (4x32x32x3 -> 16)
# 0.74x, MobileNetV2's 3x3 stride 2 (5x96x96x3 -> 32) 0.60x, Keras ResNet50's 7x7 stride 2
# (2x64x64x3 -> 64) 0.87x. A trained filter (an argument) keeps the patches: not measured.
_CHANNEL_MAJOR_MAX_C = 4


def _direct_first_conv(x, w) -> bool:
    """Whether the convolution stays one stablehlo.convolution on the CPU: a constant filter
    over at most _CHANNEL_MAJOR_MAX_C input channels (see above), over a static batch (IREE
    3.13 legalises no padded convolution over a `?` batch, and fails the padded-first one with
    pad fusion on: that one takes the NHWC patches)."""
    return hlo.shape_of(x)[-1] <= _CHANNEL_MAJOR_MAX_C and hlo.is_constant(w) and hlo.shape_of(x)[0] is not None


def _row_taps(x, w, dtype, kernel, strides, pads, out_sizes, lhs_dilation=None) -> bool:
    """Whether _row_tap_conv applies and pays: a filter `w` that is not a constant (one TF froze
    into the graph, of any size: shape inference only knows the values of small ones) and a
    geometry _row_tap_geometry takes."""
    return not hlo.is_constant(w) and _row_tap_geometry(x, dtype, kernel, strides, pads, out_sizes, lhs_dilation)


def _row_tap_geometry(x, dtype, kernel, strides, pads, out_sizes, lhs_dilation=None) -> bool:
    """Whether row taps apply to NHWC x and pay: more than one row tap, rows one apart, column
    taps that give each row tap's matmul a long enough K (KW*C), no negative pad, and column
    patches within the im2col size cap."""
    (kh, kw), ow = kernel, out_sizes[1]
    n, h, _, c = hlo.shape_of(x)
    rows = (h - 1) * (lhs_dilation or (1, 1))[0] + 1 + sum(pads[0])
    size = rows * n * ow * kw * c * np.dtype(dtype).itemsize
    return (kh > 1 and strides[0] == 1 and kw * c >= _ROW_TAP_MIN_K and size <= _IM2COL_MAX_BYTES
            and min(p for pair in pads for p in pair) >= 0)


def _row_tap_conv(x, w, out, kernel, strides, dilations, pads, out_sizes, lhs_dilation=None, flip=False):
    """An NHWC convolution of x with the [KH, KW, C, O] filter w, rows first (see above): the
    padded x transposed to [H, N, W, C], its KW column taps concatenated into [H, N, OW, KW*C],
    then per row tap kh the rows kh*dh ... kh*dh + OH - 1 (one contiguous block) times w[kh].
    With `flip`, the convolution with w flipped in both spatial axes: column taps concatenated
    in reverse order, row tap kh times w[KH - 1 - kh]; x (an input gradient's dy) is then
    transposed before it is padded, so that the filter gradient's dy^T serves it too (one
    transpose a step less: cnn_train 108 dispatches, its step 0.982-0.983x, medians of paired
    ratios over 21 and 41 interleaved blocks; ResNet-50 training 0.992x). The forward pass pads
    first: padding after the transpose made its column copies 4x slower (IREE fused the pad
    into them), and it has nothing to share."""
    if flip:  # an input gradient: dy^T is the filter gradient's own (_row_tap_filter_grad), shared
        xp = _pad_spatial(hlo.transpose(x, [1, 0, 2, 3]), out.dtype, (0, 2), pads, lhs_dilation or (1, 1))
    else:  # padded, then transposed: IREE fuses a pad after the transpose into the column copies
        xp = hlo.transpose(_pad_spatial(x, out.dtype, (1, 2), pads, lhs_dilation or (1, 1)), [1, 0, 2, 3])
    hp, n, wp, c = hlo.shape_of(xp)
    (kh, kw), (dh, dw), (_sh, sw), (oh, ow) = kernel, dilations, strides, out_sizes
    columns = [hlo.slice(xp, [0, 0, t * dw, 0], [hp, n, t * dw + (ow - 1) * sw + 1, c], [1, 1, sw, 1])
               for t in range(kw)]
    columns = columns[::-1] if flip else columns
    rows = hlo.reshape(columns[0] if kw == 1 else hlo.concatenate(columns, 3), [hp * n * ow, kw * c])
    o = hlo.shape_of(w)[-1]
    w = hlo.reshape(w, [kh, kw * c, o])
    m, per_row = oh * n * ow, n * ow
    total = None
    for t in range(kh):
        lhs = hlo.slice(rows, [t * dh * per_row, 0], [t * dh * per_row + m, kw * c])
        r = kh - 1 - t if flip else t
        rhs = hlo.reshape(hlo.slice(w, [r, 0, 0], [r + 1, kw * c, o]), [kw * c, o])
        part = hlo.dot_general(lhs, rhs, [m, o], out.dtype, lhs_contract=[1], rhs_contract=[0])
        total = part if total is None else hlo.add(total, part)
    return hlo.transpose(hlo.reshape(total, [oh, n, ow, o]), [1, 0, 2, 3])


def _tap_major_patches(x, dtype, win):
    """Im2col of NHWC x as [KH*KW*C, N, OH, OW]: patches of x^T ([C, N, H, W]) stacked on axis 0,
    tap-major. The filter gradient and a first layer's forward pass (_channel_major_conv) build
    them with the same ops, so a training step builds them once. A trailing pad the windows
    never reach is not sliced. None where _patches gives none."""
    (plh, phh), (plw, phw) = win.pads
    return _patches(hlo.transpose(x, [3, 0, 1, 2]), dtype, (2, 3), 0, win.kernel, win.strides, win.dilations,
                    ((plh, max(phh, 0)), (plw, max(phw, 0))), win.out)


# The filter gradient in row taps. The tap-major patches of a wide input are KH*KW copies of it
# (cnn_train's conv2: 20 MB in 25 copies, 1.1 ms, for a 3.2 ms product). Laid out channels
# first ([C, H, N, W]), the KH row taps need no copies: the KW column taps stacked on axis 0,
# [KW*C, H*N*OW], hold every row tap's patches as a contiguous range of each row, which IREE
# reads in place. The product is KH matmuls of [KW*C, OH*N*OW] by dy laid out the same way,
# each giving one row of the filter (no sums between taps: each element is still one dot over
# batch and positions). Measured (2-core VM, interleaved blocks, two Sessions in one process):
# cnn_train's filter gradient 3.8-4.3 -> 3.35 ms (27 -> 12 dispatches), the step 0.966x
# (median of 21 blocks); ResNet-50 training 0.986x (median of 25). Where the forward pass
# takes row taps for the same reason: more than one row tap, rows one apart, KW*C >= 128.


def _row_tap_filter_grad(x, dy, out, win):
    """The [KH, KW, C, O] filter gradient of NHWC x and dy in row taps (see above), or None
    where _row_tap_geometry does not take the forward window."""
    if not _row_tap_geometry(x, out.dtype, win.kernel, win.strides, win.pads, win.out):
        return None
    (kh, kw), (dh, dw), (_sh, sw), (oh, ow) = win.kernel, win.dilations, win.strides, win.out
    n, _h, _w, c = hlo.shape_of(x)
    o = out.shape[-1]
    xt = _pad_spatial(hlo.transpose(x, [3, 1, 0, 2]), out.dtype, (1, 3), win.pads, (1, 1))
    _c, hp, _n, _wp = hlo.shape_of(xt)
    columns = [hlo.slice(xt, [0, 0, 0, t * dw], [c, hp, n, t * dw + (ow - 1) * sw + 1], [1, 1, 1, sw])
               for t in range(kw)]
    cols = hlo.reshape(columns[0] if kw == 1 else hlo.concatenate(columns, 0), [kw * c, hp * n * ow])
    dy_rows = hlo.reshape(hlo.transpose(dy, [1, 0, 2, 3]), [oh * n * ow, o])
    per_row, m = n * ow, oh * n * ow
    rows = [hlo.dot_general(hlo.slice(cols, [0, t * dh * per_row], [kw * c, t * dh * per_row + m]), dy_rows,
                            [kw * c, o], out.dtype, lhs_contract=[1], rhs_contract=[0]) for t in range(kh)]
    return hlo.reshape(hlo.concatenate(rows, 0), out.shape)


def _channel_major_conv(x, w, out, win):
    """NHWC x convolved with the [KH, KW, C, O] filter w as w^T @ tap-major patches (see
    _CHANNEL_MAJOR_MAX_C), [O, N*OH*OW], transposed back to NHWC; None without patches."""
    cols = _tap_major_patches(x, out.dtype, win)
    if cols is None:
        return None
    k, n, oh, ow = hlo.shape_of(cols)
    o = hlo.shape_of(w)[-1]
    yt = hlo.dot_general(hlo.reshape(w, [k, o]), hlo.reshape(cols, [k, n * oh * ow]), [o, n * oh * ow], out.dtype,
                         lhs_contract=[0], rhs_contract=[0])
    return hlo.transpose(hlo.reshape(yt, [o, n, oh, ow]), [1, 2, 3, 0])


def _im2col_dot(cols, w, out, contract: int):
    """The patch matrix times the filter flattened to [taps * C, O]; over a `?` batch as one 2-D
    matmul, [?*OH*OW, K] x [K, O], between reshapes (collapse_shape, expand_shape)."""
    *_, o = hlo.shape_of(w)
    w2 = hlo.reshape(w, [math.prod(hlo.shape_of(w)) // o, o])
    shape = hlo.shape_of(cols)
    if shape[0] is None and contract == len(shape) - 1:
        rows = hlo.reshape(cols, [None, shape[-1]])
        flat = hlo.dot_general(rows, w2, [None, o], out.dtype, lhs_contract=[1], rhs_contract=[0])
        return hlo.reshape(flat, out.shape)
    return hlo.dot_general(cols, w2, out.shape, out.dtype, lhs_contract=[contract], rhs_contract=[0])


def conv_lower(ctx, x, w):
    """Forward convolution: im2col + dot_general for NHWC, else stablehlo.convolution."""
    fmt, win, groups, out_c = conv_geometry(ctx, hlo.shape_of(x), hlo.shape_of(w))
    if _is_depthwise(ctx):
        *kernel, c, m = hlo.shape_of(w)
        w = hlo.reshape(w, [*kernel, 1, c * m])
    out = ctx.out()
    if _im2col(ctx, fmt, groups, dynamic_batch=True) and not _direct_first_conv(x, w):
        static = ctx.inputs[0].is_static  # (row taps and channel-major patches lay the batch out inside)
        if static and _row_taps(x, w, out.dtype, win.kernel, win.strides, win.pads, win.out):
            return _row_tap_conv(x, w, out, win.kernel, win.strides, win.dilations, win.pads, win.out)
        if static and hlo.shape_of(x)[-1] <= _CHANNEL_MAJOR_MAX_C:
            y = _channel_major_conv(x, w, out, win)
            if y is not None:
                return y
        cols = _patches(x, out.dtype, fmt.spatial, fmt.channel, win.kernel, win.strides, win.dilations, win.pads,
                        win.out)
        if cols is not None:
            return _im2col_dot(cols, w, out, fmt.channel)
    pads, strides = win.pads, win.strides
    if not ctx.inputs[0].is_static and groups > 1:
        return depthwise_taps(x, w, out, fmt, win, _pad_spatial)
    if not ctx.inputs[0].is_static:  # IREE 3.13 legalises no padded convolution over a `?` batch
        x, pads = _pad_spatial(x, out.dtype, fmt.spatial, pads, [1] * fmt.rank), ((0, 0),) * fmt.rank
    elif groups > 1:
        x, pads = _trim_unread_tail(x, fmt, win)
    if ctx.target == "cuda" and _strided_pointwise(win):
        x, strides = _every_stride(x, fmt, win), (1,) * fmt.rank
    return hlo.convolution(x, w, out.shape, out.dtype,
                           layout=f"{fmt.conv_io}x{fmt.filter_layout('i', 'o')}->{fmt.conv_io}",
                           strides=strides, padding=pads, rhs_dilation=win.dilations,
                           feature_group_count=groups)


def _trim_unread_tail(x, fmt: Format, win):
    """(x, pads) without the input no window reads: IREE 3.13 fails a strided grouped
    convolution whose last window stops short of the padded input's end ("'linalg.generic' op
    inferred input/output operand #1 has shape's dimension #1 to be 4, but found 3": depthwise,
    4 channels, 2x3 window, stride 2, VALID, input 3x2x4x4). The tail beyond
    (out - 1) * stride + extent never reaches the result, so the high padding shrinks by it,
    and where that is not enough the input is sliced; the same convolution, exact sizes."""
    shape = hlo.shape_of(x)
    limit, pads = list(shape), []
    for axis, (lo, hi), o, s, eff in zip(fmt.spatial, win.pads, win.out, win.strides, win.effective):
        unread = lo + shape[axis] + hi - ((o - 1) * s + eff) if o else 0
        cut = max(0, unread - hi)
        limit[axis] -= cut
        pads.append((lo, hi - (unread - cut) if unread > 0 else hi))
    if limit != shape:
        x = hlo.slice(x, [0] * len(shape), limit)
    return x, tuple(pads)


def _strided_pointwise(win) -> bool:
    """A 1x1 convolution with a stride and no padding (ResNet v1's downsampling bottlenecks)."""
    return all(k == 1 for k in win.kernel) and any(s > 1 for s in win.strides) and \
        not any(p for pair in win.pads for p in pair)


def _every_stride(x, fmt: Format, win):
    """The input positions a strided 1x1 convolution reads, as one strided slice. IREE 3.13 takes
    the strided convolution for a reduction (VectorDistribute, no tensor cores: ResNet-50
    inference's three downsampling 1x1 convs, 11% of its bf16 FLOPs); after the slice it is a
    1x1 convolution, a matmul on tensor cores (benchmarks/gpu_report_models.py, docs/gpu.md).
    Its filter gradient as a convolution over the batch, with bf16 operands, fails to compile
    ("failed to pack reduction dimensions for partial reduction"); after the slice it is a
    dot_general of x^T and dy."""
    shape = hlo.shape_of(x)
    limit, step = list(shape), [1] * len(shape)
    for axis, o, s in zip(fmt.spatial, win.out, win.strides):
        limit[axis], step[axis] = (o - 1) * s + 1, s
    return hlo.slice(x, [0] * len(shape), limit, step)


def np_conv(ctx, x, w):
    """NumPy reference of the forward convolutions: per tap, the grouped product, in float64."""
    fmt, win, groups, out_c = conv_geometry(ctx, x.shape, w.shape)
    w = _np_grouped_filter(ctx, w)
    acc = acc_dtype(x.dtype)
    xp = np_pad(fmt.to_last(x).astype(acc), win.pads)
    n, c = xp.shape[0], xp.shape[-1]
    y = np.zeros((n, *win.out, groups, out_c // groups), acc)
    for tap, index in taps(win):
        wg = w[tap].astype(acc).reshape(c // groups, groups, out_c // groups).transpose(1, 0, 2)
        xs = xp[index]
        y += np.einsum("...gc,gco->...go", xs.reshape(*xs.shape[:-1], groups, c // groups), wg)
    return fmt.from_last(y.reshape(n, *win.out, out_c)).astype(x.dtype)


CONV_ATTRS = ("T", "strides", "padding", "explicit_paddings", "data_format", "dilations")
register("Conv2D", infer=conv_infer, lower=conv_lower, kernel=np_conv, dtypes=FLOAT,
         attrs=CONV_ATTRS + ("use_cudnn_on_gpu",))
register("DepthwiseConv2dNative", infer=conv_infer, lower=conv_lower, kernel=np_conv, dtypes=FLOAT,
         attrs=CONV_ATTRS)
register("Conv3D", infer=conv_infer, lower=conv_lower, kernel=np_conv, dtypes=FLOAT,
         attrs=("T", "strides", "padding", "data_format", "dilations"))

# -- gradients ---------------------------------------------------------------------------------------


def shape_input(ctx, i: int, fmt: Format | None, fill):
    """The shape (of `fill`'s rank: 4-d, or 5-d for the 3-D ops) held by constant input i (a
    gradient's input_sizes, filter_sizes or orig_input_shape), or (when it is not constant)
    `fill`; with `fmt`, a 2-element input holds the spatial sizes only."""
    value = ctx.inputs[i].value
    if value is None:
        return fill
    value = [int(v) for v in np.asarray(value).reshape(-1)]
    if len(value) == 2 and fmt is not None:  # spatial sizes only: batch and channels from elsewhere
        return fmt.shape(fill[0], value, fill[fmt.channel])
    if len(value) != len(fill):
        raise ctx.error(f"input {i} must hold a {len(fill)}-d shape, got {value}")
    return tuple(value)


def _backprop_input_infer(ctx):
    _, w, dy = ctx.inputs
    fmt = Format(ctx, spatial_rank(ctx))
    rank = fmt.rank + 2
    fill = fmt.shape(known_dims(dy, rank)[0], (None,) * fmt.rank, known_dims(w, rank)[-2])
    return [TensorSpec(dy.dtype, shape_input(ctx, 0, fmt if fmt.rank == 2 else None, fill))]


def _backprop_filter_infer(ctx):
    x, _, dy = ctx.inputs
    fmt = Format(ctx, spatial_rank(ctx))
    rank = fmt.rank + 2
    fill = ((None,) * fmt.rank) + (known_dims(x, rank)[fmt.channel], known_dims(dy, rank)[fmt.channel])
    return [TensorSpec(x.dtype, shape_input(ctx, 1, None, fill))]


def _backprop_geometry(ctx, x_shape, w_shape, dy_shape):
    """(format, forward window, groups) of the convolution being differentiated; checks that the
    window reproduces dy's shape."""
    fmt = Format(ctx, spatial_rank(ctx))
    if x_shape[fmt.channel] != w_shape[-2]:
        raise ctx.error(f"grouped convolutions are not supported in gradients (input depth "
                        f"{x_shape[fmt.channel]}, filter depth {w_shape[-2]})")
    win = window(ctx, fmt, fmt.sizes(x_shape), w_shape[:-2])
    if tuple(win.out) != fmt.sizes(dy_shape):
        raise ctx.error(f"out_backprop spatial size {list(fmt.sizes(dy_shape))} does not match the "
                        f"convolution's output {list(win.out)}")
    return fmt, win, (x_shape[fmt.channel] if _is_depthwise(ctx) else 1)


def _backprop_input_lower(ctx, _, w, dy):
    """Transposed convolution: dy dilated by the strides, convolved with the flipped filter
    (for NHWC as im2col + dot_general, see _patches).

    In the im2col forms the filter is not flipped: the taps of dy are taken in reverse order
    instead. Flipping it cost a copy, and IREE 3.13 fused the flip, the in/out transpose and
    the reshape into one gather whose index arithmetic its CUDA backend cannot select (LLVM
    "Cannot select: v2i16 umul_lohi", an abort) for 3x3 filters of 256 and 512 channels: every
    ResNet-50 training step. tests/compile/test_cuda_compile.py keeps that compiling. For CUDA,
    where the convolution stays one op, the flip is its `window_reversal`: IREE then flips the
    filter in a dispatch of its own, where stablehlo.reverse fused into the same abort.

    Grouped as tf2xla does it: the [spatial..., C/G, O] filter becomes [spatial..., C, O/G]
    (TransposeFilterForGroupConvolutionBackpropInput); for depthwise, whose grouped filter is
    [KH, KW, 1, C*M], that is [KH, KW, C, M]: the filter as TensorFlow gives it.
    """
    out = ctx.out()
    fmt, win, groups = _backprop_geometry(ctx, out.shape, hlo.shape_of(w), hlo.shape_of(dy))
    pads = win.transposed_pads(fmt.sizes(out.shape))
    spatial = list(range(fmt.rank))
    if _im2col(ctx, fmt, groups):  # im2col of the dilated dy, taps reversed; filter [KH, KW, O, C]
        swapped = hlo.transpose(w, [0, 1, 3, 2])
        unit, sizes = (1,) * fmt.rank, fmt.sizes(out.shape)
        if _row_taps(dy, swapped, out.dtype, win.kernel, unit, pads, sizes, win.strides):
            return _row_tap_conv(dy, swapped, out, win.kernel, unit, win.dilations, pads, sizes, win.strides, flip=True)
        cols = _patches(dy, out.dtype, fmt.spatial, fmt.channel, win.kernel, unit, win.dilations, pads, sizes,
                        lhs_dilation=win.strides, flip=True)
        if cols is not None:
            return _im2col_dot(cols, swapped, out, fmt.channel)
    reversal = (True,) * fmt.rank if ctx.target == "cuda" else None  # CUDA: flipped by the op (docstring)
    w = w if reversal else hlo.reverse(w, spatial)
    return hlo.convolution(dy, w, out.shape, out.dtype,
                           layout=f"{fmt.conv_io}x{fmt.filter_layout('o', 'i')}->{fmt.conv_io}",
                           strides=(1,) * fmt.rank, padding=pads, lhs_dilation=win.strides,
                           rhs_dilation=win.dilations, feature_group_count=groups, window_reversal=reversal)


def _backprop_filter_lower(ctx, x, _, dy):
    """NHWC: row taps (_row_tap_filter_grad), else im2col of x times dy (see _patches).
    Depthwise: per tap, the window of x times dy, summed over batch and positions. Otherwise a
    convolution of x with dy that contracts over the batch: batch acts as the feature dim."""
    out = ctx.out()
    fmt, win, groups = _backprop_geometry(ctx, hlo.shape_of(x), out.shape, hlo.shape_of(dy))
    if groups != 1:
        return _depthwise_filter_taps(fmt, win, x, dy, out)
    if ctx.target == "cuda" and _strided_pointwise(win):  # x's strided positions^T . dy: a matmul
        batch_and_positions = [0, *fmt.spatial]
        dw = hlo.dot_general(_every_stride(x, fmt, win), dy, out.shape[-2:], out.dtype,
                             lhs_contract=batch_and_positions, rhs_contract=batch_and_positions)
        return hlo.reshape(dw, out.shape)
    if _im2col(ctx, fmt, groups):
        dw = _row_tap_filter_grad(x, dy, out, win)
        if dw is not None:
            return dw
        # Tap-major patches [KH*KW*C, N, OH, OW] times dy, which contracts over (N, OH, OW) with
        # the patch matrix as a plain row-major LHS.
        cols = _tap_major_patches(x, out.dtype, win)
        if cols is not None:
            kh, kw, c, o = out.shape
            dw = hlo.dot_general(cols, dy, [kh * kw * c, o], out.dtype,
                                 lhs_contract=[1, 2, 3], rhs_contract=[0, 1, 2])
            return hlo.reshape(dw, out.shape)
    pads = []
    for axis, size, o, eff, s, (lo, _hi) in zip(fmt.spatial, fmt.sizes(hlo.shape_of(x)), win.out,
                                                win.effective, win.strides, win.pads):
        hi = eff + (o - 1) * s - size - lo
        if hi < 0:  # trailing input rows no window reaches: drop them instead of negative padding
            shape = hlo.shape_of(x)
            limit = list(shape)
            limit[axis] = size + hi
            x, hi = hlo.slice(x, [0] * len(shape), limit), 0
        pads.append((lo, hi))
    dims = ", ".join(map(str, range(fmt.rank)))
    lhs = f"[f, b, {dims}]" if fmt.channels_first else f"[f, {dims}, b]"
    rhs = f"[i, o, {dims}]" if fmt.channels_first else f"[i, {dims}, o]"
    return hlo.convolution(x, dy, out.shape, out.dtype, layout=f"{lhs}x{rhs}->[{dims}, b, f]",
                           strides=win.dilations, padding=pads, rhs_dilation=win.strides)


def _depthwise_filter_taps(fmt: Format, win, x, dy, out):
    """The depthwise filter gradient [KH, KW, C, M]: each group has one input channel, so each
    tap's product is elementwise, reduced over batch and positions."""
    if fmt.channels_first:
        x, dy = hlo.transpose(x, [0, 2, 3, 1]), hlo.transpose(dy, [0, 2, 3, 1])
    kh, kw, c, m = out.shape
    n, *out_sizes, _ = hlo.shape_of(dy)
    lows = [lo for lo, _ in win.pads]
    x = hlo.pad(x, scalar(0, out.dtype), [0, *lows, 0], [0, *(max(hi, 0) for _, hi in win.pads), 0])
    dy = hlo.reshape(dy, [n, *out_sizes, c, m])
    per_tap = []
    for _tap, index in taps(win):
        window_x = hlo.slice(x, [0, *(sl.start for sl in index[1:]), 0], [n, *(sl.stop for sl in index[1:]), c],
                             [1, *(sl.step for sl in index[1:]), 1])
        prod = hlo.multiply(hlo.broadcast_in_dim(window_x, [n, *out_sizes, c, m], list(range(fmt.rank + 2))), dy)
        per_tap.append(hlo.reshape(hlo.reduce(prod, scalar(0, out.dtype), list(range(fmt.rank + 1))), [1, c, m]))
    return hlo.reshape(hlo.concatenate(per_tap, 0), out.shape)


def _np_backprop_input(ctx, _, w, dy):
    out = ctx.out()
    fmt, win, groups = _backprop_geometry(ctx, out.shape, w.shape, dy.shape)
    acc = acc_dtype(dy.dtype)
    n, *sizes, c = fmt.to_last(np.empty(out.shape, np.int8)).shape
    dx = np.zeros((n, *(size + lo + hi for size, (lo, hi) in zip(sizes, win.pads)), c), acc)
    g = fmt.to_last(dy).astype(acc)
    g = g.reshape(*g.shape[:-1], groups, -1)
    w = _np_grouped_filter(ctx, w)
    for tap, index in taps(win):
        wg = w[tap].astype(acc).reshape(c // groups, groups, -1)
        dx[index] += np.einsum("...go,igo->...gi", g, wg).reshape(*g.shape[:-2], c)
    crop = (slice(None), *(slice(lo, lo + size) for size, (lo, _) in zip(sizes, win.pads)))
    return fmt.from_last(dx[crop]).astype(out.dtype)


def _np_backprop_filter(ctx, x, _, dy):
    out = ctx.out()
    fmt, win, groups = _backprop_geometry(ctx, x.shape, out.shape, dy.shape)
    acc = acc_dtype(x.dtype)
    xp = np_pad(fmt.to_last(x).astype(acc), win.pads)
    c = xp.shape[-1]
    g = fmt.to_last(dy).astype(acc).reshape(-1, groups, dy.shape[fmt.channel] // groups)
    dw = np.zeros(_np_grouped_filter(ctx, np.empty(out.shape, np.int8)).shape, acc)
    for tap, index in taps(win):
        xs = xp[index].reshape(-1, groups, c // groups)
        dw[tap] = np.einsum("ngi,ngo->igo", xs, g).reshape(c // groups, -1)
    return dw.reshape(out.shape).astype(out.dtype)


_CONV_GRAD_ATTRS = CONV_ATTRS + ("use_cudnn_on_gpu",)
for _op, _attrs in {"Conv2D": _CONV_GRAD_ATTRS, "DepthwiseConv2dNative": CONV_ATTRS}.items():
    register(f"{_op}BackpropInput", infer=_backprop_input_infer, lower=_backprop_input_lower, dtypes=FLOAT,
             kernel=_np_backprop_input, attrs=_attrs, const_inputs=(0,))
    register(f"{_op}BackpropFilter", infer=_backprop_filter_infer, lower=_backprop_filter_lower, dtypes=FLOAT,
             kernel=_np_backprop_filter, attrs=_attrs, const_inputs=(1,))
# TensorFlow's 3-D gradients (the V1 ops, without Tshape and with a filter input, are deprecated).
_CONV3D_GRAD_ATTRS = ("T", "strides", "padding", "data_format", "dilations")
register("Conv3DBackpropInputV2", infer=_backprop_input_infer, lower=_backprop_input_lower, dtypes=FLOAT,
         kernel=_np_backprop_input, attrs=_CONV3D_GRAD_ATTRS + ("Tshape",), const_inputs=(0,))
register("Conv3DBackpropFilterV2", infer=_backprop_filter_infer, lower=_backprop_filter_lower, dtypes=FLOAT,
         kernel=_np_backprop_filter, attrs=_CONV3D_GRAD_ATTRS, const_inputs=(1,))
