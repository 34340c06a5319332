"""Give a stablehlo.while a buffer of its own for every initial value something else also reads.

IREE 3.13's async CPU driver (local-task) frees a loop-carried buffer once the loop is done.
When the loop ran zero times that buffer is the initial value's, and if the initial value is
also a result of the function, or read after the loop, the read fails ("transient buffer has
not been committed"). A copy that no folder removes, `x + optimization_barrier(0)`
(hlo.fresh_copy), one elementwise pass per loop entry, keeps the two apart. Initial values
that only the loop reads, arguments and constants need none.
"""

from __future__ import annotations

from iree.compiler import ir

from hlobridge.dialects import stablehlo as hlo

from .ir_helpers import ops_named


def separate_loop_inits(module: ir.Module) -> int:
    """Copy each shared, computed initial value of each While; returns how many were copied."""
    copied = 0
    for loop in ops_named(module, "stablehlo.while"):
        for i, value in enumerate(list(loop.operands)):
            if _computed(value) and _readers(value) > 1:
                with ir.InsertionPoint(loop), loop.location:
                    loop.operands[i] = hlo.fresh_copy(value)
                copied += 1
    return copied


def _computed(value: ir.Value) -> bool:
    owner = value.owner
    return not isinstance(owner, ir.Block) and owner.name != "stablehlo.constant"


def _readers(value: ir.Value) -> int:
    return sum(1 for _ in value.uses)
