"""Where a cluster can be cut in two between its layers: one tensor of one row per example
carries everything from the first half to the second, at about half the work.

The Session runs a batch as row parts, one per CPU (runtime/row_split.py). An odd batch on two
CPUs left one CPU a row more than the other (MobileNetV2 batch 5: 3 rows against 2, the call as
long as the 3). Cut at such a tensor, the odd row runs as two calls: its first half on one CPU
before that CPU's rows, its second half on the other CPU after its rows, and each CPU does half
a row more. A cut is a position in the cluster's graph order after which exactly one tensor
computed from the inputs is still read (a sequential network's block boundary: MobileNetV2's
block outputs, a ResNet's stage outputs); constants and what is computed only from them go to
whichever half reads them.

The work of a node is estimated as passes/ir/work_estimate.py estimates StableHLO's, on the TF
graph: two flops per multiply-add of a matmul or convolution, ELEMENT_COST per element any other
op writes. Only where the two halves differ is it compared, so a rough estimate does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hlobridge.passes.ir.work_estimate import ELEMENT_COST

from ..frontend.graph import Graph, TensorRef
from .batch_rows import mixing_node

# The cut's first half must hold this share of the work or more, and at most 1 minus it: a cut
# near an end balances little and costs a second call.
MIN_SHARE = 0.25


@dataclass
class LayerCut:
    """A cluster in two halves: `first` computes `cut` (one row per example) from the cluster's
    inputs `first_inputs`; `second` computes the cluster's outputs from `cut` and
    `second_inputs` (cluster inputs it reads besides). Nodes in graph order; `share` is the
    first half's part of the estimated work."""

    cut: TensorRef
    first: list[str]
    second: list[str]
    first_inputs: list[TensorRef]
    second_inputs: list[TensorRef]
    share: float


def _dims(spec) -> list[int] | None:
    """A spec's shape with a `?` dimension counted as 1 (None: no spec, or an unknown rank)."""
    if spec is None or spec.shape is None:
        return None
    return [1 if d is None else d for d in spec.shape]


def node_work(graph: Graph, name: str, specs: dict, outs: list | None = None) -> int:
    """A node's estimated work, per row of a `?` batch (the halves are compared per row).
    `outs`: the specs of its outputs, if the caller has them at hand."""
    node = graph.nodes[name]
    outs = [s for r, s in specs.items() if r.node == name] if outs is None else outs
    out = sum(math.prod(d) for d in map(_dims, outs) if d is not None)
    ins = [_dims(specs.get(r)) for r in node.inputs]
    per_output = None
    if node.op in ("Conv2D", "Conv3D") and len(ins) > 1 and ins[1]:
        per_output = math.prod(ins[1][:-1])  # filter [..., in, out]: every input channel
    elif node.op == "DepthwiseConv2dNative" and len(ins) > 1 and ins[1]:
        per_output = math.prod(ins[1][:-2])  # filter [h, w, in, multiplier]: the taps only
    elif node.op == "MatMul" and ins and ins[0]:
        per_output = ins[0][0 if node.attr("transpose_a") else 1]
    elif node.op in ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3") and ins and ins[0]:
        per_output = ins[0][-2 if node.attr("adj_x") else -1]
    return 2 * out * per_output if per_output is not None else ELEMENT_COST * out


def layer_cut(graph: Graph, nodes: list[str], inputs: list[TensorRef], outputs: list[TensorRef],
              specs: dict) -> LayerCut | None:
    """The cut of the cluster (`nodes` in graph order, reading `inputs`, `outputs` read outside)
    nearest half its work, or None: no single tensor of one row per example crosses between
    MIN_SHARE and 1 - MIN_SHARE of the work. `specs` are the cluster's, with a `?` batch."""
    members = set(nodes)
    outputs_of: dict[str, list[TensorRef]] = {name: [] for name in nodes}
    for r in specs:
        if r.node in outputs_of:
            outputs_of[r.node].append(r)
    varying: list[str] = []  # nodes computed from the inputs, in order
    computed = set(inputs)
    for name in nodes:
        if any(r in computed for r in graph.nodes[name].inputs):
            varying.append(name)
            computed.update(outputs_of[name])
    position = {name: p for p, name in enumerate(varying)}
    last_read: dict[TensorRef, float] = {}
    produced: dict[str, list[TensorRef]] = {name: [] for name in varying}
    for name in varying:
        for r in graph.nodes[name].inputs:
            if r.node in position:
                last_read[r] = max(last_read.get(r, -1), position[name])
    for r in outputs:
        last_read[r] = math.inf
    for r in last_read:
        if r.node in produced:
            produced[r.node].append(r)
    work = [node_work(graph, name, specs, [specs[r] for r in outputs_of[name]]) for name in varying]
    total = sum(work) or 1
    live: set[TensorRef] = set()
    done, best = 0, None
    for p, name in enumerate(varying[:-1]):
        live.update(r for r in produced[name] if last_read[r] > p)
        live -= {r for r in live if last_read[r] == p}
        done += work[p]
        share = done / total
        if len(live) != 1 or not MIN_SHARE <= share <= 1 - MIN_SHARE:
            continue
        (cut,) = live
        if last_read[cut] == math.inf or specs.get(cut) is None or not specs[cut].shape \
                or specs[cut].shape[0] is not None:
            continue  # a cluster output, or no batch first: not one row per example
        if best is None or abs(share - 0.5) < abs(best[2] - 0.5):
            best = (p, cut, share)
    if best is None:
        return None
    p, cut, share = best
    constants = members - set(varying)
    first = _with_constants(graph, varying[:p + 1], constants, nodes)
    second = _with_constants(graph, varying[p + 1:], constants, nodes)
    if mixing_node(graph, first, specs, [cut]) is not None:
        return None  # the cut holds several rows per example (a [batch * tokens, hidden] tensor)
    read = lambda half: [r for r in inputs if any(r in graph.nodes[n].inputs for n in half)]  # noqa: E731
    return LayerCut(cut, first, second, read(first), [cut, *read(second)], share)


def _with_constants(graph: Graph, half: list[str], constants: set[str], order: list[str]) -> list[str]:
    """`half` and the cluster's `constants` (nodes not computed from its inputs) it reads,
    directly or through other constants, in graph order."""
    wanted, stack = set(half), list(half)
    while stack:
        for r in graph.nodes[stack.pop()].inputs:
            if r.node in constants and r.node not in wanted:
                wanted.add(r.node)
                stack.append(r.node)
    return [n for n in order if n in wanted]
