"""What the benchmark scripts share: their timing arguments and their Markdown tables."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_timing_arguments(p: argparse.ArgumentParser, cases: list[str]) -> None:
    """The cases to run and how to time them, the same options in every benchmark."""
    p.add_argument("cases", nargs="*", default=cases)
    p.add_argument("--device", default="cpu-task", help="cpu-task (the Session default), cpu (local-sync) or cuda")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def report(rows: list[dict], table: str, json_out: str | None) -> None:
    """The Markdown table on stdout; every row as JSON too when asked."""
    print(table)
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=2))
