"""Output dtypes and shapes of every node, before IR is built.

Walks the graph in topological order and calls each op's `infer`. Where every input of
a pure op is a known constant and the op has a reference kernel, the output value is
computed too (TensorFlow's constant folding of shape arithmetic: Shape, Prod,
BroadcastGradientArgs, ...), so that ops taking shapes and axes see them.

Ops that name functions (If, While, Case) reach their bodies through the `functions` argument
(the `ops.calls.Functions` protocol), given by whoever runs inference: the Session and the
compiler pass the interpreter's `FunctionRunner`, which can also run a body to fold it;
without one, `FunctionShapes` infers bodies and leaves such nodes unfolded.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from ..errors import GraphError, HlobridgeError, LoweringError, ShapeInferenceError, UnsupportedOpsError
from ..dtypes import RESOURCE, VARIANT
from ..frontend.functions import FunctionLibrary, library_of
from ..frontend.graph import FuncAttr, Graph, TensorRef
from ..ops import registry
from ..ops.calls import NotAvailable
from ..limits import check_tensor_elements
from ..ops.kinds import GRAPH_INPUTS
from ..ops.signatures import check_node
from ..spec import TensorSpec
from .symbolic_dims import partial_outputs

# Folding runs a NumPy kernel at compile time; keep it to small tensors.
FOLD_ELEMENT_LIMIT = 1 << 16
# Ops never folded: their outputs are not functions of their inputs' values.
NEVER_FOLD = GRAPH_INPUTS


def _foldable(entry, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> bool:
    if entry.stateful or entry.kernel is None or entry.name in NEVER_FOLD:
        return False
    if not all(s.value is not None for s in inputs):
        return False
    return all(s.is_static and s.num_elements <= FOLD_ELEMENT_LIMIT and s.dtype not in (RESOURCE, VARIANT)
               for s in outputs)  # a handle or a TensorList is not an array to fold


def outputs_by_node(specs: dict[TensorRef, TensorSpec]) -> dict[str, list[TensorSpec]]:
    """Each node's output specs, in output order (what infer_specs computed, regrouped)."""
    grouped: dict[str, list[TensorSpec]] = {}
    for ref in sorted(specs, key=lambda r: r.index):
        grouped.setdefault(ref.node, []).append(specs[ref])
    return grouped


def infer_node(graph: Graph, name: str, specs: dict, functions=None) -> list[TensorSpec]:
    """One node's output specs from its inputs' (folded to values where `_foldable`).

    The node is checked against its op's signature first (ops/signatures.py), and every static
    output against the size limit (limits.py); a rule that still fails on a strange node fails
    with the node's name, never with a traceback from inside the rule.
    """
    node = graph.nodes[name]
    entry = registry.lookup(node.op)
    inputs = [specs[r] for r in node.inputs]
    registry.check_attrs(entry, node)
    check_node(node)
    ctx = registry.OpContext(node, inputs, functions=functions)
    with _naming(node, "shape inference"):
        outputs = registry.as_list(entry.infer(ctx))
    for i, spec in enumerate(outputs):
        if spec.shape is not None and all(d is not None for d in spec.shape):
            check_tensor_elements(math.prod(spec.shape), f"node '{name}' ({node.op}) output {i}")
    if not _foldable(entry, inputs, outputs):  # shape arithmetic on a `?` dim: partly known
        return partial_outputs(entry, ctx, inputs, outputs)
    ctx.outputs = outputs
    try:
        with np.errstate(all="ignore"), _naming(node, "constant folding"):  # what the kernel computes: inf, nan
            values = registry.as_list(entry.kernel(ctx, *[s.value for s in inputs]))
            # (a value that does not fit the inferred shape is the node's error, named)
            outputs = [TensorSpec(o.dtype, o.shape, np.asarray(v, dtype=o.dtype).reshape(o.shape))
                       for o, v in zip(outputs, values)]
    except NotAvailable:  # a body that only an evaluator could run: left to run later
        return outputs
    return outputs


@contextmanager
def _naming(node, stage: str):
    """Turn anything but an HlobridgeError raised by an op's rule into one naming the node."""
    try:
        yield
    except HlobridgeError:
        raise
    except Exception as e:  # noqa: BLE001  (a rule meeting a node it was not written for)
        raise ShapeInferenceError(f"node '{node.name}' ({node.op}): {stage} failed: "
                                  f"{type(e).__name__}: {e}") from e


def infer_specs(graph: Graph, nodes: set[str] | None = None,
                feeds: dict[TensorRef, TensorSpec] | None = None,
                functions=None) -> dict[TensorRef, TensorSpec]:
    """Specs of every output of `nodes` (default: all). A fed tensor takes the feed's spec.
    `functions` (ops.calls.Functions) serves ops that name functions; default: a
    `FunctionShapes` over the graph's library.

    Raises UnsupportedOpsError listing every node whose op is not registered, and
    ShapeInferenceError for the first node whose shapes do not work out.
    """
    feeds = feeds or {}
    if functions is None:
        functions = FunctionShapes(library_of(graph))
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
        outputs = infer_node(graph, name, specs, functions)
        n_outputs[name] = len(outputs)
        for i, spec in enumerate(outputs):
            ref = TensorRef(name, i)
            specs[ref] = feeds.get(ref, spec)
    if unsupported:
        raise UnsupportedOpsError(unsupported, "handle")
    return specs


class FunctionShapes:
    """`ctx.functions` for shape inference: the specs of a function's results, cached per
    argument signature. `evaluate(f, args)`, when given, runs a body so that a node calling
    it with constant inputs folds; without it, `call` raises NotAvailable."""

    def __init__(self, library: FunctionLibrary, evaluate=None):
        self.library = library
        self.evaluate = evaluate
        self._inferred: dict = {}

    def infer(self, f: str | FuncAttr, in_specs: list) -> list[TensorSpec]:
        """The specs of `f`'s results for arguments of `in_specs`."""
        fn = self.library.get(f)
        key = (fn.name, tuple(_spec_key(s) for s in in_specs))
        out = self._inferred.get(key)
        if out is None:
            if len(in_specs) != len(fn.args):
                raise GraphError(f"function '{fn.name}' takes {len(fn.args)} argument(s), "
                                 f"called with {len(in_specs)}")
            feeds = {TensorRef(a, 0): s for a, s in zip(fn.args, in_specs)}
            specs = infer_specs(fn.graph, set(fn.targets()), feeds, self)
            out = self._inferred[key] = [specs[r] for r in fn.rets]
        return out

    def call(self, f, args: list) -> list:
        """`f` run by the evaluator this was given (NotAvailable without one)."""
        if self.evaluate is None:
            raise NotAvailable(f"function '{getattr(f, 'name', f)}' cannot be run during shape inference")
        return self.evaluate(f, args)

    def lower(self, f, operands: list, in_specs: list) -> list:
        """Shape inference builds no IR."""
        raise LoweringError(f"function '{getattr(f, 'name', f)}' cannot be lowered by shape inference")


def _spec_key(spec: TensorSpec) -> tuple:
    value = None if spec.value is None else (spec.value.dtype.str, spec.value.tobytes())
    partial = None if spec.partial is None else spec.partial.tobytes()  # (symbolic_dims.py)
    return (str(spec.dtype), spec.shape, value, spec.handle, partial)
