"""Builders for tensors with dynamic (`?`) dimensions: the sizes they take at run time.

A static builder knows its result type from the shapes it is given. With a `?` dimension the
result type is not enough: `dynamic_broadcast_in_dim` and `dynamic_iota` need the run-time
size of every dimension, as a 1-D tensor. Where does a `?` size come from? From a value that
has the same dimension: the lowering driver names, for each node it lowers, the values that
may supply one (`dim_sources`: the node's operands), and `runtime_dims` finds, for each `?`
of a result shape, a source with a `?` at the same (trailing-aligned) position and asks it
with `stablehlo.get_dimension_size`.

That is the symbolic rule shape inference relies on for graphs with an unknown batch (see
hlobridge/analysis/symbolic_dims.py): two `?` that meet at the same position of an elementwise
op are the same symbol, and a `?` is never 1 (a dimension broadcast from 1 is static 1). So a
broadcast's `?` dimensions are non-expanding and its static 1s that become `?` are expanding;
IREE 3.13 needs these `known_expanding_dimensions` / `known_nonexpanding_dimensions` to
legalise `?x1 -> ?x512` (iree-notes).

`DynamicDimError` is what a builder raises where no source has the dimension; the lowering
driver turns it into an error with reason code `dynamic_dim_unresolved` naming the node.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Sequence

from iree.compiler import ir

_SOURCES: ContextVar[tuple] = ContextVar("hlobridge_dim_sources", default=())


class DynamicDimError(ValueError):
    """A `?` dimension whose run-time size no value at hand supplies."""


def is_dynamic(shape) -> bool:
    """Whether a shape (a list with None for `?`) has a dynamic dimension."""
    return any(d is None for d in shape)


def is_ranked(t: ir.Type) -> bool:
    """Whether `t` is a ranked tensor type."""
    try:
        ir.RankedTensorType(t)
    except ValueError:
        return False
    return True


def ranked_type(shape: Sequence, element_type: ir.Type) -> ir.RankedTensorType:
    """The ranked tensor type of `shape` (None for `?`) and `element_type`."""
    dynamic = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([dynamic if d is None else d for d in shape], element_type)


def _shape(v) -> list:
    t = ir.RankedTensorType(v.type)
    return [None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape)]


@contextmanager
def dim_sources(values):
    """Within the block, `?` sizes may be read from `values` (ir.Values; others are skipped)."""
    usable = tuple(v for v in values if isinstance(v, ir.Value) and is_ranked(v.type))
    token = _SOURCES.set(usable + _SOURCES.get())
    try:
        yield
    finally:
        _SOURCES.reset(token)


def _i32_scalar_type():
    return ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))


def dim_size(x, i: int):
    """stablehlo.get_dimension_size of x's dimension i: a tensor<i32>."""
    return ir.Operation.create("stablehlo.get_dimension_size", results=[_i32_scalar_type()], operands=[x],
                               attributes={"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)}
                               ).result


def runtime_dims(shape: Sequence, known: dict | None = None) -> list:
    """Each dimension of `shape`: its int, or for a None a tensor<i32>: from `known` (position ->
    Value) or else from the current `dim_sources`, the first with a `?` at the same position
    counted from the end (NumPy's broadcast alignment), else from the start (a reduction's)."""
    sources = _SOURCES.get()
    out = []
    for j, d in enumerate(shape):
        if d is not None:
            out.append(d)
        elif known and j in known:
            out.append(known[j])
        else:
            out.append(_find(shape, j, sources))
    return out


def _find(shape, j: int, sources):
    from_end = len(shape) - j
    for aligned in ("end", "start"):
        for v in sources:
            s = _shape(v)
            k = len(s) - from_end if aligned == "end" else j
            if 0 <= k < len(s) and s[k] is None:
                return dim_size(v, k)
    raise DynamicDimError(f"dimension {j} of the result shape {_text(shape)} is dynamic and "
                          f"no operand has it")


def shape_tensor(dims: Sequence):
    """A tensor<Nxi32> of `dims` (ints and tensor<i32> Values), for the dynamic_* ops."""
    i32 = ir.IntegerType.get_signless(32)
    one = ir.RankedTensorType.get([1], i32)
    parts = []
    for d in dims:
        if isinstance(d, ir.Value):
            parts.append(ir.Operation.create("stablehlo.reshape", results=[one], operands=[d]).result)
        else:
            attr = ir.DenseElementsAttr.get_splat(one, ir.IntegerAttr.get(i32, int(d)))
            parts.append(ir.Operation.create("stablehlo.constant", results=[one], attributes={"value": attr}).result)
    if len(parts) == 1:
        return parts[0]
    return ir.Operation.create(
        "stablehlo.concatenate", results=[ir.RankedTensorType.get([len(parts)], i32)], operands=parts,
        attributes={"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)}).result


def _i64_array(values):
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def vector_sizes(vector, shape: Sequence) -> dict:
    """{j: tensor<i32>} for each `?` j of `shape`: entry j of the 1-D integer tensor `vector` (a
    shape computed at run time: Fill's dims, BroadcastTo's shape)."""
    i32 = ir.IntegerType.get_signless(32)
    et = ir.RankedTensorType(vector.type).element_type
    out = {}
    for j, d in enumerate(shape):
        if d is None:
            one = ir.Operation.create("stablehlo.slice", results=[ir.RankedTensorType.get([1], et)], operands=[vector],
                                      attributes={"start_indices": _i64_array([j]), "limit_indices": _i64_array([j + 1]),
                                                  "strides": _i64_array([1])}).result
            v = ir.Operation.create("stablehlo.reshape", results=[ir.RankedTensorType.get([], et)], operands=[one]).result
            out[j] = v if et == i32 else ir.Operation.create(
                "stablehlo.convert", results=[ir.RankedTensorType.get([], i32)], operands=[v]).result
    return out


def broadcast_in_dim(x, shape: Sequence, dims: Sequence[int], sizes: dict | None = None):
    """stablehlo.dynamic_broadcast_in_dim of x to `shape` (None for `?`), x's dimension i becoming
    result dimension dims[i]: a `?` of x stays itself (non-expanding), a static 1 under a `?` or
    a larger size expands. `sizes` (as vector_sizes gives) sizes `?`s x does not have."""
    src = _shape(x)
    known = dict(sizes or {})
    known.update({j: dim_size(x, i) for i, j in enumerate(dims) if src[i] is None and shape[j] is None})
    out_dims = runtime_dims(shape, known)
    expanding, nonexpanding = [], []
    for i, j in enumerate(dims):
        if src[i] is None or src[i] == shape[j]:
            nonexpanding.append(i)
        elif src[i] == 1:
            expanding.append(i)
    rtype = ranked_type(shape, ir.RankedTensorType(x.type).element_type)
    return ir.Operation.create(
        "stablehlo.dynamic_broadcast_in_dim", results=[rtype], operands=[x, shape_tensor(out_dims)],
        attributes={"broadcast_dimensions": _i64_array(dims),
                    "known_expanding_dimensions": _i64_array(expanding),
                    "known_nonexpanding_dimensions": _i64_array(nonexpanding)}).result


def iota(shape: Sequence, element_type: ir.Type, dim: int, known: dict | None = None):
    """stablehlo.dynamic_iota of `shape` (None for `?`), counting along `dim`; `known` as in
    runtime_dims (position -> a tensor<i32> size)."""
    rtype = ranked_type(shape, element_type)
    return ir.Operation.create(
        "stablehlo.dynamic_iota", results=[rtype], operands=[shape_tensor(runtime_dims(shape, known))],
        attributes={"iota_dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)}).result


def _text(shape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _groups(long: list, short: list):
    """The contiguous groups of `long`'s dimensions that make each of `short`'s, or None:
    a static dimension is the product of a group of static ones, a `?` is a group holding
    a `?` (backtracking over the few ways: ranks are small)."""
    def match(i, j):
        if j == len(short):
            return [] if i == len(long) else None
        for k in range(1, len(long) - i + 1):
            group = long[i:i + k]
            has_dyn = any(d is None for d in group)
            t = short[j]
            ok = has_dyn if t is None else (not has_dyn and _prod(group) == t)
            if ok:
                rest = match(i + k, j + 1)
                if rest is not None:
                    return [list(range(i, i + k))] + rest
        return None
    return match(0, 0)


def _prod(dims) -> int:
    out = 1
    for d in dims:
        out *= d
    return out


def reshape(x, shape: Sequence, sizes=None, minus_one: int | None = None):
    """A reshape with `?` dimensions as tensor.collapse_shape or tensor.expand_shape (IREE 3.13
    legalises neither form of stablehlo.dynamic_reshape: iree-notes). Only reshapes that merge
    or split neighbouring dimensions, with at most one `?` in each split group, can be
    written so; others raise DynamicDimError. `sizes`, a 1-D integer tensor Value (the shape a
    Reshape computed at run time), sizes the result's `?`s, where a group splits into several;
    its entry `minus_one`, where given, is TF's -1: sized from x's dimension on the host."""
    src, dst = _shape(x), list(shape)
    et = ir.RankedTensorType(x.type).element_type
    rtype = ranked_type(dst, et)
    reassoc = lambda groups: ir.ArrayAttr.get(  # noqa: E731
        [ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i) for i in g]) for g in groups])
    if len(src) >= len(dst):
        groups = _groups(src, dst)
        if groups is not None and any(sum(src[k] is None for k in g) > 1 for g in groups):
            return _flow_collapse(x, src, dst, groups, rtype)
        if groups is not None:
            return ir.Operation.create("tensor.collapse_shape", results=[rtype], operands=[x],
                                       attributes={"reassociation": reassoc(groups)}).result
    else:
        groups = _groups(dst, src)
        if groups is not None and (sizes is not None or all(sum(dst[k] is None for k in g) <= 1 for g in groups)):
            given, sizes = sizes, []
            index = ir.IndexType.get()
            for i, g in enumerate(groups):
                got = {k: -1 if k == minus_one else _entry(given, k) for k in g if dst[k] is None} \
                    if given is not None else {}
                for k in g:
                    if dst[k] is None and given is not None:
                        sizes.append(_split_size(x, i, g, k, dst, got))
                    elif dst[k] is None:
                        whole = _index_dim(x, i)
                        rest = _prod([dst[m] for m in g if m != k])
                        sizes.append(whole if rest == 1 else ir.Operation.create(
                            "arith.divui", results=[index], operands=[whole, _index_const(rest)]).result)
            static = ir.DenseI64ArrayAttr.get([ir.ShapedType.get_dynamic_size() if d is None else d for d in dst])
            return ir.Operation.create("tensor.expand_shape", results=[rtype], operands=[x, *sizes],
                                       attributes={"reassociation": reassoc(groups),
                                                   "static_output_shape": static}).result
    raise DynamicDimError(f"a reshape of {_text(src)} to {_text(dst)} is not a merge or split of "
                          f"neighbouring dimensions")


def _split_size(x, i: int, group, k: int, dst, got: dict):
    """The index size of result dimension k, split out of x's dimension i with the rest of
    `group`: its entry of the run-time shape (`got`), or where that entry is -1, x's dimension over
    the others (on the host: [b*s, 128] to [-1, s, 128])."""
    index = ir.IndexType.get()
    as_index = lambda v: _index_const(v) if isinstance(v, int) else v  # noqa: E731
    if got[k] != -1:
        return as_index(got[k])
    size = _index_dim(x, i)
    for m in group:
        if m != k:
            other = as_index(dst[m] if dst[m] is not None else got[m])
            size = ir.Operation.create("arith.divui", results=[index], operands=[size, other]).result
    return size


def _flow_collapse(x, src, dst, groups, rtype):
    """A merge of several `?` dimensions ([b, s, 16] to [b*s, 16]) as IREE's flow.tensor.reshape:
    IREE 3.13 turns such a tensor.collapse_shape into a stablehlo.dynamic_reshape it cannot
    legalise; its own reshape op it takes (an IREE-only form, as dynamic shapes are)."""
    index = ir.IndexType.get()
    out_dims = []
    for j, g in enumerate(groups):
        if dst[j] is not None:
            continue
        total = _index_const(_prod([src[k] for k in g if src[k] is not None]))
        for k in g:
            if src[k] is None:
                total = ir.Operation.create("arith.muli", results=[index], operands=[total, _index_dim(x, k)]).result
        out_dims.append(total)
    return flow_reshape(x, dst, out_dims)


def traced_entry(vector, k: int):
    """Where entry k of a 1-D integer tensor comes from, followed back through the ops a shape
    computation is made of (concatenate, slice, reshape, convert): ("dim", x, i) for
    get_dimension_size(x, i), ("const", c) for a constant, or None. A size taken from there is
    known on the host (tensor.dim); one read out of the tensor (tensor.extract) makes IREE copy
    it back from the device and wait there (flow.tensor.load: the `?`-length BERT had 14)."""
    while True:
        op = vector.owner
        name = getattr(op, "name", None)
        if name == "stablehlo.get_dimension_size":
            return ("dim", op.operands[0], ir.IntegerAttr(op.attributes["dimension"]).value)
        if name == "stablehlo.constant":
            values = ir.DenseIntElementsAttr(op.attributes["value"])
            return ("const", int(values[0 if values.is_splat else k]))
        if name in ("stablehlo.reshape", "stablehlo.convert"):
            vector = op.operands[0]
        elif name == "stablehlo.slice":
            start = ir.DenseI64ArrayAttr(op.attributes["start_indices"])[0]
            step = ir.DenseI64ArrayAttr(op.attributes["strides"])[0]
            vector, k = op.operands[0], start + k * step
        elif name == "stablehlo.concatenate":
            for part in op.operands:
                n = ir.RankedTensorType(part.type).shape[0]
                if k < n:
                    vector = part
                    break
                k -= n
            else:
                return None
        else:
            return None


def _entry(vector, k: int):
    """Entry k of a 1-D integer tensor Value: an int where it is a constant, else an index on
    the host where traced_entry finds it, else read out of the tensor."""
    index = ir.IndexType.get()
    found = traced_entry(vector, k)
    if found and found[0] == "dim":
        return _index_dim(found[1], found[2])
    if found:
        return found[1]
    element = ir.RankedTensorType(vector.type).element_type
    v = ir.Operation.create("tensor.extract", results=[element], operands=[vector, _index_const(k)]).result
    return ir.Operation.create("arith.index_cast", results=[index], operands=[v]).result


def _index_const(v: int):
    index = ir.IndexType.get()
    return ir.Operation.create("arith.constant", results=[index],
                               attributes={"value": ir.IntegerAttr.get(index, v)}).result


def slice(x, start: Sequence[int], limit: Sequence, strides: Sequence[int]):
    """stablehlo.real_dynamic_slice of [start, limit) with `strides`, where a None limit is the
    whole of x's `?` dimension there (start 0, stride 1): a window of a `?`-batch tensor."""
    src = _shape(x)
    i32 = ir.IntegerType.get_signless(32)
    dims = []
    for j, (lo, hi, st) in enumerate(zip(start, limit, strides)):
        if hi is None:
            if lo != 0 or st != 1 or src[j] is not None:
                raise DynamicDimError(f"a slice of {_text(src)} from {lo} by {st} along a `?` dimension")
            dims.append(None)
        else:
            dims.append(max(0, -(-(hi - lo) // st)))
    runtime_limit = runtime_dims(list(limit), {j: dim_size(x, j) for j, hi in enumerate(limit) if hi is None})
    ints = lambda v: shape_tensor(v) if len(v) > 1 else shape_tensor(v)  # noqa: E731
    del i32
    return ir.Operation.create(
        "stablehlo.real_dynamic_slice", results=[ranked_type(dims, ir.RankedTensorType(x.type).element_type)],
        operands=[x, ints(list(start)), ints(runtime_limit), ints(list(strides))]).result


def _index_dim(x, i: int):
    return ir.Operation.create("tensor.dim", results=[ir.IndexType.get()], operands=[x, _index_const(i)]).result


# A `?`-row matmul's left operand in a buffer of its own (an optimization_barrier), so that IREE
# packs it in a dispatch of its own. With data tiling on, IREE 3.13 fuses the producer into the
# packing dispatch and fails on some such dispatches of Keras MobileNetV2's `?`-batch module
# ("'affine.delinearize_index' op no basis element may be statically non-positive" after a
# depthwise convolution; "exceeded stack allocation limit" after the average pool); the module
# then compiled without data tiling, its static bucket functions included (compile/buckets.py:
# MobileNetV2's batch-1 bucket 1.46x its static module, now 1.04x), and the dynamic one ran 1.5-1.8x
# slower untiled (2-core VM, medians of 9 interleaved blocks, 2026-11-28). A module IREE compiles
# untiled loses its barriers again (passes/ir/pack_barriers.py). Static dots are untouched.
PACK_BARRIER = True
PACK_MARK = "hlobridge.pack_barrier"
# A batched dot over `?` dimensions (attention in a `?`-batch or `?`-length BERT) gets barriers on
# both operands: IREE 3.13 miscompiles a batched dot fed by a softmax with data tiling on
# (compile/iree.py's _has_static_batched_dot), and with the softmax in a buffer of its own it
# does not (Keras Attention, AdditiveAttention and Dot layers match TF). So a `?` module keeps
# data tiling: bert2_infer's `?`-batch module 6.3 -> 4.0 ms at batch 8 (2-core VM, medians of 9
# interleaved blocks, 2026-11-28). A static module with a batched dot stays untiled: tiled with
# such barriers the static bert2_infer ran 1.27x slower (90 dispatches against 49).
BATCHED_DOT_BARRIERS = True


def pack_barriers(lhs, rhs, batched: bool):
    """A dot_general's (lhs, rhs), behind marked barriers where the rules above want them."""
    if PACK_BARRIER and is_dynamic(_shape(lhs)) and not batched:
        return barrier(lhs, PACK_MARK), rhs
    if BATCHED_DOT_BARRIERS and batched and (is_dynamic(_shape(lhs)) or is_dynamic(_shape(rhs))):
        return barrier(lhs, PACK_MARK), barrier(rhs, PACK_MARK)
    return lhs, rhs


def barrier(x, mark: str | None = None):
    """stablehlo.optimization_barrier of x (no fusion crosses it; `mark`, a unit attribute a pass
    finds it by), with x's `?` sizes tied back on (flow.tensor.tie_shape): IREE 3.13 cannot
    resolve a tensor.dim of the barrier's own result ("dynamic dimensions must have been
    resolved prior to leaving the flow dialect")."""
    dims = [_index_dim(x, i) for i, d in enumerate(_shape(x)) if d is None]
    held = ir.Operation.create("stablehlo.optimization_barrier", results=[x.type], operands=[x],
                               attributes={mark: ir.UnitAttr.get()} if mark else {}).result
    if not dims:
        return held
    return ir.Operation.create("flow.tensor.tie_shape", results=[x.type], operands=[held, *dims]).result


def real_slice(x, starts, limits, strides, shape: Sequence):
    """stablehlo.real_dynamic_slice of x by 1-D integer tensors (run-time values), to `shape`
    (None where the size is known at run time only)."""
    return ir.Operation.create("stablehlo.real_dynamic_slice",
                               results=[ranked_type(shape, ir.RankedTensorType(x.type).element_type)],
                               operands=[x, starts, limits, strides]).result


def flow_reshape(x, shape: Sequence, sizes: Sequence):
    """x reshaped to `shape` by IREE's flow.tensor.reshape, the result's `?`s sized by `sizes`
    (index Values, in order): any reshape whose sizes are known at run time."""
    src = _shape(x)
    dims = [_index_dim(x, i) for i, d in enumerate(src) if d is None]
    segments = ir.DenseI32ArrayAttr.get([1, len(dims), len(sizes)])
    return ir.Operation.create("flow.tensor.reshape", results=[ranked_type(shape, ir.RankedTensorType(x.type).element_type)],
                               operands=[x, *dims, *sizes], attributes={"operandSegmentSizes": segments}).result


def flattened_dot(lhs, rhs, out_shape: Sequence, dot, lhs_contract, rhs_contract):
    """A dot_general without batch dims whose lhs has several `?` free dims ([b, s, 16] x
    [16, 2, 8]), as one 2-D matmul between flow reshapes, or None where it is not of that form:
    IREE 3.13 lowers the 3-D form through a stablehlo.dynamic_reshape it cannot legalise.
    `dot(lhs, rhs, out_shape, lhs_contract, rhs_contract)` builds the 2-D dot_general."""
    ls, rs = _shape(lhs), _shape(rhs)
    k = len(lhs_contract)
    if (sum(d is None for d in ls) < 2 or list(lhs_contract) != list(range(len(ls) - k, len(ls)))
            or list(rhs_contract) != list(range(k)) or None in rs or None in ls[len(ls) - k:]):
        return None
    index = ir.IndexType.get()
    free = [i for i in range(len(ls) - k)]
    rows = _index_const(_prod([ls[i] for i in free if ls[i] is not None]))
    for i in free:
        if ls[i] is None:
            rows = ir.Operation.create("arith.muli", results=[index], operands=[rows, _index_dim(lhs, i)]).result
    depth, cols = _prod(ls[len(ls) - k:]), _prod(rs[k:])
    l2 = flow_reshape(lhs, [None, depth], [rows])
    r2 = ir.Operation.create("stablehlo.reshape", results=[ranked_type([depth, cols], ir.RankedTensorType(rhs.type).element_type)],
                             operands=[rhs]).result
    flat = dot(l2, r2, [None, cols], [1], [0])
    return flow_reshape(flat, out_shape, [_index_dim(lhs, i) for i in free if ls[i] is None])
