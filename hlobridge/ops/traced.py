"""`Traced`: an `ir.Value` that NumPy arithmetic understands.

Update rules such as the optimizers' are written once, with NumPy operators and ufuncs
(`var - lr * grad`, `np.sqrt(v)`, comparisons, `np.where`, `np.sum(x, axis=0)`). Called on arrays they are the reference kernel; called
on `Traced` values they emit StableHLO, with NumPy broadcasting and Python/NumPy scalars
turned into constants of the value's dtype. One rule, two backends, no drift between them.
"""

from __future__ import annotations

import numpy as np

from hlobridge.dialects import stablehlo as hlo
from hlobridge.dialects.dynamic_shapes import dim_sources

_BINARY = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply",
           np.true_divide: "divide", np.maximum: "maximum", np.minimum: "minimum", np.power: "power",
           np.logical_and: "and", np.logical_or: "or",
           np.right_shift: "shift_right_arithmetic"}  # (signed integers: C++'s >> on them)
_UNARY = {np.sqrt: "sqrt", np.negative: "negate", np.exp: "exponential", np.abs: "abs",
          np.floor: "floor", np.rint: "round_nearest_even", np.sign: "sign", np.log: "log"}
_COMPARE = {np.greater: "GT", np.greater_equal: "GE", np.less: "LT", np.less_equal: "LE",
            np.equal: "EQ", np.not_equal: "NE"}
_REDUCE = {np.sum: "add", np.min: "minimum", np.max: "maximum", np.amin: "minimum", np.amax: "maximum"}


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
        if ufunc in _BINARY or ufunc in _COMPARE:
            a, b = _broadcast(*(self._lift(x) for x in inputs))
            if ufunc in _COMPARE:
                return Traced(hlo.compare(_COMPARE[ufunc], a, b), np.bool_)
            return Traced(hlo.binary(_BINARY[ufunc], a, b), self.dtype)
        return NotImplemented

    def __array_function__(self, func, types, args, kwargs):
        """np.where(cond, a, b) and the reductions np.sum/min/max(x, axis=...), traced."""
        if func is np.where and len(args) == 3 and not kwargs:
            cond, a, b = args
            like = next(x for x in (a, b, cond) if isinstance(x, Traced))
            dtype = like.dtype if like is not cond else np.result_type(a, b)
            a, b = (x.value if isinstance(x, Traced) else hlo.constant(np.asarray(x, dtype)) for x in (a, b))
            c = cond.value if isinstance(cond, Traced) else hlo.constant(np.asarray(cond, np.bool_))
            c, a, b = _broadcast(c, a, b)
            return Traced(hlo.select(c, a, b), dtype)
        if func in _REDUCE and set(kwargs) <= {"axis"} and len(args) == 1:
            x = args[0]
            axis = kwargs.get("axis")
            rank = len(x.shape)
            dims = list(range(rank)) if axis is None else [int(a) % rank for a in np.atleast_1d(axis)]
            if not dims:
                return x
            op = _REDUCE[func]
            init = 0 if op == "add" else (np.inf if op == "minimum" else -np.inf)
            if not np.issubdtype(x.dtype, np.floating) and op != "add":
                info = np.iinfo(x.dtype)
                init = info.max if op == "minimum" else info.min
            return Traced(hlo.reduce(x.value, hlo.constant(np.asarray(init, x.dtype)), list(dims), op), x.dtype)
        return NotImplemented

    def reshape(self, shape):
        """The value reshaped (one dimension may be -1), as ndarray.reshape."""
        return Traced(hlo.reshape(self.value, np.empty(self.shape, np.bool_).reshape(shape).shape), self.dtype)

    def astype(self, dtype):
        """The value converted to `dtype` (stablehlo.convert), as ndarray.astype."""
        return self if np.dtype(dtype) == self.dtype else Traced(hlo.convert(self.value, dtype), dtype)

    def __add__(self, o): return np.add(self, o)
    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.true_divide(self, o)
    def __rtruediv__(self, o): return np.true_divide(o, self)
    def __neg__(self): return np.negative(self)
    def __abs__(self): return np.abs(self)
    def __pow__(self, o): return np.power(self, o)
    def __lt__(self, o): return np.less(self, o)
    def __le__(self, o): return np.less_equal(self, o)
    def __gt__(self, o): return np.greater(self, o)
    def __ge__(self, o): return np.greater_equal(self, o)
    def __and__(self, o): return np.logical_and(self, o)
    def __or__(self, o): return np.logical_or(self, o)


def broadcast_shapes(*shapes) -> tuple:
    """NumPy's broadcast of `shapes`, with None for a `?` dimension: a `?` meets 1 or another
    `?` as itself (the same symbol: analysis/symbolic_dims.py), a static size wins over a `?`."""
    if all(None not in s for s in shapes):
        return np.broadcast_shapes(*(tuple(s) for s in shapes))
    rank = max(len(s) for s in shapes)
    out = []
    for j in range(rank):
        dims = {s[len(s) - rank + j] for s in shapes if len(s) - rank + j >= 0}
        static = {d for d in dims if d is not None and d != 1}
        if len(static) > 1:
            raise ValueError(f"shapes {shapes} do not broadcast")
        out.append(static.pop() if static else (None if None in dims else 1))
    return tuple(out)


def _broadcast(*values):
    """The values broadcast to their common shape, NumPy's way."""
    shape = broadcast_shapes(*(hlo.shape_of(v) for v in values))
    with dim_sources(values):  # a `?` of the result is one of the values' own
        return [hlo.broadcast_to(v, shape) for v in values]
