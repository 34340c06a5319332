"""Whether a graph keeps the rows of its batch apart: the condition for padding a batch.

A module compiled with static batch buckets (compile/buckets.py) may run batch 5 in the batch-8
function, zero rows appended and the outputs cut back to 5 rows, only if no op lets a row
see another: then the padded rows cannot change the real ones. The rule is a whitelist, so an
op this module does not know refuses padding with its name rather than risking wrong numbers.

Each tensor that carries the batch (a `?` first dimension) has a layout: its axis 0 holds
`m` rows per example, example i's at [i*m, (i+1)*m). Inputs have m = 1; a Reshape to
[-1, hidden] of a [?, 32, hidden] tensor has m = 32 (BERT's layout for its dense layers), and
the Reshape back to [-1, 32, hidden] has m = 1 again. A Reshape keeps examples apart only when
each example's elements fill whole output rows (row-major: the trailing output dims divide the
example's element count); one that packs two examples into a row (or half) mixes them. The
graph's outputs must be back at m = 1, since the runtime cuts rows [:batch] from them.

Whitelisted, checked per op against the batch operands and layouts:

- elementwise math (operands with the batch of the output's rank, so no broadcast moves it),
  Softmax/LogSoftmax over a last axis that is not the batch;
- MatMul with the batch as the rows of `a` (not transposed), BatchMatMul of rank >= 3,
  Conv2D, DepthwiseConv2dNative, pooling, BiasAdd, inference (`is_training=false`)
  FusedBatchNorm, with the batch in their data operand only;
- reductions not over axis 0, Transpose keeping axis 0 first, Reshape/ExpandDims/Squeeze as
  above, Pad not padding axis 0, Slice and StridedSlice taking all of axis 0;
- GatherV2 of a batch-free table by batch indices on axis 0 (an embedding lookup), or of a
  batch tensor on a later axis by batch-free indices; OneHot of batch indices whose depth axis
  is not axis 0.

The batch size itself (Shape of a batch tensor, and shape arithmetic on it) is the padded one:
it may only become a Reshape's target (Keras' Flatten reshapes to [shape(x)[0], -1]), whose
layout the rule above checks on the static dimensions; anything else that reads it, or an
output computed from it, refuses.

Everything else mixes rows or may: reductions over axis 0, training BatchNorm, a Transpose
that moves the batch. `mixing_node` names the first.
"""

from __future__ import annotations

import math

ELEMENTWISE = frozenset("""
Identity IdentityN Snapshot StopGradient Cast Relu Relu6 Elu Selu LeakyRelu Sigmoid Tanh Softplus
Softsign Exp Log Log1p Sqrt Rsqrt Square Neg Abs Sign Floor Ceil Round Reciprocal Inv Erf Sin Cos
Add AddV2 Sub Mul Div RealDiv DivNoNan Maximum Minimum Pow SquaredDifference FloorDiv FloorMod
Select SelectV2 Equal NotEqual Less LessEqual Greater GreaterEqual LogicalAnd LogicalOr LogicalNot
ClipByValue AddN Gelu
""".split())
DATA_FIRST = frozenset("""
BiasAdd Conv2D DepthwiseConv2dNative MaxPool AvgPool FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3
""".split())  # the batch in operand 0 only (weights, bias, statistics are batch-free)
REDUCTIONS = frozenset("Mean Sum Max Min Prod All Any ArgMax ArgMin".split())
RESHAPES = frozenset("Reshape ExpandDims Squeeze".split())
GRAPH_INPUT_OPS = frozenset("Placeholder PlaceholderWithDefault Const".split())


def _batch_dynamic(spec) -> bool:
    return spec is not None and spec.shape is not None and len(spec.shape) > 0 and \
        not isinstance(spec.shape[0], int)


def _value(ins, i):
    """Input i's constant value, flattened, or None when it is known only at run time."""
    return ins[i].value.reshape(-1) if len(ins) > i and ins[i] is not None and ins[i].value is not None else None


def _static_size(shape) -> int | None:
    return math.prod(shape) if all(isinstance(d, int) for d in shape) else None


def _reason(node, ins, batched, out, m):
    """(why `node` mixes rows, None) or (None, rows per example of its outputs); `batched`:
    the indices of its inputs that carry the batch, `m` their layout, `out` its output 0."""
    op = node.op
    if op in ELEMENTWISE:
        return (None, m) if all(len(ins[i].shape) == len(out.shape) for i in batched) else \
            (f"{op} broadcasts the batch off axis 0", m)
    if op in ("Softmax", "LogSoftmax"):
        return (None, m) if len(out.shape) >= 2 else (f"{op} over the batch axis", m)
    if op in DATA_FIRST:
        if op.startswith("FusedBatchNorm") and node.attr("is_training"):
            return "training BatchNorm (batch statistics)", m
        return (None, m) if batched == [0] else (f"{op} with the batch in its weights", m)
    if op == "MatMul":
        ok = batched == [0] and not node.attr("transpose_a")
        return (None, m) if ok else ("MatMul contracts over the batch", m)
    if op.startswith("BatchMatMul"):
        ok = len(out.shape) >= 3 and all(len(ins[i].shape) == len(out.shape) for i in batched)
        return (None, m) if ok else (f"{op} of rank < 3 or broadcasting the batch", m)
    if op in REDUCTIONS:
        axes = _value(ins, 1)
        if axes is None:
            return f"{op} over axes unknown before run time", m
        return (f"{op} over axis 0", m) if any(int(a) % len(ins[0].shape) == 0 for a in axes) else (None, m)
    if op == "Transpose":
        perm = _value(ins, 1)
        return (None, m) if perm is not None and int(perm[0]) == 0 else ("Transpose moves the batch", m)
    if op in ("Pad", "PadV2", "MirrorPad"):
        pads = _value(ins, 1)
        return (None, m) if pads is not None and not pads[:2].any() else (f"{op} adds rows to the batch", m)
    if op == "Slice":
        begin, size = _value(ins, 1), _value(ins, 2)
        ok = begin is not None and size is not None and begin[0] == 0 and size[0] == -1
        return (None, m) if ok else ("Slice cuts the batch", m)
    if op == "StridedSlice":
        begin, strides = _value(ins, 1), _value(ins, 3)
        masks = [node.attr(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                           "shrink_axis_mask")]
        ok = begin is not None and strides is not None and (masks[0] & 1 or begin[0] == 0) and \
            masks[1] & 1 and strides[0] == 1 and not (masks[2] or masks[3] or masks[4] & 1)
        return (None, m) if ok else ("StridedSlice cuts the batch", m)
    if op == "GatherV2":
        axis = _value(ins, 2)
        if axis is None or node.attr("batch_dims", 0) != 0:
            return "GatherV2 with a batch_dims or run-time axis", m
        axis = int(axis[0]) % len(ins[0].shape)
        lookup = batched == [1] and axis == 0  # an embedding: a batch-free table, batch ids
        along = batched == [0] and axis > 0  # batch-free indices into each row
        return (None, m) if lookup or along else ("GatherV2 of batch rows", m)
    if op == "OneHot":
        axis = node.attr("axis", -1)
        return (None, m) if batched == [0] and axis != 0 else ("OneHot with its depth on the batch axis", m)
    if op in RESHAPES:
        return _reshape_rows(op, ins[0].shape, out.shape, m)
    return f"{op} is not known to keep rows apart", m


def _reshape_rows(op, before, after, m):
    """A reshape keeps examples apart when each example's elements (m rows of `before`) fill a
    whole number of rows of `after`; that number is the output's layout."""
    row_in, row_out = _static_size(before[1:]), _static_size(after[1:])
    if row_in is None or not row_out:
        return f"{op} with unknown dimensions beside the batch", m
    if (m * row_in) % row_out:
        return f"{op} puts rows of two examples together", m
    return None, m * row_in // row_out


def mixing_node(graph, nodes, specs, outputs=()) -> tuple[str, str] | None:
    """(node name, why) of the first node among `nodes` whose output depends on other rows of a
    `?` batch, or of an output in `outputs` not laid out one row per example; None when padding
    the batch is safe. A batch tensor from outside `nodes` (a feed) has one row per example."""
    rows = {}  # tensor -> its layout (rows per example); absent: 1
    sized = set()  # tensors computed from the (padded) batch size: Shape and shape arithmetic
    for name in nodes:
        node = graph.nodes[name]
        if node.op in GRAPH_INPUT_OPS:
            continue
        outs = sorted(((r, s) for r, s in specs.items() if r.node == name), key=lambda rs: rs[0].index)
        ins = [specs.get(r) for r in node.inputs]
        batched = [i for i, s in enumerate(ins) if _batch_dynamic(s)]
        reads_size = [i for i, r in enumerate(node.inputs) if r in sized]
        batch_out = any(_batch_dynamic(s) for _, s in outs)
        if (node.op == "Shape" and batched == [0]) or (reads_size and not batched and not batch_out):
            sized.update(r for r, _ in outs)
            continue
        if reads_size and not (node.op == "Reshape" and reads_size == [1] and batched == [0]):
            return name, f"{node.op} reads the batch size"  # only a batch Reshape's target may (Flatten)
        if not batched and not batch_out:
            continue  # does not touch the batch
        layouts = {rows.get(node.inputs[i], 1) for i in batched}
        if len(layouts) > 1:
            return name, f"{node.op} of operands with {sorted(layouts)} rows per example"
        out = outs[0][1] if outs else None
        if out is None or out.shape is None or any(ins[i].shape is None for i in batched):
            return name, f"{node.op} with a result of unknown rank"
        why, m = _reason(node, ins, batched, out, layouts.pop() if layouts else 1)
        if why is None and not _batch_dynamic(out):
            why = f"{node.op} takes the batch off axis 0"
        if why is not None:
            return name, why
        rows.update({r: m for r, s in outs if _batch_dynamic(s)})
    for ref in outputs:
        if ref in sized:
            return ref.node, f"output {ref} is computed from the batch size"
        if rows.get(ref, 1) != 1:
            return ref.node, f"output {ref} holds {rows[ref]} rows per example"
    return None


def padding_note(graph, nodes, specs, outputs=()) -> str:
    """The one line reflection and `explain` show: "pads" or "cannot pad: node X (why) mixes rows"."""
    found = mixing_node(graph, nodes, specs, outputs)
    if found is None:
        return "pads"
    name, why = found
    return f"cannot pad: node {name} ({why}) mixes rows"
