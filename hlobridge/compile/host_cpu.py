"""This machine's CPU as /proc/cpuinfo describes it, read once per process: what
`--iree-llvmcpu-target-cpu=host` compiles for (the compile cache's key) and which of IREE's
CPU tile shapes it gets (passes/ir/split_narrow_rows.py)."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def cpuinfo_lines() -> tuple[str, ...] | None:
    """/proc/cpuinfo's lines; None where it cannot be read (not Linux)."""
    try:
        return tuple(Path("/proc/cpuinfo").read_text().splitlines())
    except OSError:
        return None


def has_feature(name: str) -> bool:
    """Whether the CPU lists `name` (e.g. "avx512f") among its flags (x86) or features (Arm)."""
    return any(name in line.split(":", 1)[-1].split() for line in cpuinfo_lines() or ()
               if line.startswith(("flags", "Features")))
