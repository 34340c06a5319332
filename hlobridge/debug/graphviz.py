"""Graphviz DOT for the two graphs worth looking at, as XLA's `--xla_generate_hlo_graph` draws them:

- `clustered_graph_dot`: the TF graph with each cluster drawn as a box (a DOT `cluster_*`
  subgraph) and each node left out labelled with its reason code and coloured by it;
- `stablehlo_dot`: a StableHLO module, one box per function, each op a node, and each
  `flow.dispatch.region` (a fusion group: one IREE dispatch) drawn as a subgraph of its ops.
  `dump_stablehlo_dot` adds it to a Dumper's numbered files as `NN-graphviz.dot`, after the
  last pass, so `--dump-to DIR` (and HLOBRIDGE_FLAGS' cluster dumps) include it.

The DOT is plain text written here: no Python dependency; render it with `dot -Tpng f.dot -o f.png`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from hlobridge.passes.graph.mark_for_compilation import REASONS, Clustering

from ..frontend.graph import Graph

# One pastel per reason, so a picture shows at a glance what kept nodes out.
REASON_COLORS = {
    "unknown_op": "#f4a6a6", "no_lowering": "#f8c9a0", "stateful_random": "#f6e3a1",
    "uncompilable_dtype": "#f2b8d8", "resource_output": "#d9c2f0", "graph_input": "#e3e3e3",
    "variable": "#c8e6c9", "cluster_too_small": "#fff3b0", "not_marked": "#d0d0d0", "jit_off": "#d0d0d0",
    "uncompilable_body": "#f8c9a0", "maybe_dead": "#b3d4f5",
}
CLUSTER_STYLE = {"style": "rounded,filled", "fillcolor": "#e8f0fe", "color": "#1a73e8", "fontname": "Helvetica"}
REGION_STYLE = {"style": "rounded,filled", "fillcolor": "#e6f4ea", "color": "#188038", "fontname": "Helvetica"}
FUNC_STYLE = {"style": "rounded", "color": "#5f6368", "fontname": "Helvetica"}
OUTSIDE_STYLE = {"style": "dashed", "fillcolor": "white", "fontcolor": "#5f6368", "color": "#9aa0a6"}


def quote(text: str) -> str:
    """A DOT double-quoted string; newlines become DOT's centred line breaks."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(attrs: dict) -> str:
    return ", ".join(f"{k}={quote(v)}" for k, v in attrs.items() if v is not None)


class DotWriter:
    """Builds a `digraph` line by line, with nested subgraphs."""

    def __init__(self, name: str, **graph_attrs):
        self.lines = [f"digraph {quote(name)} {{"]
        self.depth = 1
        self.line(f"graph [{_attrs({'fontname': 'Helvetica', 'labelloc': 't', **graph_attrs})}];")
        self.line('node [shape=box, style="rounded,filled", fillcolor=white, fontname=Helvetica, fontsize=10];')
        self.line('edge [color="#5f6368", fontname=Helvetica, fontsize=8];')

    def line(self, text: str) -> None:
        """Append one DOT statement, indented to the current subgraph depth."""
        self.lines.append("  " * self.depth + text)

    def node(self, node_id: str, **attrs) -> None:
        """A node statement; `attrs` (label, fillcolor, ...) become DOT attributes, None ones dropped."""
        self.line(f"{quote(node_id)} [{_attrs(attrs)}];")

    def edge(self, src: str, dst: str, **attrs) -> None:
        """An edge `src -> dst`, with DOT attributes if any are given."""
        self.line(f"{quote(src)} -> {quote(dst)}" + (f" [{_attrs(attrs)}];" if attrs else ";"))

    @contextmanager
    def subgraph(self, name: str, **attrs):
        """A `cluster_`-named subgraph: dot draws it as a box around its nodes."""
        assert name.startswith("cluster"), name
        self.line(f"subgraph {quote(name)} {{")
        self.depth += 1
        self.line(f"graph [{_attrs(attrs)}];")
        yield
        self.depth -= 1
        self.line("}")

    def text(self) -> str:
        """The finished digraph as DOT text (the closing brace added)."""
        return "\n".join(self.lines + ["}"]) + "\n"


# -- the TF graph, clustered -------------------------------------------------------------------

def clustered_graph_dot(graph: Graph, clustering: Clustering, nodes=None, title: str | None = None) -> str:
    """The considered `nodes` (default: all) with clusters as boxes; producers outside
    `nodes` (fed tensors) are drawn dashed so every edge has both ends."""
    considered = set(graph.nodes) if nodes is None else set(nodes)
    order = [n for n in graph.order if n in considered]
    read = {p for n in order for p in _predecessors(graph, n)}
    outside = [p for p in graph.order if p in read and p not in considered]
    compiled = sum(len(c.nodes) for c in clustering.clusters)
    dot = DotWriter(title or graph.source,
                    label=f"{title or graph.source}: {compiled} of {len(order)} nodes compiled in "
                          f"{len(clustering.clusters)} cluster(s)")
    for c in clustering.clusters:
        with dot.subgraph(c.name, label=f"{c.name} on {c.device}: {len(c.nodes)} ops", **CLUSTER_STYLE):
            for n in c.nodes:
                dot.node(n, label=f"{n}\n{graph.nodes[n].op}", tooltip=f"{n} ({graph.nodes[n].op}) in {c.name}")
    for n in order:
        code = clustering.reasons.get(n)
        if code is not None:
            dot.node(n, label=f"{n}\n{graph.nodes[n].op}\n[{code}]", fillcolor=REASON_COLORS.get(code, "#f4cccc"),
                     tooltip=f"{n} ({graph.nodes[n].op}) not compiled: {code}: {REASONS.get(code, '')}")
        elif n not in clustering.cluster_of:
            dot.node(n, label=f"{n}\n{graph.nodes[n].op}")
    for p in outside:
        dot.node(p, label=f"{p}\n{graph.nodes[p].op}\n(fed: outside this run)", **OUTSIDE_STYLE)
    for n in order:
        node = graph.nodes[n]
        for r in node.inputs:
            if r.node in considered or r.node in outside:
                dot.edge(r.node, n, **({"taillabel": f":{r.index}"} if r.index else {}))
        for c in node.control_inputs:
            if c in considered or c in outside:
                dot.edge(c, n, style="dashed", arrowhead="odot")
    return dot.text()


def _predecessors(graph: Graph, name: str) -> set[str]:
    node = graph.nodes[name]
    return {r.node for r in node.inputs} | set(node.control_inputs)


# -- StableHLO, with fusion groups -----------------------------------------------------------

DISPATCH_REGION = "flow.dispatch.region"
_NAME_LOC = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"[()]')


def _short_type(t) -> str:
    """'tensor<2x10xf32>' -> '2x10xf32'."""
    s = str(t)
    return s[len("tensor<"):-1] if s.startswith("tensor<") and s.endswith(">") else s


def _op_label(op) -> str:
    name = op.name.removeprefix("stablehlo.")
    if op.name in ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.scatter") and op.regions:
        body = [o.operation.name for b in op.regions[0].blocks for o in b.operations]
        inner = [b.removeprefix("stablehlo.") for b in body if not b.endswith("return")]
        name += f"({', '.join(inner)})" if inner else ""
    lines = [name]
    types = ", ".join(_short_type(r.type) for r in op.results)
    if types:
        lines.append(types)
    m = _NAME_LOC.match(str(op.location))
    if m:
        lines.append(m.group(1))  # the TF node this op was lowered from
    return "\n".join(lines)


class _FuncDrawer:
    """Draws one func.func: args, ops (descending only into dispatch regions), return."""

    def __init__(self, dot: DotWriter, func, ir):
        self.dot, self.func, self.ir = dot, func, ir
        self.name = str(func.attributes["sym_name"]).strip('"')
        self.entry = func.regions[0].blocks[0]
        self.ids: dict = {}  # ir.Operation -> node id
        self.operands: list = []  # (value, consumer node id), drawn after every node exists
        self.regions = 0

    def draw(self) -> None:
        with self.dot.subgraph(f"cluster_func_{self.name}", label=f"func @{self.name}", **FUNC_STYLE):
            for i, arg in enumerate(self.entry.arguments):
                self.dot.node(f"{self.name}.arg{i}", label=f"%arg{i}\n{_short_type(arg.type)}",
                              shape="ellipse", fillcolor="#f1f3f4")
            self._draw_block(self.entry)
        # Edges go at the top level: dot makes a node named inside a subgraph a member of it.
        for value, dst in self.operands:
            src = self._source(value)
            if src is not None:
                self.dot.edge(src, dst)

    def _draw_block(self, block) -> None:
        for view in block.operations:
            op = view.operation
            if op.name == DISPATCH_REGION:
                self.regions += 1
                body = op.regions[0].blocks[0]
                n_ops = sum(o.operation.name != "flow.return" for o in body.operations)
                with self.dot.subgraph(f"cluster_{self.name}.region{self.regions}",
                                       label=f"dispatch region {self.regions}: {n_ops} ops", **REGION_STYLE):
                    self._draw_block(body)
                continue
            if op.name == "flow.return":
                continue  # the region's results are drawn as edges from the ops that make them
            node_id = f"{self.name}.ret" if op.name == "func.return" else f"{self.name}.op{len(self.ids)}"
            self.ids[op] = node_id
            if op.name == "func.return":
                self.dot.node(node_id, label="return", shape="ellipse", fillcolor="#f1f3f4")
            else:
                self.dot.node(node_id, label=_op_label(op),
                              fillcolor="#fef7e0" if op.name == "stablehlo.constant" else "white")
            self.operands += [(v, node_id) for v in op.operands]

    def _source(self, value) -> str | None:
        """The node that produces `value`; a dispatch region's result comes from the op inside
        it that its flow.return returns."""
        ir = self.ir
        if isinstance(value, ir.BlockArgument):
            return f"{self.name}.arg{value.arg_number}" if value.owner == self.entry else None
        owner = value.owner.operation
        if owner.name == DISPATCH_REGION:
            ret = list(owner.regions[0].blocks[0].operations)[-1].operation
            return self._source(ret.operands[value.result_number])
        return self.ids.get(owner)


def stablehlo_dot(module, title: str = "stablehlo") -> str:
    """`module`: an `ir.Module` or its text. Ops inside `flow.dispatch.region`s are drawn
    inside a subgraph per region; without regions, every op is its own node."""
    from iree.compiler import ir

    if isinstance(module, str):
        context = ir.Context()
        context.allow_unregistered_dialects = True  # drawing only: nothing here reaches IREE
        module = ir.Module.parse(module, context)
    dot = DotWriter(title, label=title)
    with module.context:
        for view in module.body.operations:
            if view.operation.name == "func.func":
                _FuncDrawer(dot, view.operation, ir).draw()
    return dot.text()


def dump_stablehlo_dot(dump, module, title: str = "stablehlo") -> None:
    """Write the module as `graphviz.dot` through `dump` (a hlobridge.debug.dump.Dumper) if it wants
    "graphviz" (every dump does, unless --dump-pass excludes it)."""
    if dump is not None and dump.wants("graphviz"):
        dump("graphviz", stablehlo_dot(module, title), ".dot")
