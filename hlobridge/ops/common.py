"""Shape helpers shared by the op families."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..spec import TensorSpec


def broadcast_shapes(ctx, *shapes):
    """NumPy broadcasting with unknown dims (None) and unknown ranks (None shape)."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes]):
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ctx.error(f"incompatible shapes for broadcasting: "
                            f"{' vs '.join(str(list(s)) for s in shapes)}")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def same_as_input(ctx, i: int = 0):
    s = ctx.inputs[i]
    return [TensorSpec(s.dtype, s.shape)]


def normalize_axis(ctx, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def require_float(ctx, i: int = 0):
    if not dtypes.is_floating(ctx.inputs[i].dtype):
        raise ctx.error(f"expects a floating-point input, got {dtypes.name(ctx.inputs[i].dtype)}")


def out_dtype(ctx, i: int = 0):
    return np.dtype(ctx.outputs[i].dtype)
