"""Pack barriers: dropped where IREE compiles a module without data tiling, added where a data-tiled
compile failed.

A `?`-row matmul's left operand is lowered behind an optimization_barrier (dialects/
dynamic_shapes.py, PACK_BARRIER) so that, with data tiling on, IREE packs it in a dispatch of its
own: IREE 3.13 fails some packing dispatches that fuse the producer. Without data tiling
(modules with a batched dot, training modules) there is no packing, and the barrier only
keeps the producer from fusing into the matmul: bert2_infer's `?`-batch module ran 1.08-1.09x
slower with it (2-core VM, medians of 9 interleaved blocks, 2026-11-28). Each marked barrier
and the shape tie after it are removed, their readers reading the barrier's operand again.

The same failures hit static matmuls too (Keras MobileNetV2's batch-32 classifier: "exceeded
stack allocation limit", its K-blocks' slices fused into the packing), and a module whose
data-tiled compile fails lost data tiling everywhere. So before giving up data tiling the
compile is tried once more with the slices of long contractions behind barriers
(`add_pack_barriers`).
"""

from __future__ import annotations

from iree.compiler import ir

from .ir_helpers import ops_named

from hlobridge.dialects.dynamic_shapes import PACK_MARK as MARK, barrier


def add_pack_barriers(source: str) -> str | None:
    """`source` with every unbatched dot_general's left operand that is a slice (a block of a
    long contraction, matmul.py's CONTRACTION_BLOCK, where IREE 3.13's packing failed) behind a
    marked barrier, or None where there is none. Other operands keep their producers fused into
    the packing: with a barrier on every computed operand, MobileNetV2's bucket functions ran
    1.17x their static modules at batch 1 and 8."""
    with ir.Context() as ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(source)
        added = 0
        for dot in ops_named(module, "stablehlo.dot_general"):
            lhs = dot.operands[0]
            owner = lhs.owner
            if isinstance(owner, ir.Block) or owner.name != "stablehlo.slice":
                continue
            if "lhs_batching_dimensions" in str(dot.attributes["dot_dimension_numbers"]) or \
                    ir.ShapedType(lhs.type).has_static_shape is False:
                continue
            with ir.InsertionPoint(dot), dot.location:
                dot.operands[0] = barrier(lhs, MARK)
            added += 1
        return str(module) if added else None


def drop_pack_barriers(source: str) -> str:
    """`source` (module text) without its marked barriers; unchanged where it has none."""
    if MARK not in source:
        return source
    with ir.Context() as ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = True  # flow.tensor.* ops, printed back as they were
        module = ir.Module.parse(source)
        for barrier in ops_named(module, "stablehlo.optimization_barrier"):
            if MARK not in barrier.attributes:
                continue
            operand = barrier.operands[0]
            for use in list(barrier.results[0].uses):
                tie = use.owner
                if tie.name == "flow.tensor.tie_shape":
                    tie.results[0].replace_all_uses_with(operand)
                    tie.erase()
            barrier.results[0].replace_all_uses_with(operand)
            barrier.erase()
        return str(module)
