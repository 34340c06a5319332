"""The contract behind `ctx.functions`: what the rules of ops that name functions (If, Case,
While and their stateless forms) may ask of whoever runs them.

Each stage that meets such an op implements the part it can and is handed to the rule by
whoever built the stage (the Session, the compiler), never looked up from the graph:

- shape inference (`analysis.shape_inference.FunctionShapes`): `infer`; `call` only when it
  was given an evaluator (constant folding through a body);
- the interpreter (`runtime.interpreter.FunctionRunner`): `infer` and `call`;
- lowering (`lowering.driver.FunctionLowering`): `infer` and `lower`.

A stage asked for what it does not do raises `NotAvailable`; shape inference takes that as
"do not fold this node" rather than as an error.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import HlobridgeError


class NotAvailable(HlobridgeError):
    """The stage at hand cannot do this with a function (e.g. run it while only inferring)."""


class Functions(Protocol):
    """`ctx.functions` for op rules; `f` is a function name or a FuncAttr."""

    # The frontend.functions.FunctionLibrary the functions come from: a rule may read a
    # body's graph (the While lowering looks for a counted loop, ops/control/loop_bounds.py).
    library: object

    def infer(self, f, in_specs: list) -> list:
        """The TensorSpecs of `f`'s results for arguments of `in_specs`."""

    def call(self, f, args: list) -> list:
        """`f` run on reference kernels with these argument values; its result values."""

    def lower(self, f, operands: list, in_specs: list) -> list:
        """`f`'s body emitted at the current insertion point on these MLIR values; its results."""
