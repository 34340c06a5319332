"""A strict parser for the DOT subset hlobridge/debug/graphviz.py writes, so that tests check the
files' structure (and what they say) on machines without Graphviz, where `dot -Tpng`
cannot run.

Grammar: `digraph ID { stmt* }` with stmt one of `graph|node|edge [attrs];`,
`ID [attrs];`, `ID -> ID [attrs]?;`, `subgraph ID { stmt* }`. IDs are double-quoted strings
(or bare words); anything else is a syntax error with its offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<word>[A-Za-z_][A-Za-z0-9_.]*|-?\d+(?:\.\d+)?)'
                    r'|(?P<punct>->|[{}\[\];=,]))')


class DotSyntaxError(ValueError):
    pass


@dataclass
class Subgraph:
    name: str
    attrs: dict = field(default_factory=dict)
    nodes: list = field(default_factory=list)  # node ids declared directly inside
    children: list = field(default_factory=list)

    def all_nodes(self) -> list:
        return self.nodes + [n for c in self.children for n in c.all_nodes()]


@dataclass
class Dot:
    name: str
    nodes: dict  # id -> attrs
    edges: list  # (src, dst, attrs)
    root: Subgraph

    def subgraphs(self) -> list[Subgraph]:
        out, todo = [], list(self.root.children)
        while todo:
            s = todo.pop(0)
            out.append(s)
            todo.extend(s.children)
        return out


def _unquote(tok: str) -> str:
    if tok.startswith('"'):
        return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), tok[1:-1])
    return tok


def _tokens(text: str) -> list[tuple[str, int]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise DotSyntaxError(f"unexpected character at offset {pos}: {text[pos:pos + 20]!r}")
        out.append((m.group(m.lastgroup), m.start(m.lastgroup)))
        pos = m.end()
    return out


def parse(text: str) -> Dot:
    toks = _tokens(text)
    i = 0

    def peek():
        return toks[i][0] if i < len(toks) else None

    def take(expected=None):
        nonlocal i
        if i >= len(toks):
            raise DotSyntaxError(f"unexpected end of input (expected {expected or 'more'})")
        tok, off = toks[i]
        if expected is not None and tok != expected:
            raise DotSyntaxError(f"expected {expected!r} at offset {off}, got {tok!r}")
        i += 1
        return tok

    def ident():
        tok = take()
        if tok in "{}[];=," or tok == "->":
            raise DotSyntaxError(f"expected an ID, got {tok!r} at offset {toks[i - 1][1]}")
        return _unquote(tok)

    def attr_list():
        attrs = {}
        take("[")
        while peek() != "]":
            key = ident()
            take("=")
            attrs[key] = ident()
            if peek() == ",":
                take(",")
        take("]")
        return attrs

    nodes: dict = {}
    edges: list = []

    def body(sub: Subgraph):
        take("{")
        while peek() != "}":
            if peek() == "subgraph":
                take("subgraph")
                child = Subgraph(ident())
                sub.children.append(child)
                body(child)
                continue
            if peek() in ("graph", "node", "edge"):
                kind = take()
                attrs = attr_list()
                if kind == "graph":
                    sub.attrs.update(attrs)
            else:
                a = ident()
                if peek() == "->":
                    take("->")
                    b = ident()
                    edges.append((a, b, attr_list() if peek() == "[" else {}))
                else:
                    if a in nodes:
                        raise DotSyntaxError(f"node {a!r} declared twice")
                    nodes[a] = attr_list() if peek() == "[" else {}
                    sub.nodes.append(a)
            take(";")
        take("}")

    take("digraph")
    root = Subgraph(ident())
    body(root)
    if i != len(toks):
        raise DotSyntaxError(f"text after the closing brace at offset {toks[i][1]}")
    undeclared = {n for e in edges for n in e[:2]} - set(nodes)
    if undeclared:
        # dot would create them silently (inside whatever subgraph mentions them first)
        raise DotSyntaxError(f"edges name undeclared nodes: {sorted(undeclared)[:5]}")
    return Dot(root.name, nodes, edges, root)
