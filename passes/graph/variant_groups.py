"""TensorLists stay inside one cluster: the variant rule of mark_for_compilation.

A compiled TensorList is a buffer and a length inside a StableHLO function
(ops/lists/values.py); a cluster's arguments and results are plain tensors. So, as XLA requires
of a list that a cluster does not create, every variant tensor must be made and consumed in
the same cluster. This module finds the *variant groups*: nodes joined by variant edges
(producer and consumers of a list, through Identity, While and If). A group compiles whole or
not at all: mark_for_compilation contracts its edges before any other, and gives every member
a reason when one member cannot compile, when a list is fed or fetched, or when a list's
capacity is unknown at compile time.
"""

from __future__ import annotations

from hlobridge import dtypes
from hlobridge.frontend.graph import Graph, TensorRef
from hlobridge.ops.lists.values import info_of
from hlobridge.ops.lists.tensor_arrays import FLOW_OUTPUTS, HANDLE_MAKERS
from hlobridge.ops.lists.tensor_lists import LIST_OUTPUTS, UNINITIALIZED_MAKERS

# A TF1 TensorArray's flow is a list in IR (ops/lists/tensor_arrays.py); its handle is grouped with it,
# so that no kernel outside the cluster needs an array that only exists compiled.
_UNINITIALIZED = UNINITIALIZED_MAKERS | {"TensorArrayV3"}

# Type attributes that say which outputs of a pass-through op (Identity, While, If, ...) are variant.
_OUTPUT_TYPE_ATTRS = ("T", "Tout", "dtype")


def variant_outputs(node) -> set[int]:
    """Indices of `node`'s variant outputs, from its op (list ops) or its type attributes."""
    if node.op in LIST_OUTPUTS:
        return set(LIST_OUTPUTS[node.op])
    if node.op in FLOW_OUTPUTS:
        return set(FLOW_OUTPUTS[node.op]) | ({0} if node.op in HANDLE_MAKERS else set())
    for attr in _OUTPUT_TYPE_ATTRS:
        value = node.attrs.get(attr)
        if isinstance(value, list):
            return {i for i, t in enumerate(value) if t == dtypes.VARIANT}
        if value == dtypes.VARIANT:
            return {0, 1} if node.op in ("Switch", "RefSwitch") else {0}
    return set()


def variant_test(graph: Graph, specs=None):
    """ref -> whether it is a variant tensor: by its spec where `specs` has it, else by its op."""
    def is_variant(ref: TensorRef) -> bool:
        if ref.index == 0 and graph.nodes[ref.node].op in HANDLE_MAKERS:
            return True
        if specs is not None and ref in specs:
            return specs[ref].dtype == dtypes.VARIANT
        return ref.index in variant_outputs(graph.nodes[ref.node])
    return is_variant


def variant_groups(graph: Graph, order: list[str], cut: set, is_variant) -> list[tuple[list[str], list[TensorRef]]]:
    """(members in graph order, the variant tensors they make) of each group among `order`: nodes
    that make or read a variant tensor, joined by variant edges; an edge through `cut` (a fed
    tensor) joins nothing."""
    selected = set(order)
    parent = {n: n for n in order}

    def find(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    touching = set()
    for name in order:
        for r in graph.nodes[name].inputs:
            if is_variant(r):
                touching.add(name)
                if r.node in selected and r not in cut:
                    touching.add(r.node)
                    parent[find(name)] = find(r.node)
    groups: dict[str, list[str]] = {}
    for name in order:
        if name in touching:
            groups.setdefault(find(name), []).append(name)
    return [(members, [r for m in members for r in _outputs(graph, m, is_variant)]) for members in groups.values()]


def _outputs(graph: Graph, name: str, is_variant) -> list[TensorRef]:
    """The variant tensors node `name` makes that some node reads."""
    return sorted({r for c in graph.consumers[name] for r in graph.nodes[c].inputs if r.node == name and is_variant(r)})


def group_reason(graph: Graph, members: list[str], tensors: list[TensorRef], reasons: dict, cut: set,
                 fetched: set, is_variant, specs=None) -> str | None:
    """Why this group cannot compile (a reason code of mark_for_compilation), or None."""
    if any(m in reasons for m in members):
        return "variant_boundary"
    inside = set(members)
    if any(t in fetched for t in tensors):
        return "variant_boundary"
    for m in members:  # a list fed, or made by a node that is not clustered here
        if any(is_variant(r) and (r in cut or r.node not in inside) for r in graph.nodes[m].inputs):
            return "variant_boundary"
    if specs is not None:
        for t in tensors:
            if t.index == 0 and graph.nodes[t.node].op in HANDLE_MAKERS:
                continue  # a handle: its flow says what is known
            info = info_of(specs[t]) if t in specs else None
            if info is None or info.capacity is None:
                return "list_size_unknown"
            if not info.element_static and graph.nodes[t.node].op not in _UNINITIALIZED:
                return "list_size_unknown"
    return None
