"""A depthwise convolution over a `?` batch, as a sum of taps.

IREE 3.13 legalises no grouped `stablehlo.convolution` whose batch is dynamic ("failed to
legalize operation 'stablehlo.convolution'", measured with a 3x3 depthwise over ?x6x6x4), so a
depthwise convolution with a `?` batch is written as what it computes: for every kernel tap
(kh, kw), the padded input's strided window times that tap's per-channel weights, summed. The
windows are `real_dynamic_slice`s (dialects/dynamic_shapes.py), the products and the sum
elementwise. A channel multiplier above 1 is not written so (reason `dynamic_dim_unsupported`).
"""

from __future__ import annotations

from hlobridge.dialects import dynamic_shapes
from hlobridge.dialects import stablehlo as hlo

from ..traced import Traced


def depthwise_taps(x, w, out, fmt, win, pad_spatial):
    """out (its spec) of a channels-last depthwise convolution of x (`?` batch) with the
    [KH, KW, 1, C] filter w (TF's [KH, KW, C, 1] reshaped as conv_lower does); `pad_spatial(x,
    dtype, spatial, pads, lhs_dilation)` pads x."""
    *kernel, one, c = hlo.shape_of(w)
    if one != 1 or c != hlo.shape_of(x)[-1] or fmt.channels_first:
        raise dynamic_shapes.DynamicDimError("a depthwise convolution with a channel multiplier or "
                                             "channels first over a `?` batch")
    xp = pad_spatial(x, out.dtype, fmt.spatial, win.pads, [1] * fmt.rank)
    rank = fmt.rank + 2
    total = None
    for tap in _taps(kernel):
        start, limit, strides = [0] * rank, [None] + [0] * fmt.rank + [c], [1] * rank
        for a, k, s, d, o in zip(fmt.spatial, tap, win.strides, win.dilations, win.out):
            start[a], strides[a] = k * d, s
            limit[a] = k * d + (o - 1) * s + 1
        window = Traced(dynamic_shapes.slice(xp, start, limit, strides), out.dtype)
        weights = hlo.reshape(hlo.slice(w, [*tap, 0, 0], [t + 1 for t in tap] + [1, c]), [c])
        term = window * Traced(weights, out.dtype)
        total = term if total is None else total + term
    return total.value


def _taps(kernel):
    if not kernel:
        yield ()
        return
    for k in range(kernel[0]):
        for rest in _taps(kernel[1:]):
            yield (k, *rest)
