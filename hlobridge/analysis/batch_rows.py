"""Whether a graph keeps the rows of its batch apart: the condition for padding a batch.

A module compiled with static batch buckets (compile/buckets.py) may run batch 5 in the batch-8
function, zero rows appended and the outputs cut back to 5 rows, only if no op lets a row
see another: then the padded rows cannot change the real ones. The rule is a whitelist, so an
op this module does not know refuses padding with its name rather than risking wrong numbers:

- nodes that do not touch the batch (weights, constants, shape arithmetic on static dims);
- ops that work row by row: elementwise math, MatMul with the batch as its rows, Conv2D and
  DepthwiseConv2dNative, pooling, BiasAdd, inference (`is_training=false`) FusedBatchNorm,
  Softmax over the last axis;
- reductions not over axis 0, Transpose keeping axis 0 first, Reshape keeping the batch as
  its first dimension (ExpandDims, Squeeze alike), Pad not padding axis 0, GatherV2 of a
  static table by batch indices (an embedding).

Everything else mixes rows or may: reductions over axis 0, training BatchNorm, a Transpose or
Reshape that moves the batch. `mixing_node` names the first such node.
"""

from __future__ import annotations

ROW_WISE = frozenset("""
Identity IdentityN Snapshot StopGradient Cast Relu Relu6 Elu Selu LeakyRelu Sigmoid Tanh Softplus
Softsign Exp Log Log1p Sqrt Rsqrt Square Neg Abs Sign Floor Ceil Round Reciprocal Inv Erf Sin Cos
Add AddV2 Sub Mul Div RealDiv DivNoNan Maximum Minimum Pow SquaredDifference FloorDiv FloorMod
BiasAdd MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3 Conv2D DepthwiseConv2dNative MaxPool AvgPool
Softmax LogSoftmax Select SelectV2 Equal NotEqual Less LessEqual Greater GreaterEqual LogicalAnd
LogicalOr LogicalNot ClipByValue AddN Gelu
""".split())
REDUCTIONS = frozenset("Mean Sum Max Min Prod All Any ArgMax ArgMin".split())
GRAPH_INPUT_OPS = frozenset("Placeholder PlaceholderWithDefault Const".split())


def _batch_dynamic(spec) -> bool:
    return spec is not None and spec.shape is not None and len(spec.shape) > 0 and \
        not isinstance(spec.shape[0], int)


def _reason(node, specs) -> str | None:
    """Why `node` mixes rows (None: it keeps them apart)."""
    op = node.op
    ins = [specs.get(r) for r in node.inputs]
    if op in ROW_WISE:
        return None
    if op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        return "training BatchNorm (batch statistics)" if node.attr("is_training") else None
    if op in REDUCTIONS:
        axes = ins[1].value if len(ins) > 1 and ins[1] is not None else None
        if axes is None:
            return f"{op} over axes unknown before run time"
        rank = len(ins[0].shape)
        if any(int(a) % rank == 0 for a in axes.reshape(-1)):
            return f"{op} over axis 0"
        return None
    if op == "Transpose":
        perm = ins[1].value if len(ins) > 1 and ins[1] is not None else None
        return None if perm is not None and int(perm.reshape(-1)[0]) == 0 else "Transpose moves the batch"
    if op == "GatherV2":  # an embedding lookup of batch ids keeps rows; gathering batch rows does not
        return None if ins and not _batch_dynamic(ins[0]) else "GatherV2 of batch rows"
    if op in ("Pad", "PadV2", "MirrorPad"):
        pads = ins[1].value if len(ins) > 1 and ins[1] is not None else None
        return None if pads is not None and not pads.reshape(-1)[:2].any() else f"{op} adds rows to the batch"
    if op in ("Reshape", "ExpandDims", "Squeeze"):
        out = next((s for r, s in specs.items() if r.node == node.name and r.index == 0), None)
        same = out is not None and len(out.shape) > 0 and ins and out.shape[0] == ins[0].shape[0]
        return None if same else f"{op} moves the batch"
    return f"{op} is not known to keep rows apart"


def mixing_node(graph, nodes, specs) -> tuple[str, str] | None:
    """(node name, why) of the first node among `nodes` whose output depends on other rows of a
    `?` batch, or None when padding the batch is safe."""
    for name in nodes:
        node = graph.nodes[name]
        if node.op in GRAPH_INPUT_OPS:
            continue
        outs = [s for r, s in specs.items() if r.node == name]
        ins = [specs.get(r) for r in node.inputs]
        if not any(_batch_dynamic(s) for s in outs + ins):
            continue  # does not touch the batch
        why = _reason(node, specs)
        if why is not None:
            return name, why
    return None


def padding_note(graph, nodes, specs) -> str:
    """The one line reflection and `explain` show: "pads" or "cannot pad: node X (why) mixes rows"."""
    found = mixing_node(graph, nodes, specs)
    if found is None:
        return "pads"
    name, why = found
    return f"cannot pad: node {name} ({why}) mixes rows"
