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

import io
from dataclasses import dataclass, field

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import func

from hlobridge.dialects import stablehlo as hlo
from hlobridge.dialects.dynamic_shapes import DynamicDimError, dim_sources, is_ranked

from .. import dtypes
from ..errors import HlobridgeError, LoweringError, UnsupportedOpsError
from ..frontend.graph import Graph, TensorRef
from ..ops import registry, typesets
from ..ops.helpers import list_facts
from ..ops.traced import Traced
from ..analysis.graph_algorithms import reachable
from ..analysis.shape_inference import FunctionShapes, infer_specs, outputs_by_node
from ..frontend.functions import library_of
from ..spec import TensorSpec
from hlobridge.passes.ir.reduce_precision import KEEP_F32, KERAS_F32_OPS
from .signature import SIGNATURE_KEY, VARIABLE_SUFFIX, Signature

@dataclass
class LoweredModule:
    """An MLIR module with its context. Use `with lowered.context:` to touch the IR."""

    context: ir.Context
    module: ir.Module
    signature: Signature
    func_name: str = "main"
    resource_args: list = field(default_factory=list)  # variables read: trailing arguments
    written: list = field(default_factory=list)  # variables written: trailing results
    notes: dict = field(default_factory=dict)

    def text(self, debug_info: bool = False) -> str:
        """The module as MLIR text (with locations when `debug_info`)."""
        with self.context:
            return self.module.operation.get_asm(enable_debug_info=debug_info)

    def bytecode(self) -> bytes:
        """The module as MLIR bytecode."""
        buf = io.BytesIO()
        with self.context:
            self.module.operation.write_bytecode(buf)
        return buf.getvalue()

    def verify(self) -> None:
        """Raise a LoweringError naming graph nodes if the module does not verify."""
        verify_module(self.context, self.module)

    def rename(self, names: dict[str, str]) -> None:
        """Give inputs and outputs public names (tensor name -> name, e.g. a SavedModel signature's
        keys) in the signature and in the `iree.reflection` the .vmfb keeps."""
        def renamed(items):
            return [(names.get(n, n), spec) for n, spec in items]
        self.signature = Signature(renamed(self.signature.inputs), renamed(self.signature.outputs))
        with self.context:
            for op in self.module.body.operations:
                if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == self.func_name:
                    op.attributes["iree.reflection"] = ir.DictAttr.get(
                        {SIGNATURE_KEY: ir.StringAttr.get(self.signature.to_json())})


def verify_module(context: ir.Context, module: ir.Module) -> None:
    """Verify, turning MLIR diagnostics into a LoweringError that names graph nodes."""
    with context:
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            details = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics) or str(e)
            raise LoweringError(f"generated StableHLO failed verification: {details}") from None


class ResourceAccess:
    """A node's view of the variables its lowering reads and writes (its `ctx.state`).

    A variable's value is read from a function argument on its first read; a write
    replaces the current value, and the function returns the final value of every
    variable it wrote. Reads and writes see each other in the order the nodes lower,
    which is the graph's topological order (control edges included).
    """

    def __init__(self, builder: "_FunctionBuilder", node):
        self.builder = builder
        self.node = node

    def read(self, i: int) -> Traced:
        """The current value of the variable at input i."""
        ref = self.node.inputs[i]
        return Traced(self.builder.read_resource(ref), self.builder.resource_spec(ref).dtype)

    def write(self, i: int, value) -> None:
        """Make `value` the variable's current value (and a result of the function)."""
        self.builder.write_resource(self.node.inputs[i], value.value if isinstance(value, Traced) else value)


class FunctionLowering:
    """`ctx.functions` (ops.calls.Functions) for lowering rules: a called function's body,
    built at the current insertion point (inside a stablehlo.case / while region) from the
    given operands. `shapes` (any ops.calls.Functions: shape inference's, or the interpreter's,
    which also folds) infers bodies; lowering runs none."""

    def __init__(self, library, shapes=None, target: str = "llvm-cpu", keep_f32: bool = False):
        self.library = library
        self.shapes = shapes if shapes is not None else FunctionShapes(library)
        self.target = target  # the IREE target the bodies are lowered for (OpContext.target)
        self.keep_f32 = keep_f32  # mark KERAS_F32_OPS' ops (see _FunctionBuilder)

    def infer(self, name, in_specs):
        """The specs of the function's results."""
        return self.shapes.infer(name, in_specs)

    def call(self, name, args: list) -> list:
        """Folding through a body, as shape inference's `functions` does it."""
        return self.shapes.call(name, args)

    def lower(self, name, operands: list, in_specs: list) -> list:
        """The function's body lowered on `operands`; its result values."""
        fn = self.library.get(name)
        feeds = {TensorRef(a, 0): TensorSpec(s.dtype, s.shape, handle=list_facts(s)) for a, s in zip(fn.args, in_specs)}
        needed = set(fn.targets())
        specs = infer_specs(fn.graph, needed, feeds, self.shapes)
        builder = _FunctionBuilder(fn.graph, specs, list(feeds), functions=self, target=self.target,
                                   keep_f32=self.keep_f32)
        nodes = [n for n in fn.graph.order if n in needed and n not in fn.args]
        unsupported = [(n, fn.graph.nodes[n].op) for n in nodes
                       if not registry.lookup(fn.graph.nodes[n].op).compiles and not builder.is_constant(n)]
        if unsupported:
            raise UnsupportedOpsError([(f"{fn.name}/{n}", op) for n, op in unsupported])
        for ref, v in zip(feeds, operands):
            builder.values[ref] = v
        for name in nodes:
            if not builder.is_constant(name):
                builder.lower_node(name)
        # a resource (a TensorArray's handle returned by a loop body) is no Value: rules get None
        return [None if specs[r].dtype == dtypes.RESOURCE else builder.value(r) for r in fn.rets]


class _FunctionBuilder:
    """Builds one func.func: values per tensor, variables read and written, one node at a time."""

    def __init__(self, graph: Graph, specs: dict, inputs: list[TensorRef], resources=(),
                 functions: FunctionLowering | None = None, target: str = "llvm-cpu", keep_f32: bool = False):
        self.graph = graph
        self.functions = functions if functions is not None else FunctionLowering(library_of(graph), target=target)
        self.target = target
        # mark the ops of KERAS_F32_OPS nodes KEEP_F32, for a precision pass to leave in f32
        self.keep_f32 = keep_f32
        self.specs = specs
        self.values: dict[TensorRef, ir.Value] = {}
        self.inputs = set(inputs)
        self.node_outputs = outputs_by_node(specs)
        self.resources = set(resources)
        self.resource_values: dict[TensorRef, ir.Value] = {}
        self.resource_args: list[TensorRef] = []  # in order of first read
        self.written: list[TensorRef] = []  # in order of first write
        self.block: ir.Block | None = None

    def resource_spec(self, ref: TensorRef) -> TensorSpec:
        """The variable's value spec: a handle's (dtype, shape), or a ref variable's own spec."""
        spec = self.specs[ref]
        if spec.dtype == dtypes.RESOURCE:
            dtype, shape = spec.handle
            return TensorSpec(dtype, shape)
        return spec

    def read_resource(self, ref: TensorRef) -> ir.Value:
        if ref not in self.resources:
            raise LoweringError(f"'{ref}' is read as a variable but is not one of the function's "
                                f"resource inputs")
        v = self.resource_values.get(ref)
        if v is None:
            spec = self.resource_spec(ref)
            if not spec.is_static:
                raise LoweringError(f"variable '{ref}' has unknown shape {spec}")
            v = self.block.add_argument(hlo.tensor_type(spec.shape, spec.dtype),
                                        ir.Location.name(ref.node))
            self.resource_values[ref] = v
            self.resource_args.append(ref)
        return v

    def write_resource(self, ref: TensorRef, value: ir.Value) -> None:
        spec = self.resource_spec(ref)
        want = hlo.tensor_type(spec.shape, spec.dtype)
        if value.type != want:
            raise LoweringError(f"write of {value.type} to variable '{ref}' of type {want}")
        self.resource_values[ref] = value
        if ref not in self.written:
            self.written.append(ref)

    def is_constant(self, name: str) -> bool:
        outs = self.node_outputs.get(name, [])
        return bool(outs) and all(s.value is not None for s in outs)

    def value(self, ref: TensorRef) -> ir.Value:
        if ref in self.resources:  # a ref variable used as a value: its current value
            return self.read_resource(ref)
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

    def operand(self, entry, i: int, ref: TensorRef):
        """What a lowering rule gets for input i: a Value, or None for compile-time constants
        and variables taken by reference (the rule reaches those through ctx). A constant input
        whose value is not known (inside a loop body) that the rule can take at
        run time (`dynamic_inputs`: Slice's begin, a dynamic_slice) gets it as a Value."""
        if i in entry.const_inputs and not (i in entry.dynamic_inputs and self.specs[ref].value is None):
            return None
        if self.specs[ref].dtype == dtypes.RESOURCE:
            return None
        if ref in self.resources and i in entry.ref_inputs:
            return None
        return self.value(ref)

    def lower_node(self, name: str) -> None:
        """Emit the node's StableHLO at the insertion point. Whatever goes wrong inside a rule
        (a node it was not written for) is a LoweringError naming the node."""
        node = self.graph.nodes[name]
        try:
            self._lower_node(name, node)
        except HlobridgeError:
            raise
        except DynamicDimError as e:
            raise LoweringError(dynamic_dim_message(self.graph, name, self.specs, e)) from None
        except Exception as e:  # noqa: BLE001  (TypeError, ValueError, MLIRError, IndexError, ...)
            raise LoweringError(f"node '{name}' ({node.op}): lowering failed: {e or type(e).__name__}") from e

    def _lower_node(self, name: str, node) -> None:
        entry = registry.lookup(node.op)
        in_specs = [self.specs[r] for r in node.inputs]
        out_specs = self.node_outputs.get(name, [])
        ctx = registry.OpContext(node, in_specs, out_specs, ResourceAccess(self, node), self.functions,
                                 target=self.target)
        if not entry.stateful and out_specs and all(s.is_static and s.num_elements == 0 for s in out_specs):
            with ir.Location.name(name):  # every empty tensor is the same: no rule needs to handle them
                for i, spec in enumerate(out_specs):
                    self.values[TensorRef(name, i)] = hlo.constant(np.zeros(spec.shape, spec.dtype), spec.dtype)
            return
        undeclared = typesets.undeclared_dtype(entry, node)
        if undeclared:
            raise LoweringError(f"node '{name}' ({node.op}): {undeclared}")
        with ir.Location.name(name):
            operands = [self.operand(entry, i, r) for i, r in enumerate(node.inputs)]
            block = ir.InsertionPoint.current.block if self.keep_f32 and node.op in KERAS_F32_OPS else None
            before = {o.operation for o in block.operations} if block is not None else None
            with dim_sources(operands):  # where a `?` of a result can be sized (dynamic_shapes.py)
                results = registry.as_list(entry.lower(ctx, *operands))
            if block is not None:
                _mark(o.operation for o in block.operations if o.operation not in before)
        for i, (v, spec) in enumerate(zip(results, out_specs)):
            if v is None:
                continue
            if spec.dtype == dtypes.VARIANT:  # a TensorList: an ops.lists.values.ListValue, not one Value
                self.values[TensorRef(name, i)] = v
                continue
            want = hlo.tensor_type(spec.shape, spec.dtype)
            if v.type != want and not _refines(v.type, want):
                raise LoweringError(f"node '{name}' ({node.op}): output {i} lowered to {v.type}, "
                                    f"inferred {want}")
            self.values[TensorRef(name, i)] = v


def _refines(got: ir.Type, want: ir.Type) -> bool:
    """Whether `got` is `want` with some `?` dimensions known (a rule saw more than inference)."""
    if not (is_ranked(got) and is_ranked(want)):
        return False
    g, w = ir.RankedTensorType(got), ir.RankedTensorType(want)
    return (g.element_type == w.element_type and g.rank == w.rank
            and all(w.is_dynamic_dim(i) or g.shape[i] == w.shape[i] for i in range(g.rank)))


def dynamic_dim_message(graph: Graph, name: str, specs: dict, error: Exception) -> str:
    """The one-line error of a node that cannot take a dynamic dimension (reason code
    `dynamic_dim_unsupported`): the node, the dynamic input it reads, and the fix."""
    node = graph.nodes[name]
    dynamic = [str(r) for r in node.inputs if r in specs and specs[r].shape is not None
               and not specs[r].is_static]
    reads = f" (reads {', '.join(dynamic)})" if dynamic else ""
    return (f"node '{name}' ({node.op}) cannot take a dynamic dimension{reads} "
            f"[dynamic_dim_unsupported]: {error}; give the graph input's size with --input-shape NAME=d0,d1,...")


def _mark(ops) -> None:
    """Mark `ops` and the ops inside them KEEP_F32."""
    def visit(op):
        op.attributes[KEEP_F32] = ir.UnitAttr.get()
        return ir.WalkResult.ADVANCE
    for op in ops:
        op.walk(visit)


def needed_nodes(graph: Graph, inputs: list[TensorRef], outputs: list[TensorRef]) -> list[str]:
    """Nodes on a data path to `outputs`, not looking past `inputs`, in topological order."""
    cut = set(inputs)
    seen = reachable([r.node for r in outputs if r not in cut],
                     lambda name: [r.node for r in graph.nodes[name].inputs if r not in cut])
    return [n for n in graph.order if n in seen]


def lower_to_stablehlo(graph: Graph, specs: dict, inputs: list[TensorRef], outputs: list[TensorRef],
                       *, nodes: list[str] | None = None, resources=(), func_name: str = "main",
                       module_name: str = "hlobridge", context: ir.Context | None = None,
                       functions=None, target: str = "llvm-cpu", keep_f32: bool = False,
                       dynamic: bool = False) -> LoweredModule:
    """Build `func.func @func_name(inputs, variables read) -> (outputs, variables written)`
    in a new module, and verify it.

    `nodes` (default: everything `outputs` need) are lowered in graph order. `resources`
    are the tensors that stand for variables: resource handles, or ref variables; the
    function reads them as trailing arguments and returns the ones it writes after its
    outputs (`LoweredModule.resource_args` / `.written` say which). `functions` (what shape
    inference used: ops.calls.Functions) infers and folds the bodies of If/While/Case.
    `target` is the IREE target the rules lower for (registry.OpContext.target); `keep_f32`
    marks the ops that a reduced precision leaves in f32, as Keras does (passes/ir/reduce_precision.py).
    `dynamic` lets inputs and outputs keep unknown dimensions as `?` (docs/dynamic_shapes.md);
    without it an unknown dimension is an error asking for it.
    """
    nodes = needed_nodes(graph, inputs, outputs) if nodes is None else nodes
    builder = _FunctionBuilder(graph, specs, inputs, resources,
                               FunctionLowering(library_of(graph), functions, target, keep_f32), target, keep_f32)
    unsupported = [(n, graph.nodes[n].op) for n in nodes
                   if not registry.lookup(graph.nodes[n].op).compiles and not builder.is_constant(n)]
    if unsupported:
        raise UnsupportedOpsError(unsupported, "compile")
    for ref in inputs:
        if not specs[ref].is_static and not (dynamic and specs[ref].shape is not None):
            raise LoweringError(f"input '{ref}' has unknown shape {specs[ref]}; give its dimensions "
                                f"with --input-shape {ref}=d0,d1,...")
        if dtypes.mlir_name(specs[ref].dtype) is None:
            raise LoweringError(f"input '{ref}' has dtype {dtypes.name(specs[ref].dtype)}, "
                                f"which cannot be compiled")
    for r in outputs:
        if not specs[r].is_static and not (dynamic and specs[r].shape is not None):
            raise LoweringError(f"output '{r}' has unknown shape {specs[r]}")
    context = context or ir.Context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(f"module @{module_name} {{}}")
        in_types = [hlo.tensor_type(specs[r].shape, specs[r].dtype) for r in inputs]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(func_name, ir.FunctionType.get(in_types, []))
        block = builder.block = fn.add_entry_block()
        for ref, arg in zip(inputs, block.arguments):
            builder.values[ref] = arg
        with ir.InsertionPoint(block):
            for name in nodes:
                if builder.is_constant(name):
                    continue  # a constant: materialised where it is used
                builder.lower_node(name)
            results = [builder.value(r) for r in outputs]
            results += [builder.resource_values[r] for r in builder.written]
            hlo.return_(results)
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], [v.type for v in results]))
        variables = [(f"{r}{VARIABLE_SUFFIX}", builder.resource_spec(r)) for r in builder.resource_args]
        updated = [(f"{r}{VARIABLE_SUFFIX}", builder.resource_spec(r)) for r in builder.written]
        signature = Signature([(str(r), specs[r]) for r in inputs] + variables,
                              [(str(r), specs[r]) for r in outputs] + updated)
        fn.attributes["iree.reflection"] = ir.DictAttr.get(
            {SIGNATURE_KEY: ir.StringAttr.get(signature.to_json())})
    lowered = LoweredModule(context, module, signature, func_name,
                            resource_args=list(builder.resource_args), written=list(builder.written))
    lowered.verify()
    return lowered
