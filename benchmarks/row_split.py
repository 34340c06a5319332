#!/usr/bin/env python3
"""Row parts against the thread pool: the A/B behind runtime/row_split.py.

    python benchmarks/row_split.py keras_mobilenetv2 bert2_infer keras_resnet50 --repeat 11

For each inference workload (a case of benchmarks/models.py), two Sessions in one process on
the default device (cpu-task): one as hlobridge runs it (a large cluster whose rows stay apart
runs its batch as row parts, one per CPU) and one with HLOBRIDGE_FLAGS --no-row-split (the whole
batch on IREE's pool), timed in blocks in turn, alternating which goes first. The table has each
side's median and best ms/step, their ratio (below 1: the parts are faster) and the parts each
signature ran as ("whole": not split, and why is in the log).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (add_ab_arguments, clear_memory_cache, measured_rows, start,  # noqa: E402
                               table_of, time_block)
from benchmarks.models import interleaved, workloads  # noqa: E402
from hlobridge import flags  # noqa: E402


def started(w, hlobridge_flags: str):
    """A Session past its first run (where its clusters compile and decide on parts) under
    `hlobridge_flags`, the process's own flags given back after."""
    saved = os.environ.get(flags.ENV_VAR)
    os.environ[flags.ENV_VAR] = f"{saved or ''} {hlobridge_flags}".strip()
    flags.from_environment.cache_clear()
    try:
        clear_memory_cache()
        sess, _, _ = start(w, "auto", "cpu-task", None)
    finally:
        if saved is None:
            os.environ.pop(flags.ENV_VAR, None)
        else:
            os.environ[flags.ENV_VAR] = saved
        flags.from_environment.cache_clear()
    return sess


def parts_of(sess) -> str:
    """The row parts of each compiled signature, e.g. "3+2" ("whole" where not split)."""
    found = []
    for plan in sess._plans.values():
        for unit in plan.units:
            for exe in getattr(unit, "executables", {}).values():
                if exe is not None:
                    found.append("+".join(map(str, exe.rows.sizes)) if exe.rows else "whole")
    return ", ".join(found) or "-"


def measure(w, args) -> dict:
    sessions = {"parts": started(w, ""), "pool": started(w, "--no-row-split")}
    _, ms = interleaved({k: (lambda steps, s=sess: time_block(s, w, steps)) for k, sess in sessions.items()}, args)
    parts, pool = statistics.median(ms["parts"]), statistics.median(ms["pool"])
    return {"workload": w.name, "row parts": parts_of(sessions["parts"]),
            "parts ms": f"{parts:.3g} ({min(ms['parts']):.3g})", "pool ms": f"{pool:.3g} ({min(ms['pool']):.3g})",
            "parts/pool": f"{parts / pool:.2f}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_ab_arguments(p)
    args = p.parse_args(argv)
    chosen = [(w,) for w, _, run in workloads(args.models) if run is not None]  # inference runs only
    print(table_of(measured_rows(lambda w: measure(w, args), chosen), args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
