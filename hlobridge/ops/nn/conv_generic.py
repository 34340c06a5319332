"""Conv: TensorFlow's generic N-d convolution op (tf.nn.convolution writes it for some ranks and
batch shapes; tf2xla conv_ops.cc compiles it with ConvOp's rule).

It is Conv1D/2D/3D with two generalisations, both reduced to conv.py's one rule here:
`batch_dims` leading batch dimensions (folded into one around the convolution) and
data_format CHANNELS_LAST / CHANNELS_FIRST (NHWC/NDHWC or the channels-first forms for the
input's spatial rank, 2 or 3 as TF allows); `groups` is implied by the input and filter channels, as for Conv2D.
The rule sees the node through `_ConvView`, which presents it as the plain convolution of that
rank on the folded batch.
"""

from __future__ import annotations

import math

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..registry import register
from ..typesets import FLOAT
from .conv import CONV_ATTRS, conv_infer, conv_lower, np_conv
from .geometry import FORMATS


class _ConvView:
    """The Conv node as conv.py's rule reads it: spatial rank, data_format spelled for that rank,
    inputs and outputs with the batch dims folded into one."""

    def __init__(self, ctx):
        self.ctx, self.node, self.name, self.op = ctx, ctx.node, ctx.name, "Conv"
        self.target = ctx.target  # (conv.py lowers per target)
        x = ctx.inputs[0]
        self.batch_dims = int(ctx.attr("batch_dims", 1))
        if x.shape is None or ctx.inputs[1].shape is None:
            raise ctx.error("Conv needs the ranks of its input and filter")
        self.spatial_rank = len(ctx.inputs[1].shape) - 2
        if self.spatial_rank not in (2, 3) or len(x.shape) != self.batch_dims + self.spatial_rank + 1:
            raise ctx.error(f"input {x} and filter {ctx.inputs[1]} do not make a 2- or 3-D convolution with "
                            f"batch_dims {self.batch_dims} (TF: the input must be rank 4 or 5, excluding extra "
                            f"batch dimensions)")
        fmt = ctx.attr("data_format", "CHANNELS_LAST")
        if fmt not in ("CHANNELS_LAST", "CHANNELS_FIRST"):
            raise ctx.error(f"data_format must be CHANNELS_LAST or CHANNELS_FIRST, got {fmt!r}")
        self.format = FORMATS[self.spatial_rank][fmt == "CHANNELS_FIRST"]
        self.batch = x.shape[:self.batch_dims]
        self.inputs = [self.fold(x), ctx.inputs[1]]
        self.outputs = None if ctx.outputs is None else [self.fold(ctx.outputs[0])]

    def fold(self, spec):
        batch = None if None in self.batch else math.prod(self.batch)
        return TensorSpec(spec.dtype, (batch,) + tuple(spec.shape[self.batch_dims:]))

    def attr(self, name, *default):
        """The attribute as conv.py reads it. strides, dilations, explicit_paddings have one entry
        for all the batch dims (TF checks spatial rank + 2); TF writes dilations=[] for ones."""
        if name == "data_format":
            return self.format
        value = self.ctx.attr(name, *default)
        if name == "dilations" and not list(value):
            return [1] * (self.spatial_rank + 2)
        return value

    def error(self, message, *args, **kw):
        return self.ctx.error(message, *args, **kw)

    def lowering_error(self, message):
        return self.ctx.lowering_error(message)

    def out(self, i=0):
        return self.outputs[i]


def _conv_infer(ctx):
    view = _ConvView(ctx)
    (spec,) = conv_infer(view)
    c, wi = view.inputs[0].shape[1 if view.format[1] == "C" else -1], ctx.inputs[1].shape[-2]
    groups = int(ctx.attr("groups", 1))
    if None not in (c, wi) and c != groups * wi:
        raise ctx.error(f"input depth {c} must be groups ({groups}) times the filter's input depth {wi}")
    return [TensorSpec(spec.dtype, tuple(view.batch) + tuple(spec.shape[1:]))]


def _conv_kernel(ctx, x, w):
    view = _ConvView(ctx)
    y = np_conv(view, x.reshape((-1,) + x.shape[view.batch_dims:]), w)
    return y.reshape(ctx.out().shape)


def _conv_lower(ctx, x, w):
    view = _ConvView(ctx)
    shape = hlo.shape_of(x)
    y = conv_lower(view, hlo.reshape(x, [math.prod(shape[:view.batch_dims])] + shape[view.batch_dims:]), w)
    return hlo.reshape(y, list(ctx.out().shape))


register("Conv", infer=_conv_infer, lower=_conv_lower, kernel=_conv_kernel, dtypes=FLOAT,
         attrs=CONV_ATTRS + ("batch_dims", "groups"))
