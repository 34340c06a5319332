"""Fusion: which StableHLO ops run together as one IREE dispatch, decided by hlobridge.

Three modes (`CompileOptions.fusion`, `hlobridge-compile --fusion`):

- "hlobridge": fusion_policy.py's XLA-style decisions, each group wrapped in an IREE
  `flow.dispatch.region` (dispatch_regions.py), which IREE keeps as one dispatch;
- "iree": no regions; IREE's own dispatch formation decides (this pass does nothing);
- "none": one region per computing op, so nothing fuses: one dispatch per op.

Constants stay outside regions (IREE captures them), and so do ops IREE must see whole or
forms better itself (pads, concatenates, control flow, scatter, sort, ...): IREE then forms
their dispatches. Cheap ops (broadcasts, reshapes, slices, transposes, scalar and i1
arithmetic) are copied into each group that reads them. `fusion_groups(module)` returns the decisions without changing the module
(for drawing them); after the pass, the regions are in the IR.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iree.compiler import ir

from hlobridge.errors import HlobridgeError

from . import fusion_policy as policy
from .dispatch_regions import form_regions
from .ir_helpers import dot_dimensions

MODES = ("hlobridge", "iree", "none")

ELEMENTWISE_OPS = frozenset(f"stablehlo.{n}" for n in (
    "abs add and atan2 cbrt ceil clamp compare complex convert cosine divide exponential "
    "exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum "
    "multiply negate not or popcnt power real remainder round_nearest_afz round_nearest_even "
    "rsqrt select shift_left shift_right_arithmetic shift_right_logical sign sine sqrt subtract "
    "tan tanh xor").split())
KIND_OF = {
    **{name: policy.ELEMENTWISE for name in ELEMENTWISE_OPS},
    "stablehlo.broadcast_in_dim": policy.CHEAP,
    "stablehlo.iota": policy.CHEAP,
    # index remappings: copied into each reader (a strided slice as an extra region output
    # fails to distribute, as an i1 tensor does, see _kind); a reshape read by no region stays
    # metadata to IREE
    "stablehlo.reshape": policy.CHEAP,
    "stablehlo.transpose": policy.CHEAP,
    "stablehlo.slice": policy.CHEAP,
    "stablehlo.reverse": policy.CHEAP,
    "stablehlo.reduce": policy.REDUCE,
    "stablehlo.reduce_window": policy.WINDOW,
    "stablehlo.dot_general": policy.CONTRACTION,
    "stablehlo.convolution": policy.CONTRACTION,
}  # everything else (constant, pad, concatenate, while, scatter, ...): policy.OUTSIDE
# Measured with IREE 3.13 llvm-cpu: a pad with interior padding fails to compile even alone in
# a region, and one with slice consumers fails with them, so pads are left to IREE. A
# concatenate in a region compiles to one tensor.insert_slice per input in one loop nest:
# cnn_train's im2col concatenates (25 slices each) took 4-12 ms each, where IREE's own
# in-place concatenate of memcpy dispatches takes a fraction of that; so IREE keeps them.


@dataclass
class FusionGroup:
    """One dispatch-to-be: its ops in block order, the op whose iteration space it runs in,
    and its kind ("loop", "reduce", "window", "contraction")."""

    ops: list[ir.Operation]
    root: ir.Operation
    kind: str


def _i64s(attr) -> list[int]:
    return [int(x) for x in ir.DenseI64ArrayAttr(attr)]


def _shape(value: ir.Value) -> tuple:
    t = value.type
    return tuple(t.shape) if isinstance(t, ir.RankedTensorType) else ()


def _static(op: ir.Operation) -> bool:
    values = list(op.operands) + list(op.results)
    return all(isinstance(v.type, ir.RankedTensorType) and v.type.has_static_shape
               for v in values if isinstance(v.type, ir.ShapedType))


def _tiles_with_epilogue(op: ir.Operation) -> bool:
    """Whether IREE lowers this contraction without reshapes, so an elementwise epilogue tiles
    with it: a dot with at most one free and one contracting dim per operand. (A dot
    [32,28,28,25]x[25,32] lowers to collapse_shape + matmul + expand_shape, and IREE 3.13 fails
    to distribute the region: 'write affecting operations on global resources'.)"""
    if op.name != "stablehlo.dot_general":
        return False
    dims = dot_dimensions(op)
    for side, operand in (("lhs", op.operands[0]), ("rhs", op.operands[1])):
        rank = len(_shape(operand))
        contracting = len(dims[f"{side}_contracting_dimensions"])
        free = rank - contracting - len(dims[f"{side}_batching_dimensions"])
        if contracting > 1 or free > 1:
            return False
    return True


def _detail(op: ir.Operation, kind: str):
    if kind == policy.REDUCE:
        return (_shape(op.operands[0]), tuple(_i64s(op.attributes["dimensions"])))
    if kind == policy.CONTRACTION:
        return _tiles_with_epilogue(op)
    if op.name == "stablehlo.broadcast_in_dim":
        return tuple(_i64s(op.attributes["broadcast_dimensions"]))
    return None


def _kind(op: ir.Operation) -> str:
    kind = KIND_OF.get(op.name, policy.OUTSIDE)
    if kind == policy.OUTSIDE or not _static(op):
        return policy.OUTSIDE
    sizes = [math.prod(_shape(v)) for v in list(op.operands) + list(op.results)
             if isinstance(v.type, ir.RankedTensorType)]
    if min(sizes, default=1) == 0 or max(sizes, default=1) <= 1 and kind != policy.ELEMENTWISE:
        return policy.OUTSIDE  # empty or one-element work (a loop's counter): IREE folds it
    size = math.prod(_shape(op.results[0]))
    if kind == policy.ELEMENTWISE and (size == 1 or _is_bool(op.results[0])):
        # Copied into each reader, never a region output: scalar arithmetic (Adam's bias
        # corrections) fails to distribute as an extra output of a larger region, and so does
        # any i1 tensor (IREE 3.13 llvm-cpu: "write affecting operations on global resources
        # are restricted to workgroup distributed contexts"); a tensor<1xf32> chain in a region
        # of its own fails too ("rank 0 memrefs can only be extended/collapsed with/from ones").
        return policy.CHEAP
    return kind


def _is_bool(value: ir.Value) -> bool:
    t = value.type
    return isinstance(t, ir.RankedTensorType) and str(t.element_type) == "i1"


def body_nodes(block: ir.Block) -> tuple[list[policy.Node], list[ir.Operation]]:
    """The policy's view of a function body: one Node per op (the terminator excluded)."""
    ops = [o.operation for o in block.operations][:-1]
    index = {op: i for i, op in enumerate(ops)}
    nodes = []
    for i, op in enumerate(ops):
        kind = _kind(op)
        node = policy.Node(i, op.name, kind, _shape(op.results[0]) if len(op.results) else (),
                           detail=_detail(op, kind) if kind != policy.OUTSIDE else None)
        if kind == policy.REDUCE:
            body = [o.operation.name for o in op.regions[0].blocks[0].operations][:-1]
            node.combiner = ",".join(body)
        for v in _values_read(op):
            owner = v.owner
            if isinstance(owner, ir.Block):
                if owner == block and v.arg_number not in node.args:
                    node.args.append(v.arg_number)
            elif owner.operation in index and index[owner.operation] not in node.operands:
                node.operands.append(index[owner.operation])
        nodes.append(node)
    for n in nodes:
        for p in n.operands:
            nodes[p].users.append(n.index)
    for v in block.operations[len(ops)].operands:  # the terminator
        if not isinstance(v.owner, ir.Block) and v.owner.operation in index:
            nodes[index[v.owner.operation]].output = True
    for n in nodes:
        if not n.users and not n.output:
            n.kind = policy.OUTSIDE  # dead: nothing to dispatch (IREE drops it)
    return nodes, ops


def _values_read(op: ir.Operation) -> list[ir.Value]:
    """Operands of `op` and of the ops nested in it (a reduce body may read outer values)."""
    values = []

    def visit(o):
        values.extend(o.operands)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return values


# Ops whose regions hold ordinary code that runs many times or conditionally: their blocks are
# fused like function bodies (a while loop's body is where a training loop spends its time).
CONTROL_FLOW = ("stablehlo.while", "stablehlo.if", "stablehlo.case")


def _function_blocks(module: ir.Module) -> list[tuple[str, ir.Block]]:
    """(name, block) for every function body and, inside them, every control-flow block;
    nested blocks are named after their function and op ("main/while0.body1")."""
    out = []
    for view in module.body.operations:
        op = view.operation
        if op.name == "func.func" and len(op.regions[0].blocks):
            name = ir.StringAttr(op.attributes["sym_name"]).value
            out += _blocks_within(name, op.regions[0].blocks[0])
    return out


def _blocks_within(name: str, block: ir.Block) -> list[tuple[str, ir.Block]]:
    out = [(name, block)]
    flow_ops = [o.operation for o in block.operations if o.operation.name in CONTROL_FLOW]
    for k, op in enumerate(flow_ops):
        for r, region in enumerate(op.regions):
            for b in region.blocks:
                out += _blocks_within(f"{name}/{op.name.removeprefix('stablehlo.')}{k}.region{r}", b)
    return out


def _plan(block: ir.Block, mode: str):
    nodes, ops = body_nodes(block)
    groups = policy.plan(nodes) if mode == "hlobridge" else policy.singletons(nodes)
    return groups, ops, nodes


def fusion_groups(module: ir.Module, mode: str = "hlobridge") -> dict[str, list[FusionGroup]]:
    """The groups `fuse(module, mode)` would form, per function, without changing anything
    (a broadcast copied into several groups is listed in each)."""
    _check_mode(mode)
    result = {}
    for name, block in _function_blocks(module):
        if mode == "iree":
            result[name] = []
            continue
        groups, ops, _ = _plan(block, mode)
        result[name] = [FusionGroup([ops[i] for i in g.sorted_ops()], ops[g.root], g.kind) for g in groups]
    return result


def fuse(module: ir.Module, mode: str = "hlobridge") -> int:
    """Wrap each group of every function in a dispatch region; returns how many regions."""
    _check_mode(mode)
    if mode == "iree":
        return 0
    total = 0
    for _, block in _function_blocks(module):
        if any(o.operation.name == "flow.dispatch.region" for o in block.operations):
            continue  # regions already formed (a module fused before)
        groups, ops, nodes = _plan(block, mode)
        _tag(ops)
        cheap = {n.index for n in nodes if n.kind == policy.CHEAP}
        members = _copy_shared([g.sorted_ops() for g in groups], ops, cheap)
        for g, group_ops in zip(groups, members):
            for indices in g.variadic:
                merged = _combine_reductions([ops[i] for i in indices])
                kept = [op for op, i in zip(group_ops, g.sorted_ops()) if i not in indices]
                group_ops[:] = kept + [merged]
        total += form_regions(block, members)
        _untag(block)
    return total


# Op identity while rewriting: the bindings hash an Operation by its structure (so a set stops
# finding an op whose operands changed) and a use's owner is a fresh Python object (so id()
# differs), hence each top-level op carries its body index as an attribute during the pass.
_TAG = "hlobridge.fusion_index"


def _tag_of(op: ir.Operation) -> int | None:
    while op is not None:
        if _TAG in op.attributes:
            return ir.IntegerAttr(op.attributes[_TAG]).value
        parent = op.parent
        op = parent.operation if parent is not None and parent.name != "func.func" else None
    return None


def _tag(ops: list[ir.Operation]) -> None:
    i64 = ir.IntegerType.get_signless(64)
    for i, op in enumerate(ops):
        op.attributes[_TAG] = ir.IntegerAttr.get(i64, i)


def _untag(block: ir.Block) -> None:
    def visit(op):
        if _TAG in op.attributes:
            del op.attributes[_TAG]
        return ir.WalkResult.ADVANCE

    for op in block.operations:
        op.operation.walk(visit)


def _copy_shared(groups: list[list[int]], ops: list[ir.Operation], cheap: set) -> list[list[ir.Operation]]:
    """Groups of op indices -> groups of ops, where every group gets its own copies of the
    cheap ops (indices in `cheap`) it reads that other groups or ungrouped ops read too. A
    cheap op that roots a group (one that reads nothing of it) stays there; originals nobody
    reads any more are erased. Ops must be tagged (_tag)."""
    holders: dict[int, list[int]] = {}
    for gi, g in enumerate(groups):
        for i in g:
            if i in cheap:
                holders.setdefault(i, []).append(gi)
    members = [set(g) for g in groups]
    readers = {i: {_tag_of(u.owner.operation) for r in ops[i].results for u in r.uses} for i in holders}
    copied = sorted(i for i, gis in holders.items() if len(gis) > 1 or not readers[i] <= members[gis[0]])
    copies: list[dict] = [{} for _ in groups]  # per group: original index -> its copy
    for i in copied:
        for gi in holders[i]:
            if readers[i] & members[gi]:  # (the group it roots reads nothing of it: keeps it)
                with ir.InsertionPoint(ops[i]):
                    copies[gi][i] = ops[i].clone()
    result = [[copies[gi].get(i, ops[i]) for i in g] for gi, g in enumerate(groups)]
    for gi, g in enumerate(result):  # each group's ops, copies included, read its own copies
        if copies[gi]:
            for member in g:
                for n, v in enumerate(member.operands):
                    if not isinstance(v.owner, ir.Block):
                        j = _tag_of(v.owner.operation)
                        if j in copies[gi]:
                            member.operands[n] = copies[gi][j].results[v.result_number]
    for i in reversed(copied):
        if not any(True for r in ops[i].results for _ in r.uses):
            ops[i].erase()
    return result


def _combine_reductions(reduces: list[ir.Operation]) -> ir.Operation:
    """Sibling reductions (same input shape and dims) as one variadic stablehlo.reduce, placed
    at the last of them; each keeps its own inputs, inits and reducer body."""
    operands, inits, types, accs, vals = [], [], [], [], []
    for r in reduces:
        n = len(r.results)
        operands += list(r.operands)[:n]
        inits += list(r.operands)[n:]
        types += [v.type for v in r.results]
        args = list(r.regions[0].blocks[0].arguments)
        accs += [a.type for a in args[:n]]
        vals += [a.type for a in args[n:]]
    last = reduces[-1]
    with ir.InsertionPoint(last), last.location:
        merged = ir.Operation.create("stablehlo.reduce", results=types, operands=operands + inits,
                                     attributes={"dimensions": last.attributes["dimensions"]}, regions=1)
        body = merged.regions[0].blocks.append(*accs, *vals)
    with ir.InsertionPoint(body), last.location:
        ret = ir.Operation.create("stablehlo.return", operands=[])
    new_args = list(body.arguments)
    returned, offset = [], 0
    for r in reduces:
        n = len(r.results)
        old_block = r.regions[0].blocks[0]
        for k, a in enumerate(old_block.arguments):
            new = new_args[offset + k] if k < n else new_args[len(accs) + offset + k - n]
            a.replace_all_uses_with(new)
        inner = [o.operation for o in old_block.operations]
        for o in inner[:-1]:
            o.move_before(ret)
        returned += list(inner[-1].operands)
        for k, v in enumerate(r.results):
            v.replace_all_uses_with(merged.results[offset + k])
        offset += n
    ret.erase()
    with ir.InsertionPoint(body), last.location:
        ir.Operation.create("stablehlo.return", operands=returned)
    for r in reduces:
        r.erase()
    return merged


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise HlobridgeError(f"fusion must be one of {', '.join(MODES)}, got '{mode}'")
