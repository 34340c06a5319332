"""The function library: FunctionDefs as graphs, and inlining of function calls.

TensorFlow 2 graphs keep their bodies in a FunctionDefLibrary: `PartitionedCall` and
`StatefulPartitionedCall` call a function by name, and functional control flow (`If`,
`While`, `Case`) names its branches and bodies the same way. Here

- `FunctionLibrary.get(name)` instantiates a FunctionDef as a `FunctionGraph`: a `Graph`
  whose arguments are Placeholder nodes (named after the FunctionDef's input args), plus
  the tensors it returns and the nodes it must run for effect (`control_ret`). Calls in
  the body are inlined on the way, so a body is one flat graph;
- `inline_calls(graph)` replaces every call node of a graph by the callee's body, as
  TensorFlow's function inliner does before XLA clustering: body nodes become
  `call/node`, and the call node itself becomes an `IdentityN` of the callee's results
  with control edges from its `control_ret` nodes, so that consumers of `call:i` and
  `^call` keep working and side effects (Assert) still run.

Running, inferring and lowering a body is not done here: the `ops.functions.Functions`
protocol (infer / call / lower) is implemented by analysis, the interpreter and lowering, each
built over a FunctionLibrary by whoever needs it.

FunctionDef bodies name tensors "node:output_arg:index"; the position of an output arg
among an op's outputs comes from the registry entry's `output_args` (ops with one
output arg need none), or from the callee's signature for calls of library functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes
from ..errors import GraphError
from .graph import FuncAttr, Graph, Node, TensorRef, decode_attr
from ..ops import registry

CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
# Attributes a call passes on to the nodes of the body it inlines: placement and jit marks.
_INHERITED = ("_XlaCompile", "_XlaScope")


@dataclass
class FunctionGraph:
    """A function body as a graph: `args` are Placeholder nodes in argument order, `rets` the
    returned tensors, `control_rets` the nodes that must run for their effects."""

    name: str
    graph: Graph
    args: list[str]
    rets: list[TensorRef]
    control_rets: list[str] = field(default_factory=list)
    stateful: bool = False

    def targets(self) -> list[str]:
        """The nodes a call of this function runs: what the results and effects need."""
        return sorted(self.graph.prune([r.node for r in self.rets] + self.control_rets))


def unique_name(taken, base: str) -> str:
    """`base`, or `base_N` with the first N not in `taken` (names of nodes or functions)."""
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    return name


class FunctionLibrary:
    """The FunctionDefs of a graph, instantiated on demand, plus functions built in Python
    (functionalized v1 control flow registers its loop bodies here)."""

    def __init__(self, library=None):
        self.defs = {f.signature.name: f for f in (library.function if library is not None else [])}
        self._graphs: dict[str, FunctionGraph] = {}
        self._instantiating: list[str] = []

    def __contains__(self, name: str) -> bool:
        return name in self.defs or name in self._graphs

    def add(self, fn: FunctionGraph) -> None:
        """Register a function built in Python (a functionalized loop body or branch)."""
        if fn.name in self:
            raise GraphError(f"function '{fn.name}' defined twice")
        self._graphs[fn.name] = fn

    def unique_name(self, base: str) -> str:
        """A function name not yet taken in this library."""
        return unique_name(self, base)

    def get(self, name: str | FuncAttr) -> FunctionGraph:
        """The function as a FunctionGraph, instantiated (and its calls inlined) on first use."""
        name = name.name if isinstance(name, FuncAttr) else name
        fn = self._graphs.get(name)
        if fn is None:
            if name not in self.defs:
                raise GraphError(f"function '{name}' is not in the graph's function library")
            if name in self._instantiating:
                raise GraphError(f"function '{name}' calls itself ({' -> '.join(self._instantiating)}); "
                                 f"recursive functions are not supported")
            self._instantiating.append(name)
            try:
                fn = self._graphs[name] = self._instantiate(self.defs[name])
            finally:
                self._instantiating.pop()
        return fn

    def output_count(self, name: str) -> int:
        """How many results the function returns."""
        return len(self.defs[name].signature.output_arg) if name in self.defs else len(self.get(name).rets)

    # -- instantiation ---------------------------------------------------------------------------
    def _instantiate(self, fdef) -> FunctionGraph:
        sig = fdef.signature
        where = f"function '{sig.name}'"
        args = []
        nodes = []
        for i, arg in enumerate(sig.input_arg):
            if arg.number_attr or arg.type_list_attr or not arg.type:
                raise GraphError(f"{where}: input arg '{arg.name}' is a list or has a type attr; "
                                 f"only plainly typed arguments are supported")
            shape = _arg_shape(fdef, i)
            attrs = {"dtype": dtypes.from_enum(arg.type), "shape": shape}
            nodes.append(Node(arg.name, "Placeholder", [], [], "", attrs))
            args.append(arg.name)
        ops_of = {nd.name: nd.op for nd in fdef.node_def}
        for nd in fdef.node_def:
            inputs, controls = [], []
            for name in nd.input:
                if name.startswith("^"):
                    controls.append(name[1:])
                else:
                    inputs.append(self._body_ref(name, ops_of, where, nd.name))
            attrs = {k: decode_attr(v, f"{where} node '{nd.name}' attr '{k}'") for k, v in nd.attr.items()}
            nodes.append(Node(nd.name, nd.op, inputs, controls, nd.device, attrs, nd))
        graph = Graph(nodes, None, where, self)
        rets = [self._body_ref(fdef.ret[a.name], ops_of, where, f"return '{a.name}'")
                if a.name in fdef.ret else _missing_ret(where, a.name) for a in sig.output_arg]
        control_rets = [fdef.control_ret[c] if c in fdef.control_ret else _missing_ret(where, c)
                        for c in sig.control_output]
        missing = [str(r) for r in rets if r.node not in graph.nodes] + \
            [f"^{c}" for c in control_rets if c not in graph.nodes]
        if missing:
            raise GraphError(f"{where}: returns {', '.join(missing)}, but the body has no such node")
        fn = FunctionGraph(sig.name, graph, args, rets, control_rets, sig.is_stateful)
        return inline_function_calls(fn, self)

    def _body_ref(self, name: str, ops_of: dict, where: str, user: str) -> TensorRef:
        """'x' (an argument), 'node:out_arg:i' or 'node:i' -> TensorRef."""
        parts = name.split(":")
        if len(parts) == 1:
            return TensorRef(name, 0)
        if not parts[-1].isdigit() or len(parts) > 3:
            raise GraphError(f"{where}: '{user}' reads '{name}', which is not 'node:output_arg:index'")
        if len(parts) == 2:
            return TensorRef(parts[0], int(parts[1]))
        node, out_arg, index = parts[0], parts[1], int(parts[2])
        op = ops_of.get(node)
        if op is None:
            raise GraphError(f"{where}: '{user}' reads '{name}', but the body has no node '{node}'")
        return TensorRef(node, self._output_offset(op, out_arg, where, name) + index)

    def _output_offset(self, op: str, out_arg: str, where: str, name: str) -> int:
        if op in self.defs:
            names = [a.name for a in self.defs[op].signature.output_arg]
        else:
            entry = registry.lookup(op)
            names = list(entry.output_args) if entry is not None else []
        if not names:
            return 0  # one output arg (possibly a list): the index is the position
        if out_arg not in names:
            raise GraphError(f"{where}: '{name}': op {op} has no output arg '{out_arg}' "
                             f"(it has {', '.join(names)})")
        return names.index(out_arg)


def _arg_shape(fdef, i: int):
    """The argument's shape from its `_output_shapes` arg_attr, when TensorFlow wrote one."""
    attrs = fdef.arg_attr[i].attr if i in fdef.arg_attr else {}
    if "_output_shapes" in attrs:
        shapes = decode_attr(attrs["_output_shapes"], f"function '{fdef.signature.name}' arg {i}")
        if isinstance(shapes, list) and len(shapes) == 1:
            return shapes[0]
    return None


def _missing_ret(where: str, name: str):
    raise GraphError(f"{where}: output '{name}' has no entry in the function's ret map")


def _is_call(node: Node, library: FunctionLibrary) -> bool:
    return node.op in CALL_OPS or node.op in library


def _callee(node: Node) -> str:
    if node.op in CALL_OPS:
        f = node.attrs.get("f")
        if not isinstance(f, FuncAttr):
            raise GraphError(f"node '{node.name}' ({node.op}) has no function attribute 'f'")
        return f.name
    return node.op


def _inline_nodes(nodes: list[Node], library: FunctionLibrary, source: str) -> list[Node] | None:
    """`nodes` with every call replaced by the callee's body; None when there is no call."""
    if not any(_is_call(n, library) for n in nodes):
        return None
    out: list[Node] = []
    for node in nodes:
        if not _is_call(node, library):
            out.append(node)
            continue
        fn = library.get(_callee(node))
        if len(node.inputs) != len(fn.args):
            raise GraphError(f"{source}: node '{node.name}' calls '{fn.name}' with {len(node.inputs)} "
                             f"input(s); it takes {len(fn.args)}")
        out.extend(_body_nodes(node, fn))
    return out


def _body_nodes(call: Node, fn: FunctionGraph) -> list[Node]:
    """The callee's body renamed under the call's name, reading the call's inputs, and the
    call node itself as an IdentityN of the results (or a NoOp when there are none)."""
    prefix = f"{call.name}/"
    arg_refs = dict(zip(fn.args, call.inputs))
    needed = set(fn.targets())
    inherited = {k: call.attrs[k] for k in _INHERITED if k in call.attrs}
    if call.attrs.get("_XlaMustCompile"):  # tf.function(jit_compile=True)
        inherited["_XlaCompile"] = True

    def ref(r: TensorRef) -> TensorRef:
        return arg_refs[r.node] if r.node in arg_refs else TensorRef(prefix + r.node, r.index)

    body = []
    for name in fn.graph.order:
        if name in arg_refs or name not in needed:
            continue
        n = fn.graph.nodes[name]
        controls = [arg_refs[c].node if c in arg_refs else prefix + c for c in n.control_inputs]
        # the call's control inputs hold back the whole body: give them to its sources
        if not n.inputs and not n.control_inputs:
            controls += call.control_inputs
        attrs = {**n.attrs, **inherited}
        body.append(Node(prefix + name, n.op, [ref(r) for r in n.inputs], controls,
                         n.device or call.device, attrs, n.node_def))
    effects = [prefix + c for c in fn.control_rets]
    if fn.rets:
        result = Node(call.name, "IdentityN", [ref(r) for r in fn.rets], effects + call.control_inputs,
                      call.device, {})
    else:
        result = Node(call.name, "NoOp", [], effects + call.control_inputs, call.device, {})
    return body + [result]


def inline_function_calls(fn: FunctionGraph, library: FunctionLibrary) -> FunctionGraph:
    """The function with every call in its body replaced by the callee's body."""
    nodes = _inline_nodes(list(fn.graph.nodes.values()), library, fn.graph.source)
    if nodes is None:
        return fn
    graph = Graph(nodes, None, fn.graph.source, library)
    return FunctionGraph(fn.name, graph, fn.args, fn.rets, fn.control_rets, fn.stateful)


def inline_calls(graph: Graph) -> Graph:
    """The graph with every PartitionedCall / StatefulPartitionedCall / library-function op
    replaced by the callee's body (recursively). Returns `graph` itself when it has none."""
    library = library_of(graph)
    nodes = _inline_nodes(list(graph.nodes.values()), library, graph.source)
    if nodes is None:
        return graph
    return Graph(nodes, graph.library, graph.source, library)


def library_of(graph: Graph) -> FunctionLibrary:
    """The graph's FunctionLibrary; for a graph built without one (a test's hand-made graph),
    one over its FunctionDef protos, made anew on each call."""
    if graph.function_library is not None:
        return graph.function_library
    return FunctionLibrary(graph.library)
