"""Variables a loop only reads, read once before it: a `While` whose loop variables include
resource handles that the body returns unchanged and only reads (`ReadVariableOp`) gets, for
each, one ReadVariableOp before the loop, and carries the value instead of the handle.

TF 2 captures a model's variables into a `tf.while_loop` as loop variables (keras-hub's
`generate()`: 21 handles beside the token ids and the KV cache). A handle is session state, so a
While that carries one cannot be clustered, and its whole body ran on reference kernels. XLA
compiles such loops by passing the variables in as resources; here the loop reads each value
once, which is the same thing when nothing writes the variable while the loop runs: the pass
rewrites a While only if no node of its body or condition does anything to a handle but read
it (an `AssignVariableOp` or optimizer update inside keeps the loop as it is). The hoisted read
takes the While's control inputs, so it still comes after the writes the loop would have seen;
consumers of the loop's handle outputs read the original handles.
"""

from __future__ import annotations

from hlobridge import dtypes
from hlobridge.frontend.functions import FunctionGraph, library_of, unique_name
from hlobridge.frontend.graph import FuncAttr, Graph, Node, TensorRef

WHILE_OPS = ("While", "StatelessWhile")


def hoist_loop_reads(graph: Graph) -> Graph:
    """The graph with read-only variables of its While loops read before each loop (or `graph`
    itself when no loop carries one)."""
    loops = [n for n in graph.nodes.values() if n.op in WHILE_OPS
             and any(t == dtypes.RESOURCE for t in n.attrs.get("T", []))]
    if not loops:
        return graph
    library = library_of(graph)
    nodes = dict(graph.nodes)
    changed = False
    for loop in loops:
        changed |= _Hoist(nodes, loop, library).run()
    return Graph(nodes.values(), graph.library, graph.source, library) if changed else graph


class _Hoist:
    def __init__(self, nodes: dict, loop: Node, library):
        self.nodes, self.loop, self.library = nodes, loop, library
        self.body, self.cond = library.get(loop.attrs["body"]), library.get(loop.attrs["cond"])

    def run(self) -> bool:
        types = list(self.loop.attrs["T"])
        hoisted = {i: dt for i in range(len(types)) if types[i] == dtypes.RESOURCE
                   and (dt := self._read_only(i)) is not None}
        if not hoisted or not self._no_other_state():
            return False
        loop = self.loop
        inputs = list(loop.inputs)
        for i in hoisted:  # consumers of a handle the loop returned read the handle it was given
            self._redirect(TensorRef(loop.name, i), inputs[i])
        for i, dtype in hoisted.items():
            read = unique_name(self.nodes, f"{loop.name}/hoisted_read_{i}")
            self.nodes[read] = Node(read, "ReadVariableOp", [inputs[i]], list(loop.control_inputs), loop.device,
                                    {"dtype": dtype})
            types[i], inputs[i] = dtype, TensorRef(read, 0)
        attrs = dict(loop.attrs, T=types, body=self._rewrite(self.body, hoisted), cond=self._rewrite(self.cond, hoisted))
        shapes = attrs.get("output_shapes")
        if shapes and len(shapes) == len(types):
            attrs["output_shapes"] = [None if i in hoisted else s for i, s in enumerate(shapes)]
        attrs.pop("_read_only_resource_inputs", None)
        self.nodes[loop.name] = Node(loop.name, loop.op, inputs, list(loop.control_inputs), loop.device, attrs)
        return True

    def _users(self, fn: FunctionGraph, arg: str) -> list[Node]:
        return [n for n in fn.graph.nodes.values() if any(r.node == arg for r in n.inputs)]

    def _read_only(self, i: int):
        """The variable's dtype if loop variable i is returned unchanged and only read, else None."""
        if self.body.rets[i] != TensorRef(self.body.args[i], 0):
            return None
        users = self._users(self.body, self.body.args[i]) + self._users(self.cond, self.cond.args[i])
        if not users or any(n.op != "ReadVariableOp" for n in users):
            return None
        kinds = {n.attrs["dtype"] for n in users}
        return kinds.pop() if len(kinds) == 1 else None

    def _no_other_state(self) -> bool:
        """No node of the body or condition takes a handle for anything but a read."""
        for fn in (self.body, self.cond):
            handles = {a for a, t in zip(fn.args, self.loop.attrs["T"]) if t == dtypes.RESOURCE}
            for n in fn.graph.nodes.values():
                if n.op != "ReadVariableOp" and any(r.node in handles for r in n.inputs):
                    return False
                if n.op.startswith(("Assign", "ResourceApply", "ResourceScatter", "ResourceSparse")):
                    return False
        return True

    def _rewrite(self, fn: FunctionGraph, hoisted: dict) -> FuncAttr:
        """`fn` with arguments `hoisted` taking values: their placeholders retyped, their reads
        Identities, registered in the library under a new name."""
        args = {fn.args[i]: dtype for i, dtype in hoisted.items()}
        nodes = []
        for n in fn.graph.nodes.values():
            if n.name in args:
                n = Node(n.name, n.op, [], [], n.device, dict(n.attrs, dtype=args[n.name], shape=None))
            elif n.op == "ReadVariableOp" and n.inputs and n.inputs[0].node in args:
                n = Node(n.name, "Identity", list(n.inputs), list(n.control_inputs), n.device,
                         {"T": args[n.inputs[0].node]})
            nodes.append(n)
        name = self.library.unique_name(f"{fn.name}_hoisted_reads")
        self.library.add(FunctionGraph(name, Graph(nodes, None, f"{fn.graph.source} (reads hoisted)", self.library),
                                       list(fn.args), list(fn.rets), list(fn.control_rets), fn.stateful))
        return FuncAttr(name, {})

    def _redirect(self, old: TensorRef, new: TensorRef) -> None:
        for name, n in list(self.nodes.items()):
            if any(r == old for r in n.inputs):
                self.nodes[name] = Node(n.name, n.op, [new if r == old else r for r in n.inputs],
                                        list(n.control_inputs), n.device, n.attrs, n.node_def)
