"""A TF-like Session: `Session(graph).run(fetches, feed_dict)` with tf.compat.v1 semantics.

Fetches are tensor names ("x:0"), op names ("train", run for effect, returning None) or
nested lists/tuples/dicts of them. A feed may name any tensor: it cuts the graph, so its
producer does not run unless something else needs it. Only what the fetches need runs,
and each stateful op runs once per step. Variables live in the session between runs.

Execution: each (fetches, feed signature) gets a plan: the nodes to run in topological
order, with every tensor's spec inferred for the fed shapes. `jit="off"` runs every node
on its NumPy reference kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dtypes
from .errors import HlobridgeError, InputError
from .graph import Graph, TensorRef, load_graph
from .ops import registry
from .ops.state import VariableHandle, VariableStore
from .shape_inference import infer_specs, outputs_by_node
from .spec import TensorSpec

JIT_MODES = ("off",)


@dataclass
class _Plan:
    order: list[str]
    specs: dict
    outputs: dict  # node name -> its output specs
    fetch_refs: list[TensorRef]


def _flatten(fetches, out: list) -> object:
    """Flatten nested fetches into `out`; return a structure of indices to rebuild them."""
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_flatten(f, out) for f in fetches)
    if isinstance(fetches, dict):
        return {k: _flatten(v, out) for k, v in fetches.items()}
    if not isinstance(fetches, str):
        raise TypeError(f"fetch must be a tensor or op name, got {type(fetches).__name__}")
    out.append(fetches)
    return len(out) - 1


def _rebuild(structure, values: list):
    if isinstance(structure, (list, tuple)):
        return type(structure)(_rebuild(s, values) for s in structure)
    if isinstance(structure, dict):
        return {k: _rebuild(v, values) for k, v in structure.items()}
    return values[structure]


class Session:
    """Runs a graph. `jit`: "off" runs every op on its NumPy reference kernel."""

    def __init__(self, graph, jit: str = "off", device: str = "cpu"):
        if jit not in JIT_MODES:
            raise HlobridgeError(f"jit must be one of {', '.join(JIT_MODES)}, got '{jit}'")
        self.graph: Graph = load_graph(graph)
        self.jit = jit
        self.device = device
        self.variables = VariableStore()
        self._plans: dict = {}

    # -- public API -------------------------------------------------------------------------
    def run(self, fetches, feed_dict: dict | None = None):
        names: list[str] = []
        structure = _flatten(fetches, names)
        feeds = self._resolve_feeds(feed_dict or {})
        targets, fetch_refs = self._resolve_fetches(names)
        key = (tuple(names), tuple((r, v.dtype, v.shape) for r, v in feeds.items()))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(targets, fetch_refs, feeds)
        values = self._execute(plan, feeds)
        results = [None if ref is None else np.asarray(values[ref]) for ref in fetch_refs]
        return _rebuild(structure, results)

    # -- resolution ---------------------------------------------------------------------------
    def _resolve_feeds(self, feed_dict: dict) -> dict[TensorRef, np.ndarray]:
        feeds = {}
        for name, value in feed_dict.items():
            ref = self._tensor(name, "feed")
            node = self.graph.nodes[ref.node]
            spec = self._declared_spec(ref)
            value = np.asarray(value)
            if spec is not None:
                want = spec.dtype
                if want not in (dtypes.RESOURCE, dtypes.VARIANT) and value.dtype != want:
                    if np.can_cast(value.dtype, want, "same_kind") or value.dtype.kind in "iub":
                        value = value.astype(want)
                    else:
                        raise InputError(f"feed '{ref}': expected {dtypes.name(want)}, got "
                                         f"{dtypes.name(value.dtype)}")
                if spec.shape is not None and (len(spec.shape) != value.ndim or any(
                        d is not None and d != s for d, s in zip(spec.shape, value.shape))):
                    raise InputError(f"feed '{ref}' ({node.op}): expected shape {TensorSpec(want, spec.shape)}, "
                                     f"got {list(value.shape)}")
            feeds[ref] = value
        return feeds

    def _declared_spec(self, ref: TensorRef) -> TensorSpec | None:
        node = self.graph.nodes[ref.node]
        if node.op in ("Placeholder", "PlaceholderV2"):
            return TensorSpec(node.attr("dtype"), node.attr("shape", None))
        return None

    def _tensor(self, name: str, what: str) -> TensorRef:
        if not isinstance(name, str):
            raise TypeError(f"{what} names must be strings, got {type(name).__name__}")
        ref = TensorRef.parse(name)
        if ref.node not in self.graph.nodes:
            raise InputError(f"{what} '{name}': no node '{ref.node}' in the graph")
        return ref

    def _resolve_fetches(self, names: list[str]):
        targets, refs = [], []
        for name in names:
            if ":" in name:
                refs.append(self._tensor(name, "fetch"))
            else:
                if name.lstrip("^") not in self.graph.nodes:
                    raise InputError(f"fetch '{name}': no op named '{name}' in the graph")
                targets.append(name.lstrip("^"))
                refs.append(None)
        return targets, refs

    # -- planning ---------------------------------------------------------------------------------
    def _make_plan(self, targets, fetch_refs, feeds) -> _Plan:
        graph = self.graph
        needed, todo = set(), list(targets) + [r.node for r in fetch_refs if r is not None and r not in feeds]
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.add(name)
            node = graph.nodes[name]
            todo.extend(r.node for r in node.inputs if r not in feeds)
            todo.extend(node.control_inputs)
        unfed = [n for n in needed if graph.nodes[n].op in ("Placeholder", "PlaceholderV2")]
        if unfed:
            raise InputError(f"placeholder(s) {', '.join(sorted(unfed))} must be fed "
                             f"(feed_dict has {', '.join(map(str, feeds)) or 'nothing'})")
        feed_specs = {r: TensorSpec(v.dtype, tuple(v.shape)) for r, v in feeds.items()}
        specs = infer_specs(graph, needed, feed_specs)
        order = [n for n in graph.order if n in needed]
        return _Plan(order, specs, outputs_by_node(specs), [r for r in fetch_refs if r is not None])

    # -- execution ---------------------------------------------------------------------------------
    def _execute(self, plan: _Plan, feeds: dict) -> dict:
        values: dict[TensorRef, object] = dict(feeds)
        specs = plan.specs
        for name in plan.order:
            node = self.graph.nodes[name]
            entry = registry.lookup(node.op)
            out_specs = plan.outputs.get(name, [])
            if not entry.stateful and out_specs and all(s.value is not None for s in out_specs):
                for i, s in enumerate(out_specs):
                    values.setdefault(TensorRef(name, i), s.value)
                continue
            args = []
            for i, r in enumerate(node.inputs):
                v = values[r]
                if isinstance(v, VariableHandle) and i not in entry.ref_inputs and \
                        specs[r].dtype != dtypes.RESOURCE:
                    v = self.variables.read(v, name)
                args.append(v)
            ctx = registry.OpContext(node, [specs[r] for r in node.inputs], out_specs, self.variables)
            try:
                results = registry.as_list(entry.kernel(ctx, *args))
            except HlobridgeError:
                raise
            except Exception as e:  # a kernel failing on real data: name the node
                raise HlobridgeError(f"node '{name}' ({node.op}) failed: {type(e).__name__}: {e}") from e
            for i, v in enumerate(results):
                values.setdefault(TensorRef(name, i), v)
        for r in plan.fetch_refs:
            v = values[r]
            if isinstance(v, VariableHandle) and specs[r].dtype != dtypes.RESOURCE:
                values[r] = self.variables.read(v, "fetch")
        return values
