#!/usr/bin/env python3
"""Print the import cycles among hlobridge's own modules; exit 1 if there is one.

Every `import` and `from ... import` counts, those inside functions (lazy imports) too: a lazy
import hides a cycle from the interpreter, not from the reader. A module's edges go to the
modules it names: `from hlobridge.frontend import graph` is an edge to hlobridge.frontend.graph,
`from hlobridge.frontend.graph import Graph` one to hlobridge.frontend.graph. The parent packages
that Python imports on the way are not counted (every module would then depend on
hlobridge/__init__); a package's own `__init__` counts like any module.

    python tools/import_cycles.py            # the repository's hlobridge, passes/ and dialects/
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Where each top-level folder installs (pyproject.toml's package-dir).
PACKAGES = {"hlobridge": "hlobridge", "passes": "hlobridge.passes", "dialects": "hlobridge.dialects"}


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the installed package."""
    modules = {}
    for folder, dotted in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([dotted, *parts])] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The hlobridge modules that module `name` (at `path`) imports, lazily or not."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in modules and t != name)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one
    cycle through its members, sorted."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(_one_cycle(graph, set(c)) for c in components)


def _one_cycle(graph: dict[str, set[str]], members: set[str]) -> list[str]:
    """A cycle through the component's first module, found by breadth-first search."""
    start = min(members)
    parents, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    return list(reversed(path)) + [start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(members)


def main() -> int:
    found = cycles(import_graph())
    for cycle in found:
        print(" -> ".join(cycle))
    print(f"{len(found)} import cycle(s) among {len(module_files())} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
