"""TensorSpec: what is known about one tensor before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dtypes


@dataclass(frozen=True)
class TensorSpec:
    """dtype, shape and (for small constant-foldable tensors) the value.

    shape is a tuple with None for an unknown dimension, or None for an unknown rank.
    value is set when the tensor is a compile-time constant (Const, or folded shape
    arithmetic such as Shape -> Prod), so that shape-taking ops (Reshape, Fill, ...)
    can see it.
    """

    dtype: object
    shape: tuple | None
    value: np.ndarray | None = None
    # For resource tensors (variable handles): the variable's (dtype, shape).
    handle: tuple | None = None
    # For an integer shape tensor with some entries unknown (Shape of a `?`-batch tensor and
    # what is computed from it): its value as float64 with NaN for each unknown entry
    # (analysis/symbolic_dims.py). None when nothing is known, or when `value` is set.
    partial: np.ndarray | None = None

    @property
    def rank(self) -> int | None:
        """The number of dimensions, or None for an unknown rank."""
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        """Whether the rank and every dimension are known."""
        return self.shape is not None and all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        """The product of the dimensions when the shape is static, else None."""
        return int(np.prod(self.shape, dtype=np.int64)) if self.is_static else None

    def __str__(self) -> str:
        if self.shape is None:
            dims = "*"
        else:
            dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{dtypes.name(self.dtype)}[{dims}]"

    def __eq__(self, other):  # values are numpy arrays: compare them by content
        if not isinstance(other, TensorSpec):
            return NotImplemented
        if (self.dtype, self.shape) != (other.dtype, other.shape):
            return False
        if self.value is None or other.value is None:
            return self.value is other.value
        return np.array_equal(self.value, other.value)

    __hash__ = None


def of_array(array: np.ndarray) -> TensorSpec:
    """The spec of a concrete array: its dtype and shape, with the array itself as the value."""
    return TensorSpec(array.dtype, tuple(array.shape), array)
