"""Lowering a (sub)graph to one StableHLO function.

The driver walks the needed nodes in topological order and calls each op's `lower`
rule with its operands as `ir.Value`s. Every op gets `Location.name(node.name)`, so
verifier errors point at graph nodes. Tensors with a known constant value are
materialised as `stablehlo.constant` where they are used, and the nodes that only
compute constants (shape arithmetic) emit nothing else.

The function carries its signature (tensor names, dtypes, shapes) as JSON in
`iree.reflection`, which IREE keeps in the `.vmfb`; the runtime reads it back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from iree.compiler import ir
from iree.compiler.dialects import func

from hlobridge.dialects import stablehlo as hlo

from . import dtypes
from .errors import LoweringError, UnsupportedOpsError
from .graph import Graph, TensorRef
from .ops import registry
from .shape_inference import outputs_by_node
from .spec import TensorSpec

SIGNATURE_KEY = "hlobridge.signature"


@dataclass
class Signature:
    """Names, dtypes and shapes of a compiled function's inputs and outputs."""

    inputs: list[tuple[str, TensorSpec]]
    outputs: list[tuple[str, TensorSpec]]

    def to_json(self) -> str:
        def enc(items):
            return [{"name": n, "dtype": dtypes.name(s.dtype), "shape": list(s.shape)} for n, s in items]
        return json.dumps({"inputs": enc(self.inputs), "outputs": enc(self.outputs)})

    @classmethod
    def from_json(cls, text: str) -> "Signature":
        import numpy as np
        import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy)

        def dec(items):
            return [(d["name"], TensorSpec(np.dtype(getattr(ml_dtypes, d["dtype"], d["dtype"])),
                                           tuple(d["shape"]))) for d in items]
        data = json.loads(text)
        return cls(dec(data["inputs"]), dec(data["outputs"]))


@dataclass
class LoweredModule:
    """An MLIR module with its context. Use `with lowered.context:` to touch the IR."""

    context: ir.Context
    module: ir.Module
    signature: Signature
    func_name: str = "main"
    notes: dict = field(default_factory=dict)

    def text(self, debug_info: bool = False) -> str:
        with self.context:
            return self.module.operation.get_asm(enable_debug_info=debug_info)

    def bytecode(self) -> bytes:
        import io
        buf = io.BytesIO()
        with self.context:
            self.module.operation.write_bytecode(buf)
        return buf.getvalue()

    def verify(self) -> None:
        verify_module(self.context, self.module)


def verify_module(context: ir.Context, module: ir.Module) -> None:
    """Verify, turning MLIR diagnostics into a LoweringError that names graph nodes."""
    with context:
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            details = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics) or str(e)
            raise LoweringError(f"generated StableHLO failed verification: {details}") from None


class _FunctionBuilder:
    def __init__(self, graph: Graph, specs: dict, inputs: list[TensorRef]):
        self.graph = graph
        self.specs = specs
        self.values: dict[TensorRef, ir.Value] = {}
        self.inputs = set(inputs)
        self.node_outputs = outputs_by_node(specs)

    def is_constant(self, name: str) -> bool:
        outs = self.node_outputs.get(name, [])
        return bool(outs) and all(s.value is not None for s in outs)

    def value(self, ref: TensorRef) -> ir.Value:
        v = self.values.get(ref)
        if v is None:
            spec = self.specs[ref]
            if spec.value is None:
                node = self.graph.nodes[ref.node]
                raise LoweringError(f"tensor '{ref}' ({node.op}) has no value: it is neither "
                                    f"computed nor an input of the function")
            with ir.Location.name(ref.node):
                v = hlo.constant(spec.value, spec.dtype)
            self.values[ref] = v
        return v

    def lower_node(self, name: str) -> None:
        node = self.graph.nodes[name]
        entry = registry.lookup(node.op)
        in_specs = [self.specs[r] for r in node.inputs]
        out_specs = self.node_outputs.get(name, [])
        ctx = registry.OpContext(node, in_specs, out_specs)
        operands = [None if i in entry.const_inputs else self.value(r)
                    for i, r in enumerate(node.inputs)]
        with ir.Location.name(name):
            try:
                results = registry.as_list(entry.lower(ctx, *operands))
            except (TypeError, ValueError, ir.MLIRError) as e:
                raise LoweringError(f"node '{name}' ({node.op}): lowering failed: {e}") from e
        for i, (v, spec) in enumerate(zip(results, out_specs)):
            if v is None:
                continue
            want = hlo.tensor_type(spec.shape, spec.dtype)
            if v.type != want:
                raise LoweringError(f"node '{name}' ({node.op}): output {i} lowered to {v.type}, "
                                    f"inferred {want}")
            self.values[TensorRef(name, i)] = v


def needed_nodes(graph: Graph, inputs: list[TensorRef], outputs: list[TensorRef]) -> list[str]:
    """Nodes on a data path to `outputs`, not looking past `inputs`, in topological order."""
    cut = set(inputs)
    seen, todo = set(), [r.node for r in outputs if r not in cut]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(r.node for r in graph.nodes[name].inputs if r not in cut)
    return [n for n in graph.order if n in seen]


def lower_to_stablehlo(graph: Graph, specs: dict, inputs: list[TensorRef], outputs: list[TensorRef],
                       *, func_name: str = "main", module_name: str = "hlobridge",
                       context: ir.Context | None = None) -> LoweredModule:
    """Build `func.func @func_name(inputs) -> outputs` in a new module and verify it."""
    nodes = needed_nodes(graph, inputs, outputs)
    builder = _FunctionBuilder(graph, specs, inputs)
    unsupported = [(n, graph.nodes[n].op) for n in nodes
                   if not registry.lookup(graph.nodes[n].op).compiles and not builder.is_constant(n)]
    if unsupported:
        raise UnsupportedOpsError(unsupported, "compile")
    for ref in inputs:
        if not specs[ref].is_static:
            raise LoweringError(f"input '{ref}' has unknown shape {specs[ref]}; give its dimensions "
                                f"with --input-shape {ref}=d0,d1,...")
        if dtypes.mlir_name(specs[ref].dtype) is None:
            raise LoweringError(f"input '{ref}' has dtype {dtypes.name(specs[ref].dtype)}, "
                                f"which cannot be compiled")
    context = context or ir.Context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(f"module @{module_name} {{}}")
        in_types = [hlo.tensor_type(specs[r].shape, specs[r].dtype) for r in inputs]
        for r in outputs:
            if not specs[r].is_static:
                raise LoweringError(f"output '{r}' has unknown shape {specs[r]}")
        out_types = [hlo.tensor_type(specs[r].shape, specs[r].dtype) for r in outputs]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(func_name, ir.FunctionType.get(in_types, out_types))
        block = fn.add_entry_block()
        for ref, arg in zip(inputs, block.arguments):
            builder.values[ref] = arg
        with ir.InsertionPoint(block):
            for name in nodes:
                if builder.is_constant(name):
                    continue  # a constant: materialised where it is used
                builder.lower_node(name)
            hlo.return_([builder.value(r) for r in outputs])
        signature = Signature([(str(r), specs[r]) for r in inputs], [(str(r), specs[r]) for r in outputs])
        fn.attributes["iree.reflection"] = ir.DictAttr.get(
            {SIGNATURE_KEY: ir.StringAttr.get(signature.to_json())})
    lowered = LoweredModule(context, module, signature, func_name)
    lowered.verify()
    return lowered
