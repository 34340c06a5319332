"""Block rearrangements: DepthToSpace, SpaceToDepth, SpaceToBatch(ND), BatchToSpace(ND).

Each is a fixed sequence of pad / reshape / transpose / slice steps computed from the static
shapes (TensorFlow's own definitions, e.g. SpaceToBatchND = pad, reshape to split each spatial
dim into (size / block, block), move the blocks in front of the batch, merge them into it).
One function plans the steps; the kernel runs them on NumPy arrays and the lowering emits them
as StableHLO, so the two cannot disagree about the layout.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

from ...spec import TensorSpec
from ..helpers import ints, value_of
from ..registry import register


def _run_numpy(x, steps):
    for step, *args in steps:
        if step == "pad":
            x = np.pad(x, args[0])
        elif step == "reshape":
            x = x.reshape(args[0])
        elif step == "transpose":
            x = x.transpose(args[0])
        else:
            x = x[tuple(slice(a, b) for a, b in zip(*args))]
    return x


def _run_hlo(x, steps, dtype):
    for step, *args in steps:
        if step == "pad":
            x = hlo.pad(x, hlo.constant(np.zeros((), dtype)), [lo for lo, _ in args[0]], [hi for _, hi in args[0]])
        elif step == "reshape":
            x = hlo.reshape(x, args[0])
        elif step == "transpose":
            x = hlo.transpose(x, args[0])
        else:
            x = hlo.slice(x, *args)
    return x


def _shape_after(shape, steps) -> tuple:
    shape = list(shape)
    for step, *args in steps:
        if step == "pad":
            shape = [d + lo + hi for d, (lo, hi) in zip(shape, args[0])]
        elif step == "reshape":
            shape = list(args[0])
        elif step == "transpose":
            shape = [shape[p] for p in args[0]]
        else:
            shape = [b - a for a, b in zip(*args)]
    return tuple(shape)


# -- DepthToSpace, SpaceToDepth -----------------------------------------------------------------------


def _depth_space_steps(ctx, shape):
    b = int(ctx.attr("block_size"))
    fmt = ctx.attr("data_format", "NHWC")
    if b < 2 or fmt not in ("NHWC", "NCHW") or len(shape) != 4:
        raise ctx.error(f"block_size {b} must be >= 2, data_format NHWC or NCHW (got {fmt}), input rank 4")
    n, h, w, c = (shape[0], shape[2], shape[3], shape[1]) if fmt == "NCHW" else shape
    if ctx.op == "DepthToSpace":
        if c % (b * b):
            raise ctx.error(f"depth {c} is not divisible by block_size^2 = {b * b}")
        cb = c // (b * b)
        if fmt == "NHWC":  # out[n, h*b + i, w*b + j, k] = in[n, h, w, (i*b + j)*cb + k]
            return [("reshape", [n, h, w, b, b, cb]), ("transpose", [0, 1, 3, 2, 4, 5]),
                    ("reshape", [n, h * b, w * b, cb])]
        return [("reshape", [n, b, b, cb, h, w]), ("transpose", [0, 3, 4, 1, 5, 2]),
                ("reshape", [n, cb, h * b, w * b])]
    if h % b or w % b:
        raise ctx.error(f"height {h} and width {w} must be divisible by block_size {b}")
    if fmt == "NHWC":
        return [("reshape", [n, h // b, b, w // b, b, c]), ("transpose", [0, 1, 3, 2, 4, 5]),
                ("reshape", [n, h // b, w // b, b * b * c])]
    return [("reshape", [n, c, h // b, b, w // b, b]), ("transpose", [0, 3, 5, 1, 2, 4]),
            ("reshape", [n, b * b * c, h // b, w // b])]


def _depth_space_infer(ctx):
    x = ctx.inputs[0]
    if not x.is_static:
        return [TensorSpec(x.dtype, None if x.shape is None else (None,) * len(x.shape))]
    return [TensorSpec(x.dtype, _shape_after(x.shape, _depth_space_steps(ctx, x.shape)))]


for _op in ("DepthToSpace", "SpaceToDepth"):
    register(_op, infer=_depth_space_infer, attrs=("T", "block_size", "data_format"),
             lower=lambda ctx, x: _run_hlo(x, _depth_space_steps(ctx, hlo.shape_of(x)), ctx.out().dtype),
             kernel=lambda ctx, x: _run_numpy(x, _depth_space_steps(ctx, x.shape)))


# -- SpaceToBatchND, BatchToSpaceND ---------------------------------------------------------------------
# Inputs: x [batch, spatial (M dims)..., rest...], block_shape [M], paddings / crops [M, 2].


def _batch_space_steps(ctx, shape, block, pairs):
    block = ints(block)
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2).tolist()
    m = len(block)
    if len(pairs) != m or m + 1 > len(shape) or min(block, default=1) < 1 or min(sum(pairs, []), default=0) < 0:
        raise ctx.error(f"block_shape {block} and paddings/crops {pairs} do not fit an input of shape {list(shape)}")
    batch, spatial, rest = shape[0], list(shape[1:m + 1]), list(shape[m + 1:])
    prod = int(np.prod(block))
    if ctx.op.startswith("SpaceToBatch"):
        padded = [s + lo + hi for s, (lo, hi) in zip(spatial, pairs)]
        if any(p % b for p, b in zip(padded, block)):
            raise ctx.error(f"padded spatial sizes {padded} are not divisible by block_shape {block}")
        split = [v for p, b in zip(padded, block) for v in (p // b, b)]
        perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
        return [("pad", [(0, 0)] + [tuple(p) for p in pairs] + [(0, 0)] * len(rest)),
                ("reshape", [batch] + split + rest), ("transpose", perm),
                ("reshape", [batch * prod] + [p // b for p, b in zip(padded, block)] + rest)]
    if batch % prod:
        raise ctx.error(f"batch {batch} is not divisible by the product of block_shape {block}")
    full = [s * b for s, b in zip(spatial, block)]
    if any(lo + hi > f for f, (lo, hi) in zip(full, pairs)):
        raise ctx.error(f"crops {pairs} are larger than the spatial sizes {full}")
    perm = [m] + [v for i in range(m) for v in (m + 1 + i, i)] + list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    out = [batch // prod] + full + rest
    return [("reshape", block + [batch // prod] + spatial + rest), ("transpose", perm), ("reshape", out),
            ("slice", [0] + [lo for lo, _ in pairs] + [0] * len(rest),
             [out[0]] + [f - hi for f, (_, hi) in zip(full, pairs)] + rest)]


def _block_and_pairs(ctx, values):
    """(block_shape, paddings/crops) from the op's inputs after x: SpaceToBatchND/BatchToSpaceND
    take both as tensors; the older SpaceToBatch/BatchToSpace take a 4-D input, a block_size
    attribute for both spatial dims and the [2, 2] paddings/crops (TF's space_to_batch_op.cc)."""
    if ctx.op.endswith("ND"):
        return values
    if ctx.inputs[0].shape is not None and len(ctx.inputs[0].shape) != 4:
        raise ctx.error(f"input must be 4-D, got {ctx.inputs[0]}")
    pairs = values[0]
    if pairs is not None and np.shape(pairs) != (2, 2):
        raise ctx.error(f"paddings/crops must be a 2 x 2 matrix, got shape {list(np.shape(pairs))}")
    return [int(ctx.attr("block_size"))] * 2, pairs


def _batch_space_infer(ctx):
    x = ctx.inputs[0]
    block, pairs = _block_and_pairs(ctx, [value_of(ctx, i) for i in range(1, len(ctx.inputs))])
    if not x.is_static or block is None or pairs is None:
        return [TensorSpec(x.dtype, None if x.shape is None else (None,) * len(x.shape))]
    return [TensorSpec(x.dtype, _shape_after(x.shape, _batch_space_steps(ctx, x.shape, block, pairs)))]


def _batch_space_lower(ctx, x, *_):
    consts = [ctx.const(i) for i in range(1, len(ctx.inputs))]
    return _run_hlo(x, _batch_space_steps(ctx, hlo.shape_of(x), *_block_and_pairs(ctx, consts)), ctx.out().dtype)


def _batch_space_kernel(ctx, x, *values):
    return _run_numpy(x, _batch_space_steps(ctx, x.shape, *_block_and_pairs(ctx, list(values))))


for _op, _pairs in (("SpaceToBatchND", "Tpaddings"), ("BatchToSpaceND", "Tcrops")):
    register(_op, infer=_batch_space_infer, attrs=("T", "Tblock_shape", _pairs), const_inputs=(1, 2),
             lower=_batch_space_lower, kernel=_batch_space_kernel)
for _op, _pairs in (("SpaceToBatch", "Tpaddings"), ("BatchToSpace", "Tidx")):
    register(_op, infer=_batch_space_infer, attrs=("T", "block_size", _pairs), const_inputs=(1,),
             lower=_batch_space_lower, kernel=_batch_space_kernel)
