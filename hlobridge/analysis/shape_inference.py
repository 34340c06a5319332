"""Output dtypes and shapes of every node, before IR is built.

Walks the graph in topological order and calls each op's `infer`. Where every input of
a pure op is a known constant and the op has a reference kernel, the output value is
computed too (TensorFlow's constant folding of shape arithmetic: Shape, Prod,
BroadcastGradientArgs, ...), so that ops taking shapes and axes see them.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeInferenceError, UnsupportedOpsError
from ..frontend.graph import Graph, TensorRef
from ..ops import registry
from ..spec import TensorSpec

# Folding runs a NumPy kernel at compile time; keep it to small tensors.
FOLD_ELEMENT_LIMIT = 1 << 16
# Ops never folded: their outputs are not functions of their inputs' values.
NEVER_FOLD = {"Placeholder", "PlaceholderWithDefault"}


def _foldable(entry, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> bool:
    if entry.stateful or entry.kernel is None or entry.name in NEVER_FOLD:
        return False
    if not all(s.value is not None for s in inputs):
        return False
    return all(s.is_static and s.num_elements <= FOLD_ELEMENT_LIMIT for s in outputs)


def outputs_by_node(specs: dict[TensorRef, TensorSpec]) -> dict[str, list[TensorSpec]]:
    """Each node's output specs, in output order (what infer_specs computed, regrouped)."""
    grouped: dict[str, list[TensorSpec]] = {}
    for ref in sorted(specs, key=lambda r: r.index):
        grouped.setdefault(ref.node, []).append(specs[ref])
    return grouped


def infer_node(graph: Graph, name: str, specs: dict) -> list[TensorSpec]:
    node = graph.nodes[name]
    entry = registry.lookup(node.op)
    inputs = [specs[r] for r in node.inputs]
    registry.check_attrs(entry, node)
    ctx = registry.OpContext(node, inputs, functions=graph.function_library)
    outputs = registry.as_list(entry.infer(ctx))
    if _foldable(entry, inputs, outputs):
        ctx.outputs = outputs
        with np.errstate(all="ignore"):  # folding computes what the kernel would: inf, nan
            values = registry.as_list(entry.kernel(ctx, *[s.value for s in inputs]))
        outputs = [TensorSpec(o.dtype, o.shape, np.asarray(v, dtype=o.dtype).reshape(o.shape))
                   for o, v in zip(outputs, values)]
    return outputs


def infer_specs(graph: Graph, nodes: set[str] | None = None,
                feeds: dict[TensorRef, TensorSpec] | None = None) -> dict[TensorRef, TensorSpec]:
    """Specs of every output of `nodes` (default: all). A fed tensor takes the feed's spec.

    Raises UnsupportedOpsError listing every node whose op is not registered, and
    ShapeInferenceError for the first node whose shapes do not work out.
    """
    feeds = feeds or {}
    specs: dict[TensorRef, TensorSpec] = dict(feeds)  # a feed cuts: consumers see the feed's spec
    unsupported, blocked = [], set()
    n_outputs: dict[str, int] = {}
    for name in graph.order:
        if nodes is not None and name not in nodes:
            continue
        node = graph.nodes[name]
        if registry.lookup(node.op) is None:
            unsupported.append((name, node.op))
            blocked.add(name)
            continue
        if any(r.node in blocked for r in node.inputs):
            blocked.add(name)
            continue
        for r in node.inputs:
            if r not in specs:
                have = n_outputs.get(r.node, 0)
                raise ShapeInferenceError(
                    f"node '{name}' ({node.op}) reads '{r}', but '{r.node}' "
                    f"({graph.nodes[r.node].op}) has {have} output(s)")
        outputs = infer_node(graph, name, specs)
        n_outputs[name] = len(outputs)
        for i, spec in enumerate(outputs):
            ref = TensorRef(name, i)
            specs[ref] = feeds.get(ref, spec)
    if unsupported:
        raise UnsupportedOpsError(unsupported, "handle")
    return specs
