"""Hoist negation out of sums: `reduce_add(negate(x))` -> `negate(reduce_add(x))`.

Mathematically a no-op (negation is exact), but it matters to IREE 3.13's CUDA backend:
its dispatch formation folds the negate into the reduction's combiner (`out - in`), for
which codegen finds no neutral element and fails ("failed to get neutral element for
reduction"). TensorFlow's `-reduce_sum(...)` / `Mean(Neg(...))` losses produce exactly
this pattern (cnn_train's cross-entropy).
"""

from __future__ import annotations

from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo


def _is_sum(reduce_op) -> bool:
    body = reduce_op.regions[0].blocks[0]
    return [op.operation.name for op in body.operations] == ["stablehlo.add", "stablehlo.return"]


def hoist_negation(module: ir.Module) -> int:
    """Rewrite every single-input sum of a single-use negate; returns how many."""
    candidates = []

    def collect(op):
        if op.name == "stablehlo.reduce" and len(op.operands) == 2:
            candidates.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    rewritten = 0
    for op in candidates:  # operands are re-read now: earlier rewrites may have rewired them
        source = op.operands[0].owner
        if not isinstance(source, ir.OpView) or source.operation.name != "stablehlo.negate":
            continue
        negated = source.operation
        if len(list(negated.results[0].uses)) != 1 or not _is_sum(op):
            continue
        op.operands[0] = negated.operands[0]
        with ir.InsertionPoint.after(op), op.location:
            result = hlo.unary("negate", op.results[0])
        op.results[0].replace_all_uses_except(result, result.owner.operation)
        negated.erase()
        rewritten += 1
    return rewritten
