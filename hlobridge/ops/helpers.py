"""Helpers the op families share: broadcasting, axes, constant inputs, output specs, limits.

Each is written once here so that the families agree on it (two copies of `lowest` had
already drifted apart on bool).
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

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


def merge_dims(ctx, *dims):
    """One dimension that several inputs must agree on: the known size, None if none is known."""
    known = {d for d in dims if d is not None}
    if len(known) > 1:
        raise ctx.error(f"dimensions {sorted(known)} should be equal")
    return known.pop() if known else None


def same_as_input(ctx, i: int = 0):
    """Infer rule of an op whose output is input i's dtype and shape."""
    s = ctx.inputs[i]
    return [TensorSpec(s.dtype, s.shape, handle=list_facts(s))]


def list_facts(spec: TensorSpec):
    """What a pass-through op keeps of a spec's handle: a TensorList's facts (lists/values.py)."""
    return spec.handle if spec.dtype == dtypes.VARIANT else None


def known_dims(spec: TensorSpec, rank: int) -> tuple:
    """A spec's dims, or all-unknown dims of the expected rank when its rank is unknown."""
    return (None,) * rank if spec.shape is None else spec.shape


def require_rank(ctx, i: int, ranks):
    """Raise unless input i's rank (when known) is one of `ranks`."""
    shape = ctx.inputs[i].shape
    if shape is not None and len(shape) not in ranks:
        raise ctx.error(f"input {i} must have rank {' or '.join(map(str, ranks))}, got shape {list(shape)}")


def normalize_axis(ctx, axis: int, rank: int) -> int:
    """axis in [-rank, rank) as a non-negative index; an error naming the node otherwise."""
    if not -rank <= axis < max(rank, 1):
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def require_float(ctx, i: int = 0):
    """Raise unless input i is floating-point (for ops TensorFlow defines on floats only)."""
    if not dtypes.is_floating(ctx.inputs[i].dtype):
        raise ctx.error(f"expects a floating-point input, got {dtypes.name(ctx.inputs[i].dtype)}")


def out_dtype(ctx, i: int = 0):
    """Output i's dtype as a NumPy dtype."""
    return np.dtype(ctx.outputs[i].dtype)


# -- constant inputs (shapes, axes, indices) --------------------------------------------------------


def value_of(ctx, i: int):
    """Input i's value as an array, or None when it is not a compile-time constant."""
    v = ctx.inputs[i].value
    return None if v is None else np.asarray(v)


def ints(values) -> list[int]:
    """A shape or axis tensor as a flat list of Python ints."""
    return [int(v) for v in np.ravel(values)]


def unknown_vector_dims(ctx, i: int):
    """(None,) * n for a shape-tensor input whose length n is known but value is not."""
    s = ctx.inputs[i].shape
    return None if s is None or len(s) != 1 or s[0] is None else (None,) * s[0]


def num_elements(shape) -> int:
    """The number of elements of a static shape (1 for a scalar), as a Python int."""
    return int(np.prod(shape, dtype=np.int64))


# -- outputs ------------------------------------------------------------------------------------------


def out_spec(ctx, shape, i: int = 0, dtype=None) -> TensorSpec:
    """A spec of `shape` (None: unknown rank) with input i's dtype, or `dtype` when given."""
    return TensorSpec(dtype if dtype is not None else ctx.inputs[i].dtype,
                      None if shape is None else tuple(shape))


def as_out(ctx, array, i: int = 0) -> np.ndarray:
    """A kernel's result cast to output i's dtype."""
    return np.asarray(array).astype(ctx.out(i).dtype)


def reshape_to_out(ctx, x, i: int = 0):
    """Value x reshaped to output i's (static) shape."""
    return hlo.reshape(x, ctx.out(i).shape)


def scalar(value, dtype):
    """A 0-d constant of `dtype`: the init value of reduce, reduce_window and pad."""
    return hlo.constant(np.array(value, dtype=dtype))


def acc_dtype(dtype):
    """NumPy accumulation type for a kernel: float64 keeps the oracle more exact than the device."""
    dtype = np.dtype(dtype)
    if dtypes.is_floating(dtype):
        return np.float64
    if dtype.kind == "c":
        return np.complex128
    return np.int64 if dtype.kind in "iu" else dtype


# -- element-type limits -------------------------------------------------------------------------------


def lowest(dtype):
    """Identity of max: -inf for floats (so an empty reduction or an all-padding window gives -inf,
    like TF), the smallest integer for integers, False for bool."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return False
    return -np.inf if dtypes.is_floating(dtype) else np.iinfo(dtype).min


def highest(dtype):
    """Identity of min: +inf for floats, the largest integer for integers, True for bool."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    return np.inf if dtypes.is_floating(dtype) else np.iinfo(dtype).max
