"""A cluster's compile-cache key, known before anything is lowered.

The cache's own key (compile/cache.py) hashes the StableHLO text, so finding a binary meant
lowering the cluster first: for ResNet-50 that is most of a warm start. This key hashes what
determines that text instead, so a hit skips lowering and IREE both:

- the cluster's nodes, in order: op, inputs, control inputs, device and every attr (constants
  by their bytes), and the functions they name (If/While bodies), the same way;
- its interface: tensor inputs and outputs in order, the dtype and shape of each input and the
  value of each input the cluster reads as a constant, the variables' specs;
- the compile options and the flags that shape lowering (limits);
- and, through CompileCache.key_of, hlobridge's own source (an edited checkout never reuses a
  stale binary), IREE's version, the flags and the host CPU.

Names do not count. A node is its position in the cluster, a tensor from outside it the
position of that input, and `_class` (colocation with named nodes) is left out: two clusters
that differ only in names (repeated blocks between host ops) share one binary, compiled once.
The binary says which of the launch's variables it reads and writes by their positions
(cluster_launch.VARIABLES_KEY), so either launch maps them to its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict

import numpy as np

from .. import flags
from ..frontend.functions import library_of
from ..frontend.graph import FuncAttr, Graph, TensorRef

NAMING_ATTRS = ("_class",)  # colocation constraints: names of other nodes, nothing lowering reads


def cluster_key_parts(graph: Graph, nodes: list[str], inputs: list, outputs: list, feeds: dict,
                      resource_specs: dict, options) -> list[bytes]:
    """What the cluster's lowered text is a function of, as bytes (see the module docstring).
    `resource_specs` are the variables' in the launch's order."""
    h = _Hasher(graph, _Positions(nodes, inputs, list(resource_specs)))
    for name in nodes:
        h.node(graph.nodes[name])
    h.add("inputs", len(inputs), "outputs", [h.positions.ref(r) for r in outputs])
    for ref in inputs:
        spec = feeds[ref]
        h.add(spec.dtype, spec.shape, spec.value)
    for spec in resource_specs.values():
        h.add(spec.dtype, spec.shape, spec.handle)
    limits = {k: v for k, v in asdict(flags.from_environment()).items() if k.startswith("max_")}  # limits.py
    h.add(repr(options), limits)
    return [h.digest()]


def _lowered_attrs(node) -> list:
    """The node's attrs that its lowering may read (all but NAMING_ATTRS), sorted by name."""
    return sorted((k, v) for k, v in node.attrs.items() if k not in NAMING_ATTRS)


class _Positions:
    """Names as positions: a member node as its index in the cluster, a tensor the cluster
    takes as its input's index (tensors, then variables)."""

    def __init__(self, nodes: list[str], inputs: list, variables: list):
        self.nodes = {n: i for i, n in enumerate(nodes)}
        self.inputs = {r: f"input {i}" for i, r in enumerate(inputs)}
        self.inputs.update({r: f"variable {i}" for i, r in enumerate(variables)})

    def ref(self, ref: TensorRef) -> str:
        if ref in self.inputs:  # also a member's output that is fed
            return self.inputs[ref]
        return f"node {self.nodes[ref.node]}:{ref.index}"

    def control(self, name: str) -> str:
        return f"node {self.nodes[name]}" if name in self.nodes else "outside"


class _Hasher:
    """A SHA-256 over nodes and values, following function attrs into the graph's library
    (each function hashed once)."""

    def __init__(self, graph: Graph, positions: _Positions):
        self.positions = positions
        self.sha = hashlib.sha256()
        self.library = library_of(graph)
        self.functions_seen: set[str] = set()

    def digest(self) -> bytes:
        return self.sha.digest()

    def add(self, *values) -> None:
        for value in values:
            self._value(value)

    def node(self, node) -> None:
        """A member node, named by positions."""
        p = self.positions
        self.add(node.op, [p.ref(r) for r in node.inputs], [p.control(c) for c in node.control_inputs],
                 node.device, _lowered_attrs(node))

    def _function_node(self, node) -> None:
        """A node of a function body, where names are the function's own."""
        self.add(node.name, node.op, [str(r) for r in node.inputs], node.control_inputs, node.device,
                 _lowered_attrs(node))

    def _value(self, value) -> None:
        if isinstance(value, np.ndarray):
            self._bytes(f"ndarray {value.dtype} {value.shape}".encode())
            self._bytes(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, (list, tuple)):
            self._bytes(f"seq {len(value)}".encode())
            for item in value:
                self._value(item)
        elif isinstance(value, dict):
            self._value(sorted(value.items(), key=lambda item: str(item[0])))
        elif isinstance(value, FuncAttr):
            self._bytes(f"func {value.name}".encode())
            self._value(sorted(value.attrs.items()))
            self._function(value.name)
        else:
            self._bytes(f"{type(value).__name__} {value!r}".encode())

    def _bytes(self, data: bytes) -> None:
        self.sha.update(len(data).to_bytes(8, "little"))
        self.sha.update(data)

    def _function(self, name: str) -> None:
        if name in self.functions_seen or name not in self.library:
            return
        self.functions_seen.add(name)
        fn = self.library.get(name)
        self.add("function", name, fn.args, [str(r) for r in fn.rets], fn.control_rets, fn.stateful)
        for node_name in sorted(fn.graph.nodes):
            self._function_node(fn.graph.nodes[node_name])
