"""How much arithmetic a function does, estimated from its StableHLO, noted in its reflection.

The Session runs a cluster whose work is small on the calling thread (IREE's local-sync) rather
than on the thread pool (local-task): handing a call to the pool's workers and waiting for them
costs 50-100 us on the 2-core development VM, more than a small cluster's whole computation
(runtime/cluster_launch.py, `executor_device`). The estimate goes into the function's
reflection under `hlobridge.work`, so a binary from the compile cache says it without lowering.

The unit is a floating-point operation of a matmul: a dot_general or a convolution counts two
per multiply-add; every other op ELEMENT_COST per element it reads or writes, whichever is more
(a reduction reads more than it writes, a broadcast writes more than it reads). An element
costs more than a matmul's flop because it moves memory that a matmul reuses from registers:
the thread pool starts to pay at about 45 Mflop of MLP and at about 1 M elements of an
elementwise chain of five ops (benchmarks/small_clusters.py), hence 5. Ops inside loop and branch
bodies count once: what decides between the two executors is the work of each call into the
thread pool, and a loop makes one such round per iteration. Constants count nothing. A function
with a dynamically shaped tensor has no estimate (nothing is noted: it runs on the pool).
"""

from __future__ import annotations

import math
import re

from iree.compiler import ir

from .ir_helpers import conv_layout, dot_dimensions, note_in_reflection, signed_functions

WORK_KEY = "hlobridge.work"
ELEMENT_COST = 5
# no work of their own: constants, terminators, and a dispatch region (its ops count)
FREE_OPS = frozenset({"stablehlo.constant", "arith.constant", "func.return", "stablehlo.return", "flow.return",
                      "flow.dispatch.region"})


def work_in_text(text: str) -> int | None:
    """The estimated work a lowered module's text notes (its first function's), or None."""
    found = re.search(rf'{re.escape(WORK_KEY)} = "(\d+)"', text)
    return int(found.group(1)) if found else None


def work_of(reflection: dict) -> int | None:
    """The estimated work a compiled module's reflection notes, or None."""
    work = reflection.get(WORK_KEY)
    return None if work is None else int(work)


def estimate_work(module: ir.Module) -> dict[str, int]:
    """Note the estimated work of each of the module's hlobridge functions (those with a
    signature) in its reflection; returns it by function name."""
    found = {}
    for fn, _ in signed_functions(module):
        work = found[ir.StringAttr(fn.attributes["sym_name"]).value] = function_work(fn)
        if work is not None:
            note_in_reflection(fn, {WORK_KEY: str(work)})
    return found


def function_work(fn: ir.Operation) -> int | None:
    """The estimated work of `fn`'s body (see the module docstring); None if a tensor in it has
    a dynamic shape."""
    total = 0

    def visit(op):
        nonlocal total
        if op is not fn and op.name not in FREE_OPS and total is not None:
            work = op_work(op)
            total = None if work is None else total + work
        return ir.WalkResult.ADVANCE

    fn.walk(visit)
    return total


def op_work(op: ir.Operation) -> int | None:
    """The estimated work of one op; None if one of its tensors has a dynamic shape."""
    results = [_elements(r.type) for r in op.results]
    operands = [_elements(v.type) for v in op.operands]
    if DYNAMIC in results or DYNAMIC in operands:
        return None
    out = sum(e for e in results if e is not None)
    if op.name == "stablehlo.dot_general":
        lhs = op.operands[0].type.shape
        return 2 * out * math.prod(lhs[d] for d in dot_dimensions(op)["lhs_contracting_dimensions"])
    if op.name == "stablehlo.convolution":
        kernel = op.operands[1].type.shape
        layout = conv_layout(op)
        kernel_layout = layout[1] if layout else []
        per_output = math.prod(kernel)
        if "o" in kernel_layout:
            per_output //= kernel[kernel_layout.index("o")]
        return 2 * out * per_output
    return ELEMENT_COST * max(out, sum(e for e in operands if e is not None))


DYNAMIC = -1


def _elements(t: ir.Type) -> int | None:
    """The element count of a ranked tensor type (DYNAMIC if a dimension is dynamic); None for
    other types (tokens, unranked)."""
    if not isinstance(t, ir.RankedTensorType):
        return None
    return math.prod(t.shape) if t.has_static_shape else DYNAMIC
