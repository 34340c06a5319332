"""Mark for compilation: which nodes compile, grouped into which clusters, and why not the rest.

Follows TensorFlow's `mark_for_compilation_pass.cc`:

1. A predicate chain decides, per node, whether it is a candidate; the first predicate
   that fails gives the node its reason code (REASONS), so "why was this op not compiled?"
   always has an answer.
2. Clusters grow by contracting edges between candidates, in graph order. A contraction is
   refused when it would create a cycle (some path between the two clusters leaves them),
   when the devices differ, when `_XlaScope`s differ, or when it would exceed
   `max_cluster_size`. Reads and writes of variables keep their order because every
   ordering TensorFlow relies on is an edge, and contraction never reverses an edge.
3. In `auto` mode, clusters with fewer than `min_cluster_size` ops that do work (Const,
   Identity and NoOp count 0) are dissolved: a launch costs more than it saves.

Modes: `auto` (session-level JIT: every candidate), `manual` (only `_XlaCompile=true` nodes,
as `jit_scope()` writes them), `strict` (like auto; the session then refuses to run any
op outside a cluster), `off` (nothing: every op on its reference kernel, for debugging).
A node placed on an XLA_CPU/XLA_GPU device, or an op TensorFlow only runs compiled
(XlaCallModule), is compiled in auto, manual and strict mode, and never dropped for being small.
Clustering is deterministic: it depends only on the graph and the options.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hlobridge import dtypes
from hlobridge.frontend.functions import library_of
from hlobridge.frontend.graph import Graph, TensorRef
from hlobridge.ops import registry, typesets
from hlobridge.ops.kinds import COLLECTIVES, GRAPH_INPUTS
from hlobridge.ops.text.string_kinds import STRING_OPS
from hlobridge.ops.text.tables import TABLE_OPS
from hlobridge.ops.lists.tensor_arrays import KERNEL_ONLY as TENSOR_ARRAY_KERNELS

from .array_handles import carries_array_handles_only
from .array_handles import functions_of as _functions_of
from .contraction import Contraction
from .functionalize_control_flow import maybe_dead
from .variant_groups import group_reason, variant_groups, variant_test

JIT_MODES = ("off", "auto", "manual", "strict")

REASONS = {
    "unknown_op": "hlobridge has no rule for this op",
    "graph_input": "a graph input: its value is fed, not computed",
    "variable": "a variable: it lives in the session; clusters take it as a resource argument",
    "collective": "a collective (an all-reduce, gather or broadcast between ranks, hlobridge.distributed): "
                  "it runs between clusters, on the host (a data-parallel cuda Session started with "
                  "init(iree_channels=True): on the device, on IREE's NCCL channel), so a cluster that "
                  "would span it splits there",
    "jit_off": "jit is off",
    "not_marked": "jit=manual and the node is not marked _XlaCompile=true (jit_scope) nor on an XLA device",
    "stateful_random": "a stateful random op: it runs on its reference kernel, which keeps TensorFlow's stream",
    "no_lowering": "the op has only a reference kernel (string op, data-dependent output shape, ...)",
    "uncompilable_dtype": "it has tensors of a type that cannot be compiled (for this op: see hlobridge-ops)",
    "resource_output": "it produces a resource handle, which only the session can hold",
    "cluster_too_small": "its cluster had fewer than min_cluster_size ops that do work",
    "uncompilable_body": "a function it runs (branch, loop body) has an op that cannot compile "
                         "(Assert, variables, random, ...)",
    "maybe_dead": "v1 control flow (Switch/Merge) that could not be functionalized: its value may be dead",
    "variant_boundary": "a TensorList it makes or reads would cross a cluster boundary (a list must be made, "
                        "used and consumed in one cluster: some op on its way cannot compile, or it is fed or fetched)",
    "list_size_unknown": "a TensorList on its way has no capacity or element shape known at compile time "
                         "(XLA needs them: TensorListReserve's num_elements, EmptyTensorList's max_num_elements)",
    "string_tensor": "string tensors never compile (StableHLO has no strings): it runs on its reference kernel",
    "lookup_table": "a lookup table op: the table lives in the session, lookups run on the reference kernel",
    "uncompilable_config": "the op compiles, but not as this node is configured (e.g. NonMaxSuppressionV4 "
                           "without pad_to_max_output_size: its output shape depends on the data)",
    "tensor_array": "a TF1 TensorArray gradient or stack op (or a V2 TensorArray op): state that XLA-style "
                    "compiled arrays do not hold (gradient arrays shared by source, stacks between two loops)",
}

VARIABLES = {"VarHandleOp", "VariableV2", "Variable"}
RANDOM = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "Multinomial", "RandomShuffle"}
ZERO_WEIGHT = {"Const", "Identity", "IdentityN", "NoOp", "Snapshot"}
XLA_DEVICES = ("XLA_CPU", "XLA_GPU")
STRING = np.dtype(object)  # how hlobridge holds tf.string
# Ops TensorFlow only ever runs compiled (their one kernel compiles them on demand): like a node
# on an XLA device, they compile in manual mode too and their cluster is never too small.
COMPILED_ON_DEMAND = {"XlaCallModule"}


@dataclass(frozen=True)
class ClusterOptions:
    """The clustering knobs: the jit mode (JIT_MODES) and the cluster size bounds."""

    jit: str = "auto"
    min_cluster_size: int = 4
    max_cluster_size: int | None = None


@dataclass
class Cluster:
    """One cluster: its nodes (all on one device), the tensors it reads from outside and the
    tensors used outside it."""

    name: str
    device: str
    nodes: list[str]  # in graph order
    inputs: list[TensorRef] = field(default_factory=list)  # tensors read from outside
    outputs: list[TensorRef] = field(default_factory=list)  # tensors used outside

    def op_histogram(self, graph: Graph) -> dict[str, int]:
        """{op type: count} of the cluster's nodes, most frequent first (ties by name), for reports."""
        hist: dict[str, int] = {}
        for n in self.nodes:
            hist[graph.nodes[n].op] = hist.get(graph.nodes[n].op, 0) + 1
        return dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class Clustering:
    """The result of `mark_for_compilation`: the clusters, each clustered node's cluster, and a
    reason code for every node left out."""

    clusters: list[Cluster]
    cluster_of: dict[str, str]  # node -> cluster name
    reasons: dict[str, str]  # node outside every cluster -> reason code

    def reason(self, node: str) -> str:
        """'code: message' saying why `node` is in no cluster (KeyError for a clustered node)."""
        code = self.reasons[node]
        return f"{code}: {REASONS[code]}"


def device_type(device: str) -> str:
    """'/job:localhost/replica:0/task:0/device:XLA_CPU:0' -> 'XLA_CPU'; unplaced -> ''."""
    for part in device.split("/"):
        if part.lower().startswith("device:"):
            return part.split(":")[1].upper()
    return ""


def _forced(node) -> bool:
    return device_type(node.device) in XLA_DEVICES or node.op in COMPILED_ON_DEMAND


def _marked(node) -> bool:
    return bool(node.attrs.get("_XlaCompile", False)) or _forced(node)


def _dtype_attrs(node):
    for value in node.attrs.values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, np.dtype) or (isinstance(v, str) and v in (dtypes.RESOURCE, dtypes.VARIANT)):
                yield v


def _reason(node, jit: str, library=None) -> str | None:
    """The predicate chain: None for a candidate, else the first reason that rules it out."""
    entry = registry.lookup(node.op)
    if entry is None:
        return "unknown_op"
    if node.op in GRAPH_INPUTS:
        return "graph_input"
    if node.op in VARIABLES:
        return "variable"
    if node.op in COLLECTIVES:
        return "collective"
    if jit == "off":
        return "jit_off"
    if jit == "manual" and not _marked(node):
        return "not_marked"
    if node.op in TABLE_OPS:
        return "lookup_table"
    if node.op in TENSOR_ARRAY_KERNELS:
        return "tensor_array"
    if node.op in STRING_OPS or any(isinstance(t, np.dtype) and t == STRING for t in _dtype_attrs(node)):
        return "string_tensor"
    if node.op in RANDOM:
        return "stateful_random"
    if not entry.compiles:
        return "no_lowering"
    if entry.uncompilable is not None and entry.uncompilable(node):
        return "uncompilable_config"
    types = list(_dtype_attrs(node))
    if any(t == dtypes.RESOURCE for t in types) and not carries_array_handles_only(node, library):
        return "resource_output"
    if any(t not in (dtypes.VARIANT, dtypes.RESOURCE) and dtypes.mlir_name(t) is None  # lists: variant_groups.py
           for t in types):
        return "uncompilable_dtype"
    if typesets.undeclared_dtype(entry, node):
        return "uncompilable_dtype"
    if library is not None and _functions_of(node) and not _bodies_compile(node, library):
        return "uncompilable_body"
    return None


def _bodies_compile(node, library) -> bool:
    """Every node its functions run is a candidate, and none touches state: a compiled
    body has no variables, and an Assert inside must keep stopping the run."""
    for f in _functions_of(node):
        fn = library.get(f)
        for name in fn.targets():
            inner = fn.graph.nodes[name]
            if name in fn.args:
                continue
            if _reason(inner, "auto", library) is not None:
                return False
            if registry.lookup(inner.op).stateful and not _functions_of(inner):
                return False
    return True


def _weight(graph: Graph, names: list[str]) -> int:
    return sum(graph.nodes[n].op not in ZERO_WEIGHT for n in names)


def mark_for_compilation(graph: Graph, nodes=None, *, cut=(), fetched=(),
                         options: ClusterOptions = ClusterOptions(), specs=None) -> Clustering:
    """Cluster `nodes` (default: the whole graph). Edges through `cut` tensors (feeds)
    do not count; `fetched` tensors are outputs of their cluster even without a consumer.
    `specs` (shape inference's, where the caller has them) tell which TensorLists have a
    size known at compile time (variant_groups.py)."""
    if options.jit not in JIT_MODES:
        raise ValueError(f"jit must be one of {', '.join(JIT_MODES)}, got '{options.jit}'")
    selected = set(graph.nodes) if nodes is None else set(nodes)
    order = [n for n in graph.order if n in selected]
    cut = set(cut)
    library = library_of(graph)
    reasons = {n: r for n in order if (r := _reason(graph.nodes[n], options.jit, library)) is not None}
    for n in maybe_dead(graph, selected):  # a cluster runs whole: none of its inputs may be dead
        reasons.setdefault(n, "maybe_dead")
    is_variant = variant_test(graph, specs)
    groups = variant_groups(graph, order, cut, is_variant)
    for members, tensors in groups:  # a TensorList's makers and users compile together or not at all
        why = group_reason(graph, members, tensors, reasons, cut, set(fetched), is_variant, specs)
        if why is not None:
            reasons.update({n: why for n in members if n not in reasons})
    candidates = [n for n in order if n not in reasons]
    dsu = Contraction(graph, order, cut)

    def device(n: str) -> str:
        return device_type(graph.nodes[n].device) or "CPU"

    # Clusters stay single-device because every contracted edge joins two nodes of one device;
    # scopes are checked per cluster, as a scope-less node may sit between two scopes.
    limit = options.max_cluster_size
    is_candidate = set(candidates)
    scope: dict[str, object] = {n: graph.nodes[n].attrs.get("_XlaScope") for n in candidates}

    def merge(producer: str, consumer: str, whole_group: bool = False) -> bool:
        """Contract the edge unless devices, scopes or the size limit (not for a list's group) forbid it."""
        if device(producer) != device(consumer):
            return False
        a, b = dsu.find(producer), dsu.find(consumer)
        if a == b:
            return True
        if scope[a] is not None and scope[b] is not None and scope[a] != scope[b]:
            return False
        if not whole_group and limit is not None and _weight(graph, dsu.members[a] + dsu.members[b]) > limit:
            return False
        if not dsu.try_merge(a, b):
            return False
        scope[dsu.find(a)] = scope[a] if scope[a] is not None else scope[b]
        return True

    split = []
    for members, _ in groups:  # each TensorList's group first, whole: other contractions cannot split it
        if members[0] not in is_candidate:
            continue
        inside = set(members)
        for p, c in [(r.node, m) for m in members for r in graph.nodes[m].inputs if r.node in inside and is_variant(r)]:
            merge(p, c, whole_group=True)
        if len({dsu.find(m) for m in members}) > 1:  # a path outside the group between two members
            split.append(members)                    # (a cycle for now): the other contractions may join it
    for producer in candidates:
        if producer not in is_candidate:
            continue
        for consumer in graph.consumers[producer]:
            if consumer in is_candidate:
                merge(producer, consumer)
    for members in split:
        roots = {dsu.find(m) for m in members}
        if len(roots) > 1:  # it cannot (devices, scopes, a cycle): its clusters are given up, whole
            for n in [n for root in roots for n in dsu.members[root]]:
                reasons[n] = "variant_boundary"
                is_candidate.discard(n)
    candidates = [n for n in candidates if n in is_candidate]

    groups: dict[str, list[str]] = {}
    for n in candidates:
        groups.setdefault(dsu.find(n), []).append(n)
    kept = []
    for members in sorted(groups.values(), key=lambda m: dsu.rank[m[0]]):
        forced = any(_forced(graph.nodes[n]) for n in members)
        weight = _weight(graph, members)
        too_small = weight == 0 or (options.jit == "auto" and weight < options.min_cluster_size)
        if too_small and not forced:
            reasons.update({n: "cluster_too_small" for n in members})
        else:
            kept.append(sorted(members, key=dsu.rank.__getitem__))

    clusters, cluster_of = [], {}
    for i, members in enumerate(kept):
        name = f"cluster_{i}"
        device = device_type(graph.nodes[members[0]].device) or "CPU"
        clusters.append(Cluster(name, device, members))
        cluster_of.update({n: name for n in members})
    _set_boundaries(graph, clusters, cluster_of, selected, cut, set(fetched))
    return Clustering(clusters, cluster_of, reasons)


def _set_boundaries(graph, clusters, cluster_of, selected, cut, fetched) -> None:
    """Each cluster's inputs (tensors from outside it) and outputs (tensors used outside it)."""
    for c in clusters:
        members = set(c.nodes)
        inputs: list[TensorRef] = []
        for n in c.nodes:
            for r in graph.nodes[n].inputs:
                if (r.node not in members or r in cut) and r not in inputs:
                    inputs.append(r)
        outputs: set[TensorRef] = set()
        for n in c.nodes:
            for consumer in graph.consumers[n]:
                if consumer in selected and cluster_of.get(consumer) != c.name:
                    outputs.update(r for r in graph.nodes[consumer].inputs if r.node == n and r not in cut)
        outputs.update(r for r in fetched if r.node in members)
        c.inputs = inputs
        position = {n: i for i, n in enumerate(c.nodes)}
        c.outputs = sorted(outputs, key=lambda r: (position[r.node], r.index))
