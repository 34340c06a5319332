"""The fuzzer's mutants (tools/fuzz_graphs.py runs them): the corpus, and seeded mutators of a
GraphDef's text (.pbtxt lines and node blocks) and binary form (.pb bytes and wire-format tree).

Mutant `index` of run `seed` is a function of (seed, index, corpus) alone: `make_mutant` seeds a
`random.Random` with both, picks a corpus graph, its form, one to three mutations and the tools.
"""

from __future__ import annotations

import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# -- corpus -------------------------------------------------------------------------------------
def shared_graphs_dir() -> Path:
    """../shared/graphs next to the repository, or $HLOBRIDGE_SHARED_GRAPHS (as tests/conftest.py)."""
    return Path(os.environ.get("HLOBRIDGE_SHARED_GRAPHS", ROOT.parent / "shared" / "graphs"))


@dataclass
class Seed:
    """One corpus graph: its text and binary forms and its case.json (feeds, fetches, init/train ops)."""

    name: str
    path: Path
    case: dict

    @property
    def text(self) -> str:
        return (self.path / "graph.pbtxt").read_text()

    @property
    def binary(self) -> bytes:
        return (self.path / "graph.pb").read_bytes()


def load_corpus(max_bytes: int | None = None) -> list[Seed]:
    """Every graph with a case.json, graph.pbtxt and graph.pb, sorted by name (smaller than
    max_bytes of text, when given)."""
    seeds = []
    for base in (shared_graphs_dir(), ROOT / "tests" / "conformance"):
        for case in sorted(base.glob("*/case.json")):
            d = case.parent
            if not ((d / "graph.pbtxt").is_file() and (d / "graph.pb").is_file()):
                continue
            if max_bytes is not None and (d / "graph.pbtxt").stat().st_size > max_bytes:
                continue
            seeds.append(Seed(d.name, d, json.loads(case.read_text())))
    if not seeds:
        raise SystemExit(f"no corpus graphs found (looked in {shared_graphs_dir()} and tests/conformance)")
    return sorted(seeds, key=lambda s: s.name)


# -- text mutators ----------------------------------------------------------------------------
DTYPES = ["DT_VARIANT", "DT_STRING", "DT_RESOURCE", "DT_INVALID", "DT_COMPLEX64", "DT_COMPLEX128",
          "DT_BOOL", "DT_INT64", "DT_INT8", "DT_UINT4", "DT_HALF", "DT_BFLOAT16", "DT_DOUBLE",
          "DT_FLOAT_REF", "DT_INT32", "DT_FLOAT", "DT_QINT8", "DT_FLOAT8_E5M2", "DT_UINT64"]
INTS = [2 ** 40, 2 ** 62, 2 ** 63 - 1, -(2 ** 63), 2 ** 31, -1, -2, -(2 ** 31), 0, 1, 3, 65537]
FLOATS = ["nan", "-nan", "inf", "-inf", "1e38", "-1e38", "3.4e39", "0", "-0", "1e-45"]
STRINGS = ["", "VALID", "SAME", "NCHW", "NDHWC", "EXPLICIT", "garbage", "x" * 300, "\\377\\000",
           "ij,jk->ik", "...", "/device:XLA_CPU:0", "/device:GPU:7"]
_NUMBER = re.compile(r"^(\s*)(size|i|int_val|int64_val|f|float_val|double_val|half_val|bool_val|"
                     r"version_number|producer|min_consumer|output_arg_index|number_attr)?(:\s*)"
                     r"(-?[0-9][0-9.e+-]*|nan|-?inf|true|false)\s*$")


class TextGraph:
    """A .pbtxt as lines, with the node blocks (`node {` / `node_def {`) located by indentation."""

    def __init__(self, text: str):
        self.lines = text.split("\n")

    @property
    def blocks(self) -> list[tuple[int, int, str]]:
        """(start, end, name) of every node block: lines[start] opens it, lines[end] closes it."""
        blocks = []
        for i, line in enumerate(self.lines):
            if line.strip() in ("node {", "node_def {") and i + 1 < len(self.lines):
                m = re.match(r'\s*name: "(.*)"', self.lines[i + 1])
                end = self.block_end(i)
                if m and end != i:
                    blocks.append((i, end, m.group(1)))
        return blocks

    def text(self) -> str:
        return "\n".join(self.lines)

    def matching(self, pattern: str) -> list[int]:
        rx = re.compile(pattern)
        return [i for i, line in enumerate(self.lines) if rx.search(line)]

    def block_end(self, start: int) -> int:
        """The line closing the block opened at `start` (by indentation; itself if not found)."""
        indent = self.lines[start][: len(self.lines[start]) - len(self.lines[start].lstrip())]
        return next((j for j in range(start + 1, len(self.lines)) if self.lines[j] == indent + "}"), start)

    def insert_input(self, block, value: str) -> None:
        """Add `input: "value"` to a node block, after its last input (or its op line)."""
        s, e, _ = block
        at = max([i for i in range(s, e) if self.lines[i].lstrip().startswith(("input:", "op:"))] or [s + 1])
        indent = self.lines[s + 1][: len(self.lines[s + 1]) - len(self.lines[s + 1].lstrip())]
        self.lines.insert(at + 1, f'{indent}input: "{value}"')


def _t_truncate(rng, g: TextGraph) -> str:
    text = g.text()
    cut = rng.randrange(len(text))
    g.lines = text[:cut].split("\n")
    return f"truncate at char {cut}"


def _drop_or_duplicate(rng, g: TextGraph, start: int, end: int, what: str) -> str:
    if rng.random() < 0.5:
        del g.lines[start:end + 1]
        return f"drop {what} (line {start + 1})"
    g.lines[end + 1:end + 1] = g.lines[start:end + 1]
    return f"duplicate {what} (line {start + 1})"


def _t_line(rng, g: TextGraph) -> str:
    i = rng.randrange(len(g.lines))
    return _drop_or_duplicate(rng, g, i, i, "line")


def _t_block(rng, g: TextGraph) -> str:
    opens = g.matching(r"\{\s*$")
    if not opens:
        return _t_line(rng, g)
    s = rng.choice(opens)
    return _drop_or_duplicate(rng, g, s, g.block_end(s), f"block '{g.lines[s].strip()}'")


def _t_op(rng, g: TextGraph) -> str:
    ops = g.matching(r'^\s*op: "')
    if len(ops) < 2:
        return _t_line(rng, g)
    a, b = rng.sample(ops, 2)
    if rng.random() < 0.5:
        g.lines[a], g.lines[b] = g.lines[b], g.lines[a]
        return f"swap ops of lines {a + 1} and {b + 1}"
    g.lines[a] = g.lines[b]
    return f"op of line {a + 1} replaced by line {b + 1}'s ({g.lines[b].strip()})"


def _t_dtype(rng, g: TextGraph) -> str:
    lines = g.matching(r"\b(type|dtype): DT_")
    if not lines:
        return _t_line(rng, g)
    i = rng.choice(lines)
    new = rng.choice(DTYPES)
    g.lines[i] = re.sub(r"DT_\w+", new, g.lines[i])
    return f"dtype at line {i + 1} -> {new}"


def _t_number(rng, g: TextGraph) -> str:
    lines = [i for i, line in enumerate(g.lines) if _NUMBER.match(line)]
    if not lines:
        return _t_line(rng, g)
    i = rng.choice(lines)
    m = _NUMBER.match(g.lines[i])
    new = str(rng.choice(INTS + FLOATS if rng.random() < 0.1 else
                         FLOATS if m.group(2) in ("f", "float_val", "double_val", "half_val") else INTS))
    g.lines[i] = f"{m.group(1)}{m.group(2) or ''}{m.group(3)}{new}"
    return f"number at line {i + 1} ({m.group(2)}) -> {new}"


def _t_string(rng, g: TextGraph) -> str:
    lines = g.matching(r'^\s*s: "') + g.matching(r'tensor_content: "')
    if not lines:
        return _t_line(rng, g)
    i = rng.choice(lines)
    if "tensor_content" in g.lines[i]:
        body = g.lines[i].split('"', 1)[1].rsplit('"', 1)[0]
        cut = rng.randrange(len(body) + 1)
        body = body[:cut].rstrip("\\0123456789") if rng.random() < 0.7 else body * 2
        g.lines[i] = re.sub(r'".*"', lambda _: f'"{body}"', g.lines[i])
        return f"tensor_content at line {i + 1} resized to {len(body)} escaped chars"
    new = rng.choice(STRINGS)
    g.lines[i] = re.sub(r'".*"', lambda _: f'"{new}"', g.lines[i])
    return f"string at line {i + 1} -> '{new[:20]}'"


def _t_edge(rng, g: TextGraph) -> str:
    blocks = g.blocks
    inputs = g.matching(r'^\s*input: "')
    if inputs and rng.random() < 0.4:
        i = rng.choice(inputs)
        del g.lines[i]
        return f"cut edge at line {i + 1}"
    if not blocks:
        return _t_line(rng, g)
    block = rng.choice(blocks)
    src = rng.choice(blocks)[2]
    value = rng.choice([src, f"{src}:{rng.randrange(4)}", f"^{src}", f"{src}:{rng.choice(INTS)}", "nowhere"])
    g.insert_input(block, value)
    return f"add input '{value}' to '{block[2]}'"


def _t_cycle(rng, g: TextGraph) -> str:
    """Node A reads B: make B (or B's ancestor, a few edges up) read A."""
    blocks = g.blocks
    by_name = {n: (s, e, n) for s, e, n in blocks}
    readers = [(b, m.group(1)) for b in blocks for i in range(b[0], b[1])
               if (m := re.match(r'\s*input: "\^?([^":]+)', g.lines[i])) and m.group(1) in by_name]
    if not readers:
        return _t_edge(rng, g)
    (a, src) = rng.choice(readers)
    target = by_name[src]
    for _ in range(rng.randrange(3)):  # walk up a few edges for a longer cycle
        ups = [m.group(1) for i in range(target[0], target[1])
               if (m := re.match(r'\s*input: "\^?([^":]+)', g.lines[i])) and m.group(1) in by_name]
        if not ups:
            break
        target = by_name[rng.choice(ups)]
    g.insert_input(target, a[2] if rng.random() < 0.8 else f"^{a[2]}")
    return f"cycle: '{target[2]}' reads '{a[2]}'"


def _t_rename(rng, g: TextGraph) -> str:
    blocks = g.blocks
    if not blocks:
        return _t_line(rng, g)
    s, _, name = rng.choice(blocks)
    new = rng.choice([rng.choice(blocks)[2], name + "_renamed", "", "a:1", "^b", "x" * 200])
    g.lines[s + 1] = re.sub(r'".*"', lambda _: f'"{new}"', g.lines[s + 1])
    return f"rename '{name}' -> '{new[:40]}'"


TEXT_MUTATORS = {"truncate": _t_truncate, "line": _t_line, "block": _t_block, "op": _t_op,
                 "dtype": _t_dtype, "number": _t_number, "string": _t_string, "edge": _t_edge,
                 "cycle": _t_cycle, "rename": _t_rename}
# Semantic mutators are weighted up: a truncated file mostly tests the protobuf parser.
TEXT_WEIGHTS = {"truncate": 1, "line": 2, "block": 3, "op": 4, "dtype": 4, "number": 5, "string": 2,
                "edge": 3, "cycle": 2, "rename": 1}


# -- binary mutators --------------------------------------------------------------------------
def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        shift += 7
        if not b & 0x80:
            return value, pos


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative numbers: ten-byte two's complement, as protobuf writes them
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        out.append(b | (0x80 if value else 0))
        if not value:
            return bytes(out)


def parse_wire(buf: bytes, depth: int = 0):
    """Protobuf wire format -> [[field, wiretype, value]]: value an int (varint), bytes (fixed), or
    for length-delimited fields a nested list when the payload parses as a message, else bytes.
    Raises ValueError when `buf` is not a message."""
    fields, pos = [], 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ValueError("field 0")
        if wt == 0:
            value, pos = _read_varint(buf, pos)
        elif wt in (1, 5):
            size = 8 if wt == 1 else 4
            value, pos = buf[pos:pos + size], pos + size
        elif wt == 2:
            size, pos = _read_varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
            if depth < 10 and 2 <= len(value) < 65536:
                try:
                    value = parse_wire(value, depth + 1)
                except ValueError:
                    pass
        else:
            raise ValueError("wire type")
        if pos > len(buf):
            raise ValueError("truncated")
        fields.append([num, wt, value])
    return fields


def write_wire(fields) -> bytes:
    out = bytearray()
    for num, wt, value in fields:
        out += _varint(num << 3 | wt)
        if wt == 0:
            out += _varint(value)
        elif wt == 2:
            payload = write_wire(value) if isinstance(value, list) else value
            out += _varint(len(payload)) + payload
        else:
            out += value
    return bytes(out)


def _wire_sites(fields, out):
    """Every (parent list, index) of the tree, depth first."""
    for i, f in enumerate(fields):
        out.append((fields, i))
        if isinstance(f[2], list):
            _wire_sites(f[2], out)
    return out


def _b_bytes(rng, data: bytearray) -> str:
    kind = rng.choice(["truncate", "flip", "insert", "delete"])
    at = rng.randrange(len(data))
    if kind == "truncate":
        del data[at:]
        return f"truncate at byte {at}"
    if kind == "flip":
        data[at] ^= 1 << rng.randrange(8)
        return f"flip a bit of byte {at}"
    if kind == "insert":
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        return f"insert bytes at {at}"
    n = rng.randint(1, 16)
    del data[at:at + n]
    return f"delete {n} bytes at {at}"


def _b_fields(rng, data: bytearray) -> str:
    """A structural edit of the wire tree (lengths recomputed): a varint set to a huge, negative
    or zero value, or a field dropped or duplicated."""
    try:
        tree = parse_wire(bytes(data))
    except ValueError:
        return _b_bytes(rng, data)
    sites = _wire_sites(tree, [])
    varints = [s for s in sites if s[0][s[1]][1] == 0]
    kind = rng.choice(["varint", "varint", "drop", "duplicate"])
    if kind == "varint" and varints:
        parent, i = rng.choice(varints)
        old, new = parent[i][2], rng.choice(INTS + [rng.randrange(1, 200)])
        parent[i][2] = new
        desc = f"varint field {parent[i][0]} (#{sites.index((parent, i))}) {old} -> {new}"
    else:
        parent, i = rng.choice(sites)
        desc = f"{'drop' if kind == 'drop' else 'duplicate'} field {parent[i][0]} (#{sites.index((parent, i))})"
        if kind == "drop":
            del parent[i]
        else:
            parent.insert(i, [parent[i][0], parent[i][1], parent[i][2]])
    data[:] = write_wire(tree)
    return desc


# -- mutants ----------------------------------------------------------------------------------
FEED_MUTATIONS = ["ragged", "none", "string", "object", "complex", "wrong_rank", "scalar", "huge_list",
                  "non_contiguous", "read_only", "nan"]


@dataclass
class Mutant:
    seed: int
    index: int
    case: Seed
    fmt: str            # "pbtxt" | "pb"
    data: bytes
    mutations: list[str]
    tools: list[str]    # job kinds: compile, compile_vmfb, explain, session_off, session_auto
    feed_mutation: str | None

    @property
    def id(self) -> str:
        return f"{self.seed}_{self.index}"

    def describe(self) -> str:
        feed = f"; feed: {self.feed_mutation}" if self.feed_mutation else ""
        return f"{self.case.name}/graph.{self.fmt}: " + "; ".join(self.mutations) + feed


def make_mutant(seed: int, index: int, corpus: list[Seed], session_rate: float = 0.5) -> Mutant:
    """Mutant `index` of run `seed`: the same (seed, index, corpus) always gives the same mutant."""
    rng = random.Random(f"hlobridge-fuzz:{seed}:{index}")
    case = rng.choice(corpus)
    n = rng.choice([1, 1, 1, 2, 2, 3])
    if rng.random() < 0.7:
        fmt, g = "pbtxt", TextGraph(case.text)
        names = rng.choices(list(TEXT_WEIGHTS), weights=list(TEXT_WEIGHTS.values()), k=n)
        mutations = [TEXT_MUTATORS[m](rng, g) for m in names]
        data = g.text().encode()
    else:
        fmt, buf = "pb", bytearray(case.binary)
        mutations = [(_b_fields if rng.random() < 0.8 else _b_bytes)(rng, buf) for _ in range(n)]
        data = bytes(buf)
    tools = ["compile_vmfb" if rng.random() < 0.05 else "compile", "explain"]
    feed_mutation = None
    if rng.random() < session_rate:
        tools.append("session_auto" if rng.random() < 0.2 else "session_off")
        if rng.random() < 1 / 6:
            feed_mutation = rng.choice(FEED_MUTATIONS)
    return Mutant(seed, index, case, fmt, data, mutations, tools, feed_mutation)
