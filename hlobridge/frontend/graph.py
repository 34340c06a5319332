"""The graph hlobridge works on: nodes, data and control edges, decoded attributes.

A `Graph` is built once (by `frontend/load.py` from a GraphDef, or by a pass) and then
treated as read-only by later stages. Tensor names are normalised: "x" and "x:0" are the
same tensor, "^x" is a control edge. It holds its function library, as the FunctionDef
protos (for dumps) and as the `FunctionLibrary` its builder gave it, and answers queries;
it runs no pass and imports none.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from .. import dtypes
from ..analysis.graph_algorithms import reachable
from ..errors import GraphError
from ..ops.kinds import PLACEHOLDERS
from . import tensor_proto
from .proto import schema


class TensorRef(NamedTuple):
    """Output `index` of node `node`: TensorFlow's "node:index"."""

    node: str
    index: int = 0

    def __str__(self) -> str:
        return f"{self.node}:{self.index}"

    @classmethod
    def parse(cls, name: str) -> "TensorRef":
        """'x' -> x:0, 'x:2' -> x:2. Raises GraphError on a control input ('^x')."""
        if name.startswith("^"):
            raise GraphError(f"'{name}' is a control input, not a tensor")
        node, sep, idx = name.rpartition(":")
        if sep and idx.isdigit():
            return cls(node, int(idx))
        return cls(name, 0)


@dataclass
class Node:
    """One NodeDef, decoded: inputs as TensorRefs, control inputs by name, attrs as Python values."""

    name: str
    op: str
    inputs: list[TensorRef]
    control_inputs: list[str]
    device: str
    attrs: dict
    node_def: object = field(repr=False, default=None)

    def attr(self, name: str, default=None):
        """The decoded attribute, or `default` when the node has none of that name."""
        return self.attrs.get(name, default)


@dataclass(frozen=True)
class FuncAttr:
    """A `func` attribute: the function's name and its instantiation attrs."""

    name: str
    attrs: dict


def decode_attr(value, where: str):
    """AttrValue -> a Python value (int, float, bool, str/bytes, dtype, shape tuple, array, list)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        try:
            return value.s.decode("utf-8")
        except UnicodeDecodeError:
            return value.s
    if kind in ("i", "f", "b", "placeholder"):
        return getattr(value, kind)
    if kind == "type":
        return dtypes.from_enum(value.type)
    if kind == "shape":
        return tensor_proto.shape_from_proto(value.shape)
    if kind == "tensor":
        return tensor_proto.to_numpy(value.tensor, where)
    if kind == "func":
        return FuncAttr(value.func.name, {k: decode_attr(v, where) for k, v in value.func.attr.items()})
    lst = value.list
    for name in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(lst, name)
        if len(items):
            wrapped = []
            for item in items:
                holder = schema.AttrValue()
                if name in ("shape", "tensor", "func"):
                    getattr(holder, name).CopyFrom(item)
                else:
                    setattr(holder, name, item)
                wrapped.append(decode_attr(holder, where))
            return wrapped
    return []


def node_from_def(nd) -> Node:
    """A NodeDef proto as a Node (inputs parsed, attrs decoded; errors name the node)."""
    inputs, controls = [], []
    for name in nd.input:
        if name.startswith("^"):
            controls.append(name[1:])
        else:
            if controls:
                raise GraphError(f"node '{nd.name}': data input '{name}' after a control input")
            inputs.append(TensorRef.parse(name))
    attrs = {k: decode_attr(v, f"node '{nd.name}' attr '{k}'") for k, v in nd.attr.items()}
    return Node(nd.name, nd.op, inputs, controls, nd.device, attrs, nd)


class Graph:
    """Nodes by name, in GraphDef order, with consumer lists and a topological order.

    `library` is the FunctionDefLibrary proto (dumps write it back); `function_library` the
    `frontend.functions.FunctionLibrary` that instantiates it, given by whoever builds the
    graph (None for a graph without functions: `functions.library_of` makes an empty one).
    """

    def __init__(self, nodes: Iterable[Node], library=None, source: str = "<graph>",
                 function_library=None):
        self.source = source
        self.nodes: dict[str, Node] = {}
        for n in nodes:
            if not n.name:
                raise GraphError(f"{source}: a node has an empty name (op '{n.op}')")
            if n.name in self.nodes:
                raise GraphError(f"{source}: duplicate node name '{n.name}'")
            self.nodes[n.name] = n
        self.library = library if library is not None else schema.FunctionDefLibrary()
        self.functions = {f.signature.name: f for f in self.library.function}
        self.function_library = function_library
        self._check_edges()
        self.order = self._topological_order()

    def _check_edges(self) -> None:
        missing = []
        for n in self.nodes.values():
            for ref in n.inputs:
                if ref.node not in self.nodes:
                    missing.append(f"node '{n.name}' ({n.op}) reads '{ref}', but no node "
                                   f"'{ref.node}' exists")
            for c in n.control_inputs:
                if c not in self.nodes:
                    missing.append(f"node '{n.name}' ({n.op}) has control input '^{c}', but no "
                                   f"node '{c}' exists")
        if missing:
            raise GraphError(f"{self.source}: " + "; ".join(missing[:10]) +
                             (f"; and {len(missing) - 10} more" if len(missing) > 10 else ""))

    def _topological_order(self) -> list[str]:
        """Kahn's algorithm. Edges out of NextIteration are back edges of v1 loops (as in TF)."""
        indeg = {name: 0 for name in self.nodes}
        self.consumers: dict[str, list[str]] = {name: [] for name in self.nodes}
        for n in self.nodes.values():
            preds = {r.node for r in n.inputs} | set(n.control_inputs)
            for p in preds:
                self.consumers[p].append(n.name)
                if self.nodes[p].op not in ("NextIteration", "RefNextIteration"):
                    indeg[n.name] += 1
        ready = deque(name for name, d in indeg.items() if d == 0)
        order = []
        while ready:
            name = ready.popleft()
            order.append(name)
            if self.nodes[name].op in ("NextIteration", "RefNextIteration"):
                continue
            for c in self.consumers[name]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    ready.append(c)
        if len(order) != len(self.nodes):
            stuck = [n for n, d in indeg.items() if d > 0]
            cycle = self._find_cycle(set(stuck))
            raise GraphError(f"{self.source}: the graph has a cycle: {' -> '.join(cycle)}")
        return order

    def _find_cycle(self, among: set[str]) -> list[str]:
        """One cycle within `among`, for the error message."""
        start = min(among)
        path, seen, node = [], {}, start
        while node not in seen:
            seen[node] = len(path)
            path.append(node)
            n = self.nodes[node]
            preds = [r.node for r in n.inputs] + n.control_inputs
            node = next(p for p in preds if p in among and
                        self.nodes[p].op not in ("NextIteration", "RefNextIteration"))
        cyc = path[seen[node]:] + [node]
        return list(reversed(cyc))

    # -- queries ----------------------------------------------------------------------
    def node(self, name: str) -> Node:
        """The node of that name; a GraphError naming the graph if there is none."""
        try:
            return self.nodes[name]
        except KeyError:
            raise GraphError(f"no node named '{name}' in {self.source}") from None

    def tensor(self, name: str | TensorRef) -> TensorRef:
        """Resolve a user's tensor name ('x', 'x:0') to a TensorRef of an existing node."""
        ref = name if isinstance(name, TensorRef) else TensorRef.parse(name)
        self.node(ref.node)
        return ref

    def placeholders(self) -> list[str]:
        """The nodes that must be fed (Placeholder, PlaceholderV2), in topological order."""
        return [n for n in self.order if self.nodes[n].op in PLACEHOLDERS]

    def sinks(self) -> list[str]:
        """Nodes nobody consumes, in GraphDef order."""
        return [n for n in self.nodes if not self.consumers[n]]

    def data_sinks(self) -> list[str]:
        """Nodes whose outputs no node reads as data (control edges do not count)."""
        read = {r.node for n in self.nodes.values() for r in n.inputs}
        return [n for n in self.nodes if n not in read]

    def ancestors(self, targets: Iterable[str], stop: Iterable[str] = ()) -> set[str]:
        """Every node `targets` depend on (data and control), not looking past `stop`."""
        stop = set(stop)
        return reachable(targets, lambda name: [] if name in stop else self.predecessors(name))

    def prune(self, targets: Iterable[str], feeds: Iterable[TensorRef] = ()) -> set[str]:
        """The nodes a run of `targets` executes: their data and control ancestors, where a
        fed tensor cuts the edge it feeds (TF's per-call graph pruning)."""
        cut = set(feeds)
        return reachable(targets, lambda name: [r.node for r in self.nodes[name].inputs if r not in cut] +
                         self.nodes[name].control_inputs)

    def predecessors(self, name: str) -> list[str]:
        """The nodes `name` reads (data) or waits for (control)."""
        node = self.nodes[name]
        return [r.node for r in node.inputs] + node.control_inputs

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"<Graph {self.source}: {len(self.nodes)} nodes, {len(self.functions)} functions>"

