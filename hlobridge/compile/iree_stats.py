"""IREE's own count of what a compiled module does per call: dispatches, executables, fills,
copies (`--iree-scheduling-dump-statistics-*`, written while compiling, no second compile).

`dispatches` is the number of kernel launches per call of the function; `executables` the
number of distinct kernels (identical dispatches are deduplicated), both as IREE 3.13
counts them after its own dispatch formation and ours (passes/ir/fusion.py). The counts are
IREE's aggregate over the module: with data tiling on, they include the dispatches that pack
constant weights once, in the module's initializer.
"""

from __future__ import annotations

import json
from pathlib import Path

KEYS = ("dispatches", "executables", "fills", "copies", "transient_bytes")


def flags(path: str | Path) -> list[str]:
    """The iree-compile flags that make it write its dispatch statistics as JSON to `path` (see `read`)."""
    return ["--iree-scheduling-dump-statistics-format=json",
            f"--iree-scheduling-dump-statistics-file={path}"]


def read(path: str | Path) -> dict:
    """The statistics file -> {"dispatches", "executables", "fills", "copies",
    "transient_bytes"}."""
    data = json.loads(Path(path).read_text())["stream-aggregate"]
    execution = data["execution"]
    return {"dispatches": execution["dispatch-count"],
            "executables": data["executable"]["executable-count"],
            "fills": execution["fill-count"], "copies": execution["copy-count"],
            "transient_bytes": execution["transient-memory-size"]}
