"""Bringing values to the host: one rule for every place that needs NumPy.

Values in flight are NumPy arrays or IREE device arrays (cluster outputs, variables a cluster
wrote). On local devices `to_host()` maps the buffer (no copy); on CUDA it copies.
"""

from __future__ import annotations

import numpy as np


def is_device_array(value) -> bool:
    """Whether `value` is an IREE device array (it has `to_host()`) rather than a host value."""
    return hasattr(value, "to_host")


def to_host(value):
    """A device array's contents as a NumPy array; anything else unchanged."""
    return np.asarray(value.to_host()) if is_device_array(value) else value
