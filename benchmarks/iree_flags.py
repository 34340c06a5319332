#!/usr/bin/env python3
"""An iree-compile flag, on or off, on a model's step: the A/B behind the distribution-size
rows of docs/performance.md's "Compile options".

    python benchmarks/iree_flags.py cnn_train --flags="--iree-llvmcpu-distribution-size=256"
    python benchmarks/iree_flags.py keras_resnet50/batch2 mlp_adam --flags="--iree-opt-level=O2" --repeat 11

For each workload (a case of benchmarks/models.py), two Sessions in one process compile its
clusters, one with hlobridge's own options and one with `--flags` added after them, then time
blocks of steps in turn, alternating which goes first. The table has each side's median and best
ms/step and their ratios (below 1: the flags are faster).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (add_ab_arguments, clear_memory_cache, measured_rows, start,  # noqa: E402
                               table_of, time_block)
from benchmarks.models import interleaved, workloads  # noqa: E402
from hlobridge.compile.options import CompileOptions  # noqa: E402
from hlobridge.errors import JitFallbackWarning  # noqa: E402


def started(w, extra: list[str]):
    """A Session compiled with `extra` iree-compile flags (nothing from a cache), past its first
    run. A cluster that does not compile stops the row (a JitFallbackWarning raised): timing
    reference kernels would say nothing of the flags."""
    clear_memory_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        sess, _, _ = start(w, "auto", "cpu-task", False, CompileOptions(extra_flags=tuple(extra)))
    return sess


def measure(w, extra: list[str], args) -> dict:
    """One row: the workload's step without and with `extra`, in alternating blocks
    (models.interleaved: `args.repeat`, `args.warmup`, `args.steps`, `args.block_s`)."""
    sessions = {"off": started(w, []), "on": started(w, extra)}
    _, ms = interleaved({k: (lambda steps, s=sess: time_block(s, w, steps)) for k, sess in sessions.items()}, args)
    off, on = statistics.median(ms["off"]), statistics.median(ms["on"])
    return {"workload": w.name, "off ms": f"{off:.3g} ({min(ms['off']):.3g})", "on ms": f"{on:.3g} ({min(ms['on']):.3g})",
            "on/off median": f"{on / off:.3f}", "on/off best": f"{min(ms['on']) / min(ms['off']):.3f}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_ab_arguments(p)
    p.add_argument("--flags", required=True, help="the iree-compile flags to add, as one string")
    args = p.parse_args(argv)
    extra = shlex.split(args.flags)
    rows = measured_rows(lambda w: measure(w, extra, args), [(w,) for w, _, _ in workloads(args.models)])
    print(table_of(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
