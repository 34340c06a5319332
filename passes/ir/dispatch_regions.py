"""Wrap groups of StableHLO ops in IREE `flow.dispatch.region`s, one region per group.

IREE honours regions in its input (iree-notes sec. 3): each becomes one dispatch, and IREE
lowers the StableHLO inside it. The op is IREE-internal, so what it accepts is pinned by
tests on dispatch counts, not by a documented contract.

A group may consist of ops that are not adjacent in the block; other ops may sit between
its members. So the block is first reordered: every unit (a group, or an op in no group)
moves, in a topological order of the units, to the end of the block. Grouping decisions
never create cycles between units (fusion_policy checks this), so such an order exists.
"""

from __future__ import annotations

from typing import Sequence

from iree.compiler import ir
from iree.compiler.dialects import flow

from hlobridge.analysis.graph_algorithms import ranked_topological_order


def _owner(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner.operation if isinstance(owner, ir.OpView) else None


def _operand_producers(op: ir.Operation, block_ops: set) -> set:
    """Producers in this block of every value `op` (and anything nested in it) reads."""
    found = set()

    def visit(o):
        for v in o.operands:
            p = _owner(v)
            if p is not None:
                found.add(p)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return {p for p in found if p in block_ops}


def reorder_units(block: ir.Block, unit_of: dict) -> None:
    """Move the block's ops so that each unit's ops are contiguous, in a topological order of
    the units (ties by first position). `unit_of` maps ops to a unit key; unlisted ops are
    their own unit."""
    ops = [o.operation for o in block.operations]
    terminator = ops[-1]
    body = ops[:-1]
    index = {o: i for i, o in enumerate(body)}
    block_ops = set(body)
    key = {o: unit_of.get(o, ("op", index[o])) for o in body}
    members: dict = {}
    for o in body:
        members.setdefault(key[o], []).append(o)
    deps: dict = {k: set() for k in members}
    for o in body:
        for p in _operand_producers(o, block_ops):
            if key[p] != key[o]:
                deps[key[o]].add(key[p])
    first = {k: index[ms[0]] for k, ms in members.items()}
    order = ranked_topological_order(deps, first)
    if len(order) != len(members):
        raise ValueError("fusion groups form a cycle")
    for k in order:
        for o in _topological(members[k], block_ops, index):
            o.move_before(terminator)


def _topological(ops: list, block_ops: set, index: dict) -> list:
    """A unit's ops with producers before consumers (ties by block position): a rewrite may
    have put an op after the ops that read it (a combined variadic reduce)."""
    inside = set(ops)
    deps = {o: {p for p in _operand_producers(o, block_ops) if p in inside} for o in ops}
    order = ranked_topological_order(deps, index)
    if len(order) != len(ops):
        raise ValueError("a fusion group has a cycle")
    return order


def _nested(ops: Sequence[ir.Operation]) -> list:
    """`ops` and every op nested in their regions."""
    found = []

    def visit(o):
        found.append(o.operation)
        return ir.WalkResult.ADVANCE

    for o in ops:
        o.walk(visit)
    return found


def wrap_in_dispatch_region(ops: Sequence[ir.Operation]) -> ir.Operation:
    """Wrap contiguous, block-ordered `ops` in one region; results used outside the region
    become the region's results."""
    opset = set(_nested(ops))
    outputs = [r for o in ops for r in o.results
               if any(u.owner.operation not in opset for u in r.uses)]
    with ir.InsertionPoint(ops[0]), ops[0].location:
        region_op = flow.DispatchRegionOp([v.type for v in outputs], [], [])
    body = region_op.body.blocks.append()
    with ir.InsertionPoint(body), ops[-1].location:
        ret = flow.ReturnOp(outputs)
    inside = [ret.operation] + _nested(ops)
    for r, nr in zip(outputs, region_op.results):
        r.replace_all_uses_except(nr, inside)
    for o in ops:
        o.move_before(ret)
    return region_op.operation


def form_regions(block: ir.Block, groups: Sequence[Sequence[ir.Operation]]) -> int:
    """Reorder `block` and wrap each group (ops of this block) in a dispatch region."""
    unit_of = {o: ("group", i) for i, g in enumerate(groups) for o in g}
    reorder_units(block, unit_of)
    # Sort every group before wrapping any: moving ops into a region invalidates the
    # bindings' lookup of Operation objects as dict keys (an op then misses itself).
    position = {o.operation: i for i, o in enumerate(block.operations)}
    ordered = [sorted(g, key=position.__getitem__) for g in groups]
    for g in ordered:
        wrap_in_dispatch_region(g)
    return len(groups)


def dissolve_regions(block: ir.Block) -> int:
    """Undo form_regions: each region's ops back into `block` in its place; returns how many."""
    regions = [o.operation for o in block.operations if o.operation.name == "flow.dispatch.region"]
    for region in regions:
        body = region.regions[0].blocks[0]
        inner = [o.operation for o in body.operations]
        ret = inner[-1]
        for o in inner[:-1]:
            o.move_before(region)
        for r, v in zip(region.results, list(ret.operands)):
            r.replace_all_uses_with(v)
        region.erase()
    return len(regions)


def without_regions(source: str | bytes) -> str | None:
    """`source` with every dispatch region dissolved (None when it has none): what IREE's
    own dispatch formation gets when it cannot compile hlobridge's regions."""
    if isinstance(source, str) and "flow.dispatch.region" not in source:
        return None
    with ir.Context():
        module = ir.Module.parse(source)
        count = 0
        for view in module.body.operations:
            op = view.operation
            if op.name == "func.func" and len(op.regions[0].blocks):
                count += dissolve_regions(op.regions[0].blocks[0])
        return module.operation.get_asm() if count else None
