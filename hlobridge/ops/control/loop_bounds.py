"""Counted loops: While loops whose trip count is known when the loop starts.

A compiled While cannot be interrupted inside IREE, so the lowering bounds every loop by the
iteration limit (limits.max_loop_iterations). How it does so depends on the loop:

- a counted loop, one whose condition is (or is a conjunction containing) `i < bound`,
  `i <= bound`, `i > bound` or `i >= bound`, where the body adds a constant to `i` and leaves
  `bound` as it is, runs at most ceil((bound - i0) / step) times. That number is computed from
  the initial values and checked once, before the loop. This is the common case: every
  `tf.while_loop` counts its iterations in such a variable, and `for i in tf.range(n)` is one.
  IREE turns such a loop into an `scf.for` whose counter lives on the host; a counter of our own
  in the condition would cost a dispatch and a read-back per iteration (measured: 2-8x slower
  per iteration on a small body);
- any other loop gets an iteration counter of its own in its condition, where it is nearly free:
  the condition is already a dispatch and a read-back per iteration.

The analysis reads the cond and body FunctionGraphs (TensorFlow's graph, before lowering):
Identity chains are looked through, constants must be integer scalars.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...frontend.functions import FunctionGraph
from ...frontend.graph import TensorRef

_COMPARISONS = {"Less": "<", "LessEqual": "<=", "Greater": ">", "GreaterEqual": ">="}
_SWAPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_STEPS = {"AddV2": 1, "Add": 1, "Sub": -1}
_PASS_THROUGH = ("Identity", "Snapshot", "StopGradient")


@dataclass(frozen=True)
class CountedCondition:
    """`loop variable counter  <relation>  bound`, where the body adds `step` to the counter.

    `bound` is a loop-variable index (a variable the body returns unchanged) or, when
    `bound_value` is set, a constant of the condition."""

    counter: int
    relation: str  # "<", "<=", ">", ">=" with the counter on the left
    step: int
    bound: int | None = None
    bound_value: int | None = None

    @property
    def rising(self) -> bool:
        """Whether the counter counts up (towards a bound above it)."""
        return self.relation in ("<", "<=")

    def distance_bound(self, limit: int) -> int:
        """The loop runs at most `limit` times iff its distance to go (bound - start when
        rising, start - bound when falling) is below this number."""
        step = abs(self.step)
        return (limit + 1) * step - (step if self.relation in ("<=", ">=") else step - 1)


def counted_conditions(cond: FunctionGraph, body: FunctionGraph) -> list[CountedCondition]:
    """The conjuncts of `cond`'s result that count a loop variable towards a bound (any one
    of them bounds the trip count); empty when the loop is not counted."""
    if len(cond.rets) != 1:
        return []
    found = []
    for ref in _conjuncts(cond, cond.rets[0]):
        counted = _counted(cond, body, cond.graph.node(ref.node))
        if counted is not None:
            found.append(counted)
    return found


def _source(fn: FunctionGraph, ref: TensorRef) -> TensorRef:
    """`ref` with Identity-like nodes looked through."""
    node = fn.graph.node(ref.node)
    while node.op in _PASS_THROUGH and node.inputs:
        ref = node.inputs[0]
        node = fn.graph.node(ref.node)
    return ref


def _conjuncts(fn: FunctionGraph, ref: TensorRef) -> list[TensorRef]:
    ref = _source(fn, ref)
    node = fn.graph.node(ref.node)
    if node.op == "LogicalAnd" and len(node.inputs) == 2:
        return [c for i in node.inputs for c in _conjuncts(fn, i)]
    return [ref]


def _arg_index(fn: FunctionGraph, ref: TensorRef) -> int | None:
    ref = _source(fn, ref)
    return fn.args.index(ref.node) if ref.node in fn.args and ref.index == 0 else None


def _int_constant(fn: FunctionGraph, ref: TensorRef) -> int | None:
    node = fn.graph.node(_source(fn, ref).node)
    value = node.attr("value") if node.op == "Const" else None
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iu":
        return int(value.reshape(()))
    return None


def _counted(cond: FunctionGraph, body: FunctionGraph, node) -> CountedCondition | None:
    if node.op not in _COMPARISONS or len(node.inputs) != 2:
        return None
    relation = _COMPARISONS[node.op]
    for left, right, rel in ((node.inputs[0], node.inputs[1], relation),
                             (node.inputs[1], node.inputs[0], _SWAPPED[relation])):
        counter = _arg_index(cond, left)
        if counter is None:
            continue
        step = _step(body, counter)
        if step is None or (step > 0) != (rel in ("<", "<=")):
            continue
        bound = _arg_index(cond, right)
        if bound is not None and bound != counter and _invariant(body, bound):
            return CountedCondition(counter, rel, step, bound=bound)
        value = _int_constant(cond, right)
        if value is not None:
            return CountedCondition(counter, rel, step, bound_value=value)
    return None


def _step(body: FunctionGraph, var: int) -> int | None:
    """The constant the body adds to loop variable `var` (negative for a Sub), or None."""
    if var >= len(body.rets):
        return None
    node = body.graph.node(_source(body, body.rets[var]).node)
    if node.op not in _STEPS or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if _arg_index(body, a) == var:
        step = _int_constant(body, b)
        return _STEPS[node.op] * step if step else None
    if node.op != "Sub" and _arg_index(body, b) == var:
        return _int_constant(body, a) or None
    return None


def _invariant(body: FunctionGraph, var: int) -> bool:
    return var < len(body.rets) and _arg_index(body, body.rets[var]) == var
