"""Bringing values to the host: one rule for every place that needs NumPy.

Values in flight are NumPy arrays or device arrays (cluster outputs, variables a cluster
wrote): IREE's DeviceArrays, or jax Arrays where XLA ran the cluster (runtime/pjrt.py). On
IREE's local devices `to_host()` maps the buffer (no copy); on CUDA it copies.
"""

from __future__ import annotations

import numpy as np


def is_device_array(value) -> bool:
    """Whether `value` is a device array (IREE's have `to_host()`, jax's `block_until_ready()`)
    rather than a host value."""
    return hasattr(value, "to_host") or _is_pjrt_array(value)


def _is_pjrt_array(value) -> bool:
    return hasattr(value, "block_until_ready") and hasattr(value, "is_deleted")


def to_host(value):
    """A device array's contents as a NumPy array; anything else unchanged."""
    if hasattr(value, "to_host"):
        return np.asarray(value.to_host())
    return np.asarray(value) if _is_pjrt_array(value) else value
