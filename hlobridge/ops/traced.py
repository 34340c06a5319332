"""`Traced`: an `ir.Value` that NumPy arithmetic understands.

Update rules such as the optimizers' are written once, with NumPy operators and ufuncs
(`var - lr * grad`, `np.sqrt(v)`). Called on arrays they are the reference kernel; called
on `Traced` values they emit StableHLO, with NumPy broadcasting and Python/NumPy scalars
turned into constants of the value's dtype. One rule, two backends, no drift between them.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo

_BINARY = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply",
           np.true_divide: "divide", np.maximum: "maximum", np.minimum: "minimum"}
_UNARY = {np.sqrt: "sqrt", np.negative: "negate", np.exp: "exponential", np.abs: "abs"}


class Traced:
    """A StableHLO value of a known NumPy dtype, usable in NumPy expressions."""

    __array_priority__ = 1000

    def __init__(self, value, dtype):
        self.value = value
        self.dtype = np.dtype(dtype)

    @property
    def shape(self) -> tuple:
        """The traced value's static shape."""
        return tuple(hlo.shape_of(self.value))

    def _lift(self, x):
        if isinstance(x, Traced):
            return x.value
        return hlo.constant(np.asarray(x, dtype=self.dtype))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            return NotImplemented
        if ufunc in _UNARY:
            return Traced(hlo.unary(_UNARY[ufunc], self._lift(inputs[0])), self.dtype)
        if ufunc in _BINARY:
            a, b = (self._lift(x) for x in inputs)
            shape = np.broadcast_shapes(tuple(hlo.shape_of(a)), tuple(hlo.shape_of(b)))
            return Traced(hlo.binary(_BINARY[ufunc], hlo.broadcast_to(a, shape), hlo.broadcast_to(b, shape)),
                          self.dtype)
        return NotImplemented

    def __add__(self, o): return np.add(self, o)
    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.true_divide(self, o)
    def __rtruediv__(self, o): return np.true_divide(o, self)
    def __neg__(self): return np.negative(self)
