"""Which TensorFlow nodes each IREE dispatch of a module came from.

The lowering gives every StableHLO op the name of its TF node as its MLIR location
(`Location.name(node)`), and IREE carries locations through dispatch formation: a dispatch call
site (`stream.cmd.dispatch`) keeps the location of the op its dispatch was formed around (its
root), and the ops inside the dispatch's executable keep their own. So the module is compiled
once more, with locations, only as far as IREE's `stream` phase (no code generation: about a
tenth of a full compile), in the iree-compile subprocess, with the flags of the real compile;
the dispatches and their names are then those of the binary, in the order its command buffers
record them.

Read from the text: each `stream.cmd.execute` region becomes one command buffer, its
`stream.cmd.dispatch` ops in order; each executable's compute ops name the nodes it computes.
Bindings (`stream.binding.subspan`) and constants carry their producers' locations, not the
dispatch's, and are left out. An executable that IREE deduplicated serves several call sites
with one body, whose locations are the first site's: such sites are named by their own
location only.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from ..compile.iree import compile_mlir
from ..compile.options import CompileOptions

_EXECUTABLE = re.compile(r"^(\s*)stream\.executable (?:private |public )?@([\w$.\-]+)")
_EXPORT = re.compile(r"stream\.executable\.export (?:public |private )?@([\w$.\-]+)")
_DISPATCH = re.compile(r"^(\s*)stream\.cmd\.dispatch @[\w$.\-]+::@([\w$.\-]+)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(:\d+)?')
# Lines whose locations are not the dispatch's own computation.
_NOT_COMPUTE = ("stream.binding.subspan", "arith.constant", "func.func", "^bb", "stream.executable.export")
STREAM_FLAGS = ("--compile-to=stream", "--mlir-print-debuginfo", "--mlir-print-local-scope")


@dataclass
class DispatchSite:
    """One dispatch of a command buffer: its function (IREE's export name), the TF nodes it
    came from (its root first) and how many call sites share its executable."""

    key: str
    nodes: tuple
    shared: int = 1


def loc_names(text: str) -> list[str]:
    """The names in the `loc(...)` expressions of `text` (NameLocs, fused or not), in order;
    file names of file:line:col locations are left out."""
    names = []
    start = text.find("loc(")
    while start >= 0:
        depth, i, quoted = 0, start + 3, False
        while i < len(text):
            c = text[i]
            if quoted:  # inside a string: skip escapes, stop at the closing quote
                quoted = c != '"'
                i += 2 if c == "\\" else 1
                continue
            if c == '"':
                quoted = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        for m in _STRING.finditer(text, start + 4, i):
            if not m.group(2):
                names.append(m.group(1).replace('\\"', '"').replace("\\\\", "\\"))
        start = text.find("loc(", i)
    return names


def parse_stream_ir(text: str) -> list[list[DispatchSite]]:
    """`--compile-to=stream` text with locations -> the dispatch sites of each command buffer
    (`stream.cmd.execute` region), in the order they are recorded."""
    lines = text.splitlines()
    body_nodes: dict[str, dict] = {}  # executable -> {node: None}, in first-seen order
    export_of: dict[str, str] = {}  # export (dispatch key) -> executable
    regions: list[list] = []  # [(key, root nodes)] per execute region
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _EXECUTABLE.match(line)
        if m:
            indent, name = m.group(1), m.group(2)
            seen = body_nodes.setdefault(name, {})
            i += 1
            while i < len(lines) and not lines[i].startswith(indent + "}"):
                inner = lines[i]
                e = _EXPORT.search(inner)
                if e:
                    export_of[e.group(1)] = name
                if "loc(" in inner and not any(k in inner for k in _NOT_COMPUTE):
                    seen.update(dict.fromkeys(loc_names(inner)))
                i += 1
            i += 1
            continue
        if "stream.cmd.execute" in line:
            regions.append([])
        m = _DISPATCH.match(line)
        if m and regions:
            indent, op = m.group(1), line
            if line.rstrip().endswith("{"):  # bindings follow; the location ends the op
                while i + 1 < len(lines) and not lines[i + 1].startswith(indent + "}"):
                    i += 1
                op = lines[i + 1] if i + 1 < len(lines) else ""
                i += 1
            regions[-1].append((m.group(2), tuple(dict.fromkeys(loc_names(op)))))
        i += 1
    sites = Counter(key for region in regions for key, _ in region)
    result = []
    for region in regions:
        buffer = []
        for key, root in region:
            body = body_nodes.get(export_of.get(key, ""), {}) if sites[key] == 1 else {}
            buffer.append(DispatchSite(key, tuple(dict.fromkeys((*root, *body))), sites[key]))
        result.append(buffer)
    return result


def body_labels(regions: list[list[DispatchSite]]) -> dict[str, DispatchSite]:
    """Dispatch key -> a site of it: the labels to use when a command buffer of the binary
    matches no region (the first site of each key)."""
    labels = {}
    for region in regions:
        for site in region:
            labels.setdefault(site.key, site)
    return labels


def dispatch_sites(mlir_with_locations: str, options: CompileOptions) -> list[list[DispatchSite]]:
    """Compile the module (StableHLO text with locations) to IREE's stream phase with `options`'
    flags, in the iree-compile subprocess, and read its command buffers' dispatch sites."""
    stream_options = replace(options, extra_flags=[*options.extra_flags, *STREAM_FLAGS])
    text = compile_mlir(mlir_with_locations, stream_options)
    return parse_stream_ir(text.decode() if isinstance(text, bytes) else text)


__all__ = ["DispatchSite", "body_labels", "dispatch_sites", "loc_names", "parse_stream_ir"]
