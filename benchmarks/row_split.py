#!/usr/bin/env python3
"""Row parts against the thread pool, and an odd batch's row cut in two against none: the A/B
behind runtime/row_split.py and analysis/layer_cut.py.

    python benchmarks/row_split.py keras_mobilenetv2 bert2_infer keras_resnet50 --repeat 11

For each inference workload (a case of benchmarks/models.py), three Sessions in one process on
the default device (cpu-task): one with the row parts kept without a trial (HLOBRIDGE_FLAGS
--no-row-split-trial: a large cluster whose rows stay apart runs its batch as row parts, one
per CPU; an odd batch on two CPUs as two equal parts and its last row cut in two between
layers), one also with --no-row-cut (the odd row in one part) and one with --no-row-split (the
whole batch on IREE's pool), timed in blocks in turn, rotating which goes first. The table has
each side's median and best ms/step, the ratios (below 1: the parts are faster), the parts each
signature ran as ("whole": not split, and why is in the log; "+ a cut row": the odd row in
halves), and which way the Session's own trial kept on this machine (a fourth Session, run
through its trial's calls first).
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
from hlobridge.runtime.row_split import TRIAL_CALLS, TRIAL_WARMUP  # noqa: E402


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
                    found.append(("+".join(map(str, exe.rows.sizes)) + (" + a cut row" if exe.rows.piped else ""))
                                 if exe.rows else "whole")
    return ", ".join(found) or "-"


def trial_kept(w) -> str:
    """What the Session's trial (row_split.SplitTrial) keeps for `w` in a Session of its own:
    "parts" or "pool" ("-" where the call is not split)."""
    sess = started(w, "")
    if parts_of(sess) == "whole":
        return "-"
    for _ in range(2 * (TRIAL_WARMUP + TRIAL_CALLS)):
        sess.run(w.fetches, w.feeds)
    return "pool" if parts_of(sess) == "whole" else "parts"


def measure(w, args) -> dict:
    kept = trial_kept(w)
    sessions = {"parts": started(w, "--no-row-split-trial"), "uncut": started(w, "--no-row-split-trial --no-row-cut"),
                "pool": started(w, "--no-row-split")}
    _, ms = interleaved({k: (lambda steps, s=sess: time_block(s, w, steps)) for k, sess in sessions.items()}, args)
    mid = {k: statistics.median(v) for k, v in ms.items()}
    row = {"workload": w.name, "row parts": parts_of(sessions["parts"]), "trial kept": kept}
    row.update({f"{k} ms": f"{mid[k]:.3g} ({min(ms[k]):.3g})" for k in sessions})
    row.update({"parts/uncut": f"{mid['parts'] / mid['uncut']:.2f}", "parts/pool": f"{mid['parts'] / mid['pool']:.2f}"})
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_ab_arguments(p)
    args = p.parse_args(argv)
    chosen = [(w,) for w, _, run in workloads(args.models) if run is not None]  # inference runs only
    print(table_of(measured_rows(lambda w: measure(w, args), chosen), args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
