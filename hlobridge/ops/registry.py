"""The op registry: one entry per TensorFlow op, everything hlobridge knows about it.

An entry has
  infer   (ctx) -> [TensorSpec]          output dtypes and shapes, before any IR exists;
  lower   (ctx, *operands) -> Value(s)   StableHLO for it (None: runs on its kernel only);
  kernel  (ctx, *arrays) -> array(s)     NumPy reference: fallback, constant folding, test oracle;
  attrs                                  every attribute TensorFlow may write on it; anything else
                                         (not starting with "_") is an error, not silence;
  const_inputs                           inputs that must be compile-time constants (shapes, axes);
                                         the lowering sees their values via ctx.const(i), not Values;
  ref_inputs                             inputs taken by reference (a ref variable that the op
                                         updates, e.g. Assign's input 0); others are dereferenced;
  stateful                               touches variables or random state: never folded, runs once
                                         per step; the kernel reaches the variables as ctx.state;
  dtypes, dtype_attrs                    the element types the lowering handles, for the attributes
                                         that carry them (default: the type attributes among attrs,
                                         and every real type and bool); see typesets.py;
  output_args                            names of the op's output args, for ops with more than one
                                         (FunctionDef bodies name outputs "node:arg:i");
  uncompilable  (node) -> str | None     for an op that compiles in some configurations only: why this
                                         node cannot (e.g. a data-dependent output shape), else None;
                                         such a node runs on its kernel (clustering reason
                                         `uncompilable_config`).

Families (binary elementwise ops, reductions, ...) register many entries from one generic
rule and a table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import LoweringError, ShapeInferenceError
from ..spec import TensorSpec
from . import typesets

_REQUIRED = object()


class OpContext:
    """What an op rule sees of its node: attributes, input specs, output specs."""

    def __init__(self, node, inputs: list[TensorSpec], outputs: list[TensorSpec] | None = None,
                 state=None, functions=None, target: str = "llvm-cpu"):
        self.node = node
        self.inputs = inputs
        self.outputs = outputs
        # the IREE target a lowering rule emits for ("llvm-cpu", "cuda"): where what pays on a
        # CPU does not on a GPU (conv.py's im2col and row taps, matmul.py's blocks of TF's CPU
        # kernel), a rule chooses by it; kernels and shape inference never read it
        self.target = target
        self.state = state  # the session's variable store, for stateful kernels
        # ops.calls.Functions, for ops that name functions (If, While, Case): `infer`
        # everywhere, `call` when running kernels, `lower` when lowering (see control/flow.py);
        # handed in by whoever runs the stage, never looked up from the graph
        self.functions = functions

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node.name

    @property
    def op(self) -> str:
        """The node's op type."""
        return self.node.op

    def attr(self, name: str, default=_REQUIRED):
        """The decoded attribute; without a default, a missing one is an error naming the node."""
        value = self.node.attrs.get(name, default)
        if value is _REQUIRED:
            raise self.error(f"missing required attribute '{name}'")
        return value

    def error(self, message: str, cls=ShapeInferenceError) -> Exception:
        """An error of class `cls` naming the node, for the rule to raise."""
        return cls(f"node '{self.node.name}' ({self.node.op}): {message}")

    def lowering_error(self, message: str) -> Exception:
        """A LoweringError naming the node."""
        return self.error(message, LoweringError)

    def const(self, i: int) -> np.ndarray:
        """Value of input i, which must be a compile-time constant."""
        value = self.inputs[i].value
        if value is None:
            raise self.error(f"input {i} ({self.node.inputs[i]}) must be a compile-time constant "
                             f"(it is computed at run time)")
        return value

    def static_shape(self, i: int) -> tuple:
        """Shape of input i; every dimension must be known."""
        spec = self.inputs[i]
        if not spec.is_static:
            raise self.error(f"input {i} ({self.node.inputs[i]}) has unknown shape {spec}; fix the "
                             f"unknown dimensions of the graph inputs (--input-shape name=dims)")
        return spec.shape

    def out(self, i: int = 0) -> TensorSpec:
        """The inferred spec of output i (set when kernels and lowerings run)."""
        return self.outputs[i]


@dataclass(frozen=True)
class OpDef:
    """A registry entry: the fields listed in this module's docstring."""
    name: str
    infer: Callable
    lower: Callable | None = None
    kernel: Callable | None = None
    attrs: frozenset = field(default_factory=frozenset)
    const_inputs: tuple = ()
    ref_inputs: tuple = ()
    stateful: bool = False
    dtypes: tuple = typesets.ANY
    dtype_attrs: tuple = ()
    output_args: tuple = ()
    uncompilable: Callable | None = None

    @property
    def compiles(self) -> bool:
        """Whether the op has a lowering (else it runs on its kernel only)."""
        return self.lower is not None


REGISTRY: dict[str, OpDef] = {}


def register(name: str, *, infer, lower=None, kernel=None, attrs=(), const_inputs=(),
             ref_inputs=(), stateful=False, dtypes=None, dtype_attrs=None,
             output_args=(), uncompilable=None) -> OpDef:
    """Add the entry for TF op `name`; an op registered twice is an error (one entry per op)."""
    if name in REGISTRY:
        raise ValueError(f"op {name} registered twice")
    if dtype_attrs is None:
        dtype_attrs = typesets.default_dtype_attrs(attrs)
    if dtypes is None:  # an op without type attributes (NoOp, VarIsInitializedOp) lists none
        dtypes = typesets.ANY if dtype_attrs else ()
    entry = OpDef(name, infer, lower, kernel, frozenset(attrs), tuple(const_inputs),
                  tuple(ref_inputs), stateful, dtypes=tuple(dtypes), dtype_attrs=tuple(dtype_attrs),
                  output_args=tuple(output_args), uncompilable=uncompilable)
    REGISTRY[name] = entry
    return entry


def lookup(op: str) -> OpDef | None:
    """The entry for `op`, or None when hlobridge does not know it."""
    return REGISTRY.get(op)


def check_attrs(entry: OpDef, node) -> None:
    """Raise for an attribute the entry does not list (names starting with _ are TF's internal ones)."""
    unknown = sorted(k for k in node.attrs if not k.startswith("_") and k not in entry.attrs)
    if unknown:
        raise ShapeInferenceError(
            f"node '{node.name}' ({node.op}): unknown attribute(s) {', '.join(unknown)}; "
            f"hlobridge knows {', '.join(sorted(entry.attrs)) or 'none'}")


def as_list(result) -> list:
    """An op rule's result (one value or a list/tuple of them) as a list."""
    return list(result) if isinstance(result, (list, tuple)) else [result]
