"""Fuzz hlobridge with mutated copies of real graphs: no input may end in a traceback, a crash,
a hang or a memory blow-up.

The corpus is every graph with a case.json in ../shared/graphs (HLOBRIDGE_SHARED_GRAPHS) and
tests/conformance. Mutant `index` of run `seed` is a deterministic function of (seed, index): a
corpus graph, its text (.pbtxt) or binary (.pb) form, one to three stacked mutations, and the
tools it goes through:

  compile     hlobridge-compile --emit stablehlo (every mutant; 1 in 20 compiles a .vmfb instead)
  explain     hlobridge-explain (every mutant)
  session     Session(graph, jit="off").run(init, then the case's fetches) with random feeds for
              the graph's placeholders (half the mutants; 1 in 5 of those with jit="auto", and
              1 in 6 with one feed replaced by something malformed: a ragged list, None, ...)

Each (mutant, tool) is a job run by a persistent worker subprocess (hlobridge imported once)
under RLIMIT_AS (--memory-mb); the parent enforces --timeout per job and restarts a worker that
timed out or died. Outcomes: ok, error (an HlobridgeError, or a CLI's exit 1 with its message:
what a user should see), and the defects: exception (any other exception, with its traceback),
memory (MemoryError under the limit), hang (timed out), crash (the worker died: signal, abort).
Each defect's mutant is written to OUT/defects/<seed>_<index>_<tool>/ (graph + job.json), to
replay (--replay DIR) and to keep as a regression test (tests/e2e/fuzz_regressions/).

    python tools/fuzz_graphs.py --seed 0 --count 5000 --workers 2 --out fuzz-out
    python tools/fuzz_graphs.py --replay fuzz-out/defects/0_17_session_off
    python tools/fuzz_graphs.py --keep fuzz-out/defects/0_17_session_off NAME 'REGEX' [--open REASON]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFECTS = ("exception", "memory", "hang", "crash", "bad_message")
CLEAN = ("ok", "error")


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


def job_for(m: Mutant, tool: str, path: Path) -> dict:
    """What a worker needs to run one tool on one mutant (and what job.json records)."""
    case = m.case.case
    feeds = case.get("feeds") or []
    fetches = [f["name"] if isinstance(f, dict) else f for f in case.get("fetches") or []]
    return {"id": m.id, "tool": tool, "graph": str(path), "describe": m.describe(),
            "kind": case.get("kind"), "feeds": feeds, "fetches": fetches,
            "init_op": case.get("init_op"), "train_op": case.get("train_op") if case.get("kind") == "train" else None,
            "loss": case.get("loss"), "feed_seed": f"{m.seed}:{m.index}", "feed_mutation": m.feed_mutation}


# -- the worker: runs jobs in-process, one JSON line in, one out --------------------------------
def _cli_argv(job: dict, out_dir: str) -> list[str]:
    tool = job["tool"]
    if tool == "explain":
        return [job["graph"]]
    argv = [job["graph"], "-o", os.path.join(out_dir, "out.vmfb" if tool == "compile_vmfb" else "out.mlir")]
    if tool == "compile":
        argv += ["--emit", "stablehlo"]
    inputs = job["feeds"] + (_variable_reads(job["graph"], job["loss"]) if job["kind"] == "train" else [])
    for f in inputs:
        argv += ["--input-shape", f"{f['name']}=" + ",".join(str(2 if d is None else d) for d in f["shape"])]
    if job["kind"] == "train":  # the loss, with the variables' reads as inputs (VarHandleOp never compiles)
        argv += ["--inputs", ",".join(f["name"] for f in inputs), "--outputs", job["loss"]]
    elif job["fetches"]:
        argv += ["--outputs", ",".join(job["fetches"])]
    return argv


def _variable_reads(path: str, loss: str) -> list[dict]:
    """The tensors a training graph reads its variables through (ReadVariableOp of a VarHandleOp,
    a VariableV2 itself), with their shapes: compiled as inputs, they cut the variables off."""
    from hlobridge.errors import HlobridgeError
    from hlobridge.frontend.load import load_graph
    try:
        graph = load_graph(path)
    except HlobridgeError:
        return []  # the CLI reports it
    loss = graph.nodes.get(loss.split(":")[0])
    reads, needed = [], graph.ancestors([loss.name]) if loss else set()
    for node in (graph.nodes[n] for n in sorted(needed)):
        var = node if node.op in ("VariableV2", "Variable") else \
            graph.nodes[node.inputs[0].node] if node.op == "ReadVariableOp" and node.inputs else None
        if var is not None and var.op in ("VariableV2", "Variable", "VarHandleOp") and \
                isinstance(var.attr("shape"), tuple) and None not in var.attr("shape"):
            reads.append({"name": f"{node.name}:0", "shape": list(var.attr("shape"))})
    return reads


def _feed_value(rng, dtype, shape):
    """Random data of a placeholder's declared dtype and shape (unknown dims: 2)."""
    import numpy as np
    from hlobridge import dtypes
    dims = [2 if d is None or d < 0 else d for d in (shape if shape is not None else (2,))]
    if int(np.prod(dims, dtype=np.float64)) > 1 << 20:
        dims = [2] * len(dims)  # a mutated huge shape: a small feed (and an error about its shape)
    if dtype in (dtypes.RESOURCE, dtypes.VARIANT) or np.dtype(dtype) == np.object_:
        return np.full(dims, b"s", dtype=object)
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.kind == "V":
        return rng.standard_normal(dims).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(dims) + 1j).astype(dtype)
    if dtype.kind == "b":
        return rng.random(dims) < 0.5
    return rng.integers(0, 2, dims).astype(dtype)


def _mutate_feed(kind: str, value):
    import numpy as np
    return {"ragged": lambda: [[1.0, 2.0], [3.0]], "none": lambda: None, "string": lambda: "abc",
            "object": lambda: object(), "complex": lambda: value.astype(np.complex64),
            "wrong_rank": lambda: value[None, ...], "scalar": lambda: np.float32(1),
            "huge_list": lambda: [2 ** 70] * 3, "nan": lambda: np.full_like(value, np.nan),
            "non_contiguous": lambda: np.repeat(value, 2, axis=-1)[..., ::2] if value.ndim else value,
            "read_only": lambda: value.copy()}[kind]()


def _session_job(job: dict, cache_dir: str):
    import numpy as np
    import hlobridge
    rng = np.random.default_rng([int(x) for x in job["feed_seed"].split(":")])
    sess = hlobridge.Session(job["graph"], jit="auto" if job["tool"] == "session_auto" else "off",
                             device="cpu", cache_dir=cache_dir)
    graph = sess.graph
    feeds = {f"{name}:0": _feed_value(rng, graph.nodes[name].attr("dtype"), graph.nodes[name].attr("shape"))
             for name in graph.placeholders()}
    if job["feed_mutation"] and feeds:
        name = sorted(feeds)[0]
        feeds[name] = _mutate_feed(job["feed_mutation"], feeds[name])
        if job["feed_mutation"] == "read_only" and isinstance(feeds[name], np.ndarray):
            feeds[name].flags.writeable = False
    if job["init_op"] and job["init_op"] in graph.nodes:
        sess.run(job["init_op"])
    fetches = ([job["train_op"], job["loss"]] if job["train_op"] else []) + job["fetches"]
    sess.run(fetches, feeds)


def run_job(job: dict, cache_dir: str) -> dict:
    """Run one job in this process: {"outcome": ok|error|exception|memory|bad_message, ...}."""
    from hlobridge.cli import compile as compile_cli, explain as explain_cli
    from hlobridge.cli.common import run_main
    from hlobridge.errors import HlobridgeError
    err = io.StringIO()
    try:
        with tempfile.TemporaryDirectory() as out_dir, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            if job["tool"].startswith("session"):
                try:
                    _session_job(job, cache_dir)
                except HlobridgeError as e:
                    print(f"Session: error: {e}", file=sys.stderr)
                    status = 1
                else:
                    status = 0
            else:
                cli = explain_cli if job["tool"] == "explain" else compile_cli
                status = run_main(cli.PROG, cli.main, _cli_argv(job, out_dir))
    except MemoryError:
        return {"outcome": "memory", "message": "MemoryError", "traceback": _tail(), "where": _where()}
    except BaseException as e:  # noqa: BLE001  (everything else is the defect being looked for)
        return {"outcome": "exception", "message": f"{type(e).__name__}: {str(e)[:300]}",
                "traceback": _tail(), "where": _where()}
    if status == 0:
        return {"outcome": "ok"}
    lines = [line for line in err.getvalue().splitlines() if ": error: " in line]
    message = err.getvalue()[err.getvalue().find(lines[0]):] if lines else err.getvalue()
    if not lines or "Traceback" in message or not lines[0].split(": error: ", 1)[1].strip():
        return {"outcome": "bad_message", "message": message[-500:]}
    return {"outcome": "error", "message": message[:500]}


def _tail(frames: int = 6) -> str:
    return "".join(traceback.format_exc().splitlines(keepends=True)[-2 * frames - 1:])


def _where() -> str:
    """The innermost hlobridge frame of the exception being handled: 'path:line in function'."""
    tb = traceback.extract_tb(sys.exc_info()[2])
    own = [f for f in tb if "/hlobridge/" in f.filename or "/passes/" in f.filename or "/dialects/" in f.filename]
    f = (own or tb)[-1]
    path = f.filename.split("/hlobridge/")[-1] if "/hlobridge/" in f.filename else f.filename
    return f"{path}:{f.lineno} in {f.name}"


def worker_main(memory_mb: int) -> None:
    """Read jobs (JSON lines) from stdin, answer on the protocol fd; stdout/stderr go to /dev/null."""
    import resource
    if memory_mb:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    answer = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    import warnings
    warnings.simplefilter("ignore")
    import hlobridge.cli.compile, hlobridge.cli.explain  # noqa: E401,F401  (imported once, before any job)
    cache_dir = os.environ["HLOBRIDGE_CACHE_DIR"]
    answer.write("ready\n")
    answer.flush()
    for line in sys.stdin:
        result = run_job(json.loads(line), cache_dir)
        answer.write(json.dumps(result) + "\n")
        answer.flush()


class Worker:
    """A worker subprocess; `run` enforces the timeout and restarts the worker after a hang or crash."""

    def __init__(self, memory_mb: int, cache_dir: str):
        self.memory_mb, self.cache_dir, self.proc = memory_mb, cache_dir, None

    def _start(self):
        env = dict(os.environ, HLOBRIDGE_CACHE_DIR=self.cache_dir, PYTHONFAULTHANDLER="1")
        env.pop("HLOBRIDGE_FLAGS", None)
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", "--memory-mb", str(self.memory_mb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=ROOT, start_new_session=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"fuzz worker failed to start: {self.proc.stderr.read()[-2000:]}")

    def run(self, job: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:  # timed out: kill the worker and its children (iree-compile)
            self.stop()
            return {"outcome": "hang", "message": f"no answer in {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        rc = self.proc.wait()  # end of file: the worker died
        stderr = self.proc.stderr.read()[-3000:]
        self.proc = None
        return {"outcome": "crash", "message": f"worker died (exit status {rc})", "traceback": stderr}

    def stop(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None


# -- the run ---------------------------------------------------------------------------------
TIMEOUTS = {"compile": 1.0, "explain": 1.0, "session_off": 2.0, "compile_vmfb": 4.0, "session_auto": 4.0}


def save_mutant(m: Mutant, tool: str, job: dict, result: dict, out: Path) -> Path:
    d = out / f"{m.id}_{tool}"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"graph.{m.fmt}").write_bytes(m.data)
    job = dict(job, graph=f"graph.{m.fmt}")
    (d / "job.json").write_text(json.dumps({"job": job, "result": result}, indent=1) + "\n")
    return d


def _error_kind(message: str) -> str:
    """A clean error's message without the tool, file and names: what kind of error it is."""
    text = message.split(": error: ", 1)[-1].split("\n")[0]
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\S*/\S*|\d+", "_", text)
    return text[:70]


def signature(tool: str, result: dict) -> str:
    """A defect class: tool family, outcome, exception type and where it was raised."""
    kind = result["message"].split(":", 1)[0] if result["outcome"] == "exception" else ""
    return f"{tool.split('_')[0]} {result['outcome']} {kind} {result.get('where', '')}".strip()


def fuzz(seed: int, count: int, *, start: int = 0, workers: int = 1, memory_mb: int = 4096,
         timeout: float = 30.0, out: Path | None = None, corpus: list[Seed] | None = None,
         session_rate: float = 0.5, tools: set | None = None, progress=None) -> dict:
    """Run mutants start..start+count-1 of `seed`; returns the summary (counts and defects)."""
    corpus = corpus or load_corpus()
    tmp = Path(tempfile.mkdtemp(prefix="hlobridge-fuzz-"))
    pool = [Worker(memory_mb, str(tmp / "cache")) for _ in range(workers)]
    counts, per_tool = collections.Counter(), collections.defaultdict(collections.Counter)
    defects, done, errors = [], 0, collections.Counter()

    def one(k: int, index: int):
        worker = pool[k]
        m = make_mutant(seed, index, corpus, session_rate)
        path = tmp / f"w{k}" / f"graph.{m.fmt}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(m.data)
        results = []
        for tool in m.tools:
            if tools and tool.split("_")[0] not in tools and tool not in tools:
                continue
            job = job_for(m, tool, path)
            results.append((m, tool, job, worker.run(job, timeout * TIMEOUTS[tool])))
        return results

    todo = iter(range(start, start + count))
    lock = threading.Lock()

    def drain(k: int):
        nonlocal done
        while True:
            with lock:
                index = next(todo, None)
            if index is None:
                return
            results = one(k, index)
            with lock:
                worst = "ok"
                for m, tool, job, r in results:
                    per_tool[tool][r["outcome"]] += 1
                    if r["outcome"] in DEFECTS:
                        worst = r["outcome"]
                        rec = {"id": m.id, "index": m.index, "tool": tool, "mutation": m.describe(), **r,
                               "signature": signature(tool, r)}
                        if out is not None:
                            rec["saved"] = str(save_mutant(m, tool, job, r, out / "defects"))
                        defects.append(rec)
                    elif r["outcome"] == "error":
                        worst = "error" if worst == "ok" else worst
                        errors[_error_kind(r["message"])] += 1
                counts[worst] += 1
                done += 1
                if progress:
                    progress(done, counts)

    try:
        threads = [threading.Thread(target=drain, args=(k,)) for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for w in pool:
            w.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    defects.sort(key=lambda d: (d["index"], d["tool"]))
    classes = collections.Counter(d["signature"] for d in defects)
    summary = {"seed": seed, "start": start, "count": count, "mutants": dict(counts),
               "jobs": {t: dict(c) for t, c in sorted(per_tool.items())},
               "errors": dict(errors.most_common()), "defect_classes": dict(classes.most_common()),
               "defects": defects}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _saved_job(folder: Path) -> dict:
    job = json.loads((folder / "job.json").read_text())["job"]
    return dict(job, graph=str((folder / job["graph"]).resolve()))


def _saved_timeout(folder: Path, default: float) -> float:
    """A regression's own time limit (expect.timeout: a former hang need not wait the default)."""
    return json.loads((folder / "job.json").read_text()).get("expect", {}).get("timeout", default)


def replay_all(folders, memory_mb: int = 4096, timeout: float = 120.0) -> dict:
    """Run saved jobs (defect folders or regression tests) in one fresh worker: {folder name: result}."""
    with tempfile.TemporaryDirectory(prefix="hlobridge-fuzz-") as tmp:
        w = Worker(memory_mb, tmp)
        try:
            return {Path(f).name: w.run(_saved_job(Path(f)), _saved_timeout(Path(f), timeout)) for f in folders}
        finally:
            w.stop()


def keep(defect: Path, name: str, message: str, open_reason: str | None) -> Path:
    """Copy a defect folder into tests/e2e/fuzz_regressions/NAME with the error it should give."""
    saved = json.loads((defect / "job.json").read_text())
    dest = ROOT / "tests" / "e2e" / "fuzz_regressions" / name
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(defect / saved["job"]["graph"], dest / saved["job"]["graph"])
    result = saved["result"]
    expect = {"message": message, "found": f"{defect.name}: {saved['job']['describe']}",
              "defect": f"{result['message'][:200]} ({result.get('where', result['outcome'])})"}
    if open_reason:
        expect["open"] = open_reason
    (dest / "job.json").write_text(json.dumps({"job": saved["job"], "expect": expect}, indent=1) + "\n")
    return dest


def format_summary(s: dict) -> str:
    lines = [f"seed {s['seed']}, mutants {s['start']}..{s['start'] + s['count'] - 1}: " +
             ", ".join(f"{k} {v}" for k, v in sorted(s["mutants"].items()))]
    for tool, c in s["jobs"].items():
        lines.append(f"  {tool}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    if s["defect_classes"]:
        lines.append(f"{len(s['defects'])} defect(s) in {len(s['defect_classes'])} class(es):")
        for sig, n in s["defect_classes"].items():
            d = next(d for d in s["defects"] if d["signature"] == sig)
            lines.append(f"  {n:4d}x {sig}\n        {d['message'][:160]}\n        e.g. {d['id']} "
                         f"{d['tool']}: {d['mutation'][:200]}" + (f"\n        {d['saved']}" if "saved" in d else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=200, help="number of mutants")
    p.add_argument("--start", type=int, default=0, help="first mutant index")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--memory-mb", type=int, default=4096, help="RLIMIT_AS per worker (default 4096)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds per cheap job; vmfb compiles and jit=auto runs get 4x (default 30)")
    p.add_argument("--session-rate", type=float, default=0.5, help="share of mutants also run in a Session")
    p.add_argument("--tools", default=None, help="comma-separated: compile,explain,session (default all)")
    p.add_argument("--max-graph-bytes", type=int, default=None, help="skip corpus graphs larger than this")
    p.add_argument("--out", type=Path, default=None, help="write summary.json and defects/ here")
    p.add_argument("--replay", type=Path, nargs="+", default=None,
                   help="run saved defect (or regression) folders and print the results")
    p.add_argument("--keep", nargs=3, metavar=("DEFECT_DIR", "NAME", "MESSAGE_REGEX"), default=None,
                   help="make a defect folder a regression test in tests/e2e/fuzz_regressions/NAME")
    p.add_argument("--open", default=None, metavar="REASON", help="with --keep: the defect is not fixed yet")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.memory_mb)
        return 0
    if args.replay:
        print(json.dumps(replay_all(args.replay, args.memory_mb, args.timeout * 4), indent=1))
        return 0
    if args.keep:
        print(keep(Path(args.keep[0]), args.keep[1], args.keep[2], args.open))
        return 0
    t0 = time.time()

    def progress(done, counts):
        if done % 100 == 0 or done == args.count:
            print(f"[{time.time() - t0:6.0f} s] {done}/{args.count} " +
                  ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), file=sys.stderr, flush=True)

    s = fuzz(args.seed, args.count, start=args.start, workers=args.workers, memory_mb=args.memory_mb,
             timeout=args.timeout, out=args.out, corpus=load_corpus(args.max_graph_bytes),
             session_rate=args.session_rate, tools=set(args.tools.split(",")) if args.tools else None,
             progress=progress)
    print(format_summary(s))
    print(f"{time.time() - t0:.0f} s")
    return 1 if s["defects"] else 0


if __name__ == "__main__":
    sys.exit(main())
