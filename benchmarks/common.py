"""What the benchmark scripts share: where the cases are, what one row times, starting and
timing a Session, their options and their tables."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hlobridge.compile.cache import clear_memory_cache
from hlobridge.runtime.session import Session
from tests.corpus import Case

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HLOBRIDGE_SHARED_GRAPHS", ROOT.parent / "shared" / "graphs"))


@dataclass
class Workload:
    """What one benchmark row times: a training case's step (after its init), or one run of
    an inference case; `expected` holds TensorFlow's recorded value of each fetch (None where
    nothing is recorded: the train op)."""

    name: str
    graph: Path
    init: str | None
    init_feeds: dict
    fetches: list
    feeds: dict
    expected: list

    @classmethod
    def of_case(cls, case: Case, graph: Path | None = None) -> list[Workload]:
        """A training case's first step (the corpus protocol), named as the case; an inference
        case's runs, named CASE/RUN (runs that must fail are not timed)."""
        meta, graph = case.meta, graph or case.graph_path
        if meta["kind"] == "train":
            init, init_feeds, fetches, feeds = case.first_run()
            first_loss = case.array(meta["train"]["loss_per_step"])[0]
            return [cls(meta["name"], graph, init, init_feeds, fetches, feeds, [None, first_loss])]
        return [cls(f"{meta['name']}/{run['name']}", graph, None, {}, list(run["expected"]),
                    {n: case.array(k) for n, k in run["feeds"].items()},
                    [case.array(k) for k in run["expected"].values()])
                for run in meta["runs"] if "expected_error" not in run]


def start(w: Workload, jit: str, device: str, cache_dir, compile_options=None) -> tuple[Session, float, list]:
    """A new Session (`compile_options`: the Session's default for `device` where None): init
    (training) and the first run; the seconds taken and what it fetched."""
    t = time.perf_counter()
    sess = Session(w.graph, jit=jit, device=device, cache_dir=cache_dir, compile_options=compile_options)
    if w.init:
        sess.run(w.init, w.init_feeds)
    out = sess.run(w.fetches, w.feeds)
    return sess, time.perf_counter() - t, out


def cold_and_warm_start(w: Workload, jit: str, device: str) -> tuple[Session, float, float, list]:
    """start() with empty caches (disk and memory), then again with every cluster in the disk
    cache and the memory cache cleared, as a second process would start. Returns the second
    Session, both times, and what the cold start fetched."""
    with tempfile.TemporaryDirectory(prefix="hlobridge-bench-") as cache:
        clear_memory_cache()
        sess, cold_s, out = start(w, jit, device, cache)
        del sess
        clear_memory_cache()
        sess, warm_s, _ = start(w, jit, device, cache)
    return sess, cold_s, warm_s, out


def time_block(sess: Session, w: Workload, steps: int) -> float:
    """ms per run of `steps` runs in a row."""
    t = time.perf_counter()
    for _ in range(steps):
        sess.run(w.fetches, w.feeds)
    return (time.perf_counter() - t) / steps * 1e3


def steady(sess: Session, w: Workload, steps: int, repeat: int, warmup: int) -> list[float]:
    """ms per run of each of `repeat` blocks, after `warmup` untimed runs."""
    for _ in range(warmup):
        sess.run(w.fetches, w.feeds)
    return [time_block(sess, w, steps) for _ in range(repeat)]


def add_timing_arguments(p: argparse.ArgumentParser, cases: list[str] | None, steps: int | None = 20,
                         repeat: int = 5, warmup: int = 3) -> None:
    """The cases to run (positional, unless `cases` is None) and how to time them, the same
    options in every benchmark."""
    if cases is not None:
        p.add_argument("cases", nargs="*", default=cases)
    p.add_argument("--device", default="cpu-task", help="cpu-task (the Session default), cpu (local-sync) or cuda")
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--repeat", type=int, default=repeat)
    p.add_argument("--warmup", type=int, default=warmup)


def add_ab_arguments(p: argparse.ArgumentParser) -> None:
    """The options of an A/B of two Sessions per workload, timed in blocks in turn
    (benchmarks/iree_flags.py, benchmarks/row_split.py: models.interleaved reads them)."""
    p.add_argument("models", nargs="+", help="cases or CASE/RUN, as benchmarks/models.py takes them")
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=None, help="runs per block (default: about --block-s)")
    p.add_argument("--block-s", type=float, default=0.5)
    p.add_argument("--markdown", action="store_true")


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def text_table(head: list[str], rows: list[list[str]]) -> str:
    """The same cells in aligned columns, for a terminal."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows])


def table_of(rows: list[dict], markdown: bool) -> str:
    """Rows of string cells (dicts with the same keys, in column order) as one table."""
    head = list(rows[0])
    cells = [[row[k] for k in head] for row in rows]
    return markdown_table(head, cells) if markdown else text_table(head, cells)


def measured_rows(measure, cases) -> list[dict]:
    """`measure(*case)` of each case, each row shown on stderr as it comes (a sweep is slow)."""
    rows = []
    for case in cases:
        rows.append(measure(*case))
        print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), file=sys.stderr, flush=True)
    return rows


def report(rows: list[dict], table: str, json_out: str | None) -> None:
    """The table on stdout; every row as JSON too when asked."""
    print(table)
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=2))
