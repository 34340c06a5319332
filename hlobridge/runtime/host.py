"""Bringing values to the host: one rule for every place that needs NumPy.

Values in flight are NumPy arrays or device arrays (cluster outputs, variables a cluster
wrote): IREE's DeviceArrays, or jax Arrays where XLA ran the cluster (runtime/pjrt.py). On
IREE's local devices `to_host()` maps the buffer (no copy); on CUDA it copies.
`shape_of` and `dtype_name` read what a call's signature needs without bringing anything to
the host (a DeviceArray's own `.shape` maps or copies the whole buffer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .straight_call import mapped


def is_device_array(value) -> bool:
    """Whether `value` is a device array (IREE's have `to_host()`, jax's `block_until_ready()`)
    rather than a host value."""
    return hasattr(value, "to_host") or _is_pjrt_array(value)


def _is_pjrt_array(value) -> bool:
    return hasattr(value, "block_until_ready") and hasattr(value, "is_deleted")


def to_host(value):
    """A device array's contents as a NumPy array; anything else unchanged."""
    if hasattr(value, "to_host"):
        host = mapped(value)  # (a cluster's result in host memory: mapped without IREE's checks)
        return np.asarray(value.to_host()) if host is None else host
    return np.asarray(value) if _is_pjrt_array(value) else value


def shape_of(value) -> tuple:
    """A host or device array's shape, from the buffer view where it is a device array."""
    view = getattr(value, "_buffer_view", None)
    return tuple(value.shape) if view is None else tuple(view.shape)


_DTYPE_NAMES: dict = {}


def dtype_name(dtype) -> str:
    """str(dtype), remembered: NumPy builds the name anew each time (a signature asks per call)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


@dataclass(frozen=True)
class PlannedArg:
    """What planning knows of an argument it has no value for: its dtype and static shape
    (all a signature needs of an input that is not read as a constant)."""

    dtype: np.dtype
    shape: tuple
