#!/usr/bin/env python3
"""An iree-compile flag or one of hlobridge's compile options, on or off, on a model's step: the
A/B behind the distribution-size rows of docs/performance.md's "Compile options" and its
batch-norm folding.

    python benchmarks/iree_flags.py cnn_train --flags="--iree-llvmcpu-distribution-size=256"
    python benchmarks/iree_flags.py keras_resnet50/batch2 mlp_adam --flags="--iree-opt-level=O2" --repeat 11
    python benchmarks/iree_flags.py keras_mobilenetv2 --without fold_batch_norm

For each workload (a case of benchmarks/models.py), two Sessions in one process compile its
clusters, one with hlobridge's own options and one with `--flags` added after them (or, with
`--without OPTION`, "off" is hlobridge's options with that boolean CompileOptions field False
and "on" its default), then time blocks of steps in turn, alternating which goes first. The
table has each side's median and best ms/step and their ratios (below 1: "on" is faster).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import warnings
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (add_ab_arguments, clear_memory_cache, measured_rows, start,  # noqa: E402
                               table_of, time_block)
from benchmarks.models import interleaved, workloads  # noqa: E402
from hlobridge.compile.options import CompileOptions  # noqa: E402
from hlobridge.errors import JitFallbackWarning  # noqa: E402


def started(w, extra: list[str], off: tuple = ()):
    """A Session compiled with `extra` iree-compile flags (nothing from a cache), past its first
    run. A cluster that does not compile stops the row (a JitFallbackWarning raised): timing
    reference kernels would say nothing of the flags."""
    clear_memory_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        options = CompileOptions(extra_flags=tuple(extra), **dict.fromkeys(off, False))
        sess, _, _ = start(w, "auto", "cpu-task", False, options)
    return sess


def measure(w, extra: list[str], args, without: tuple = ()) -> dict:
    """One row: the workload's step without and with `extra` (and with the compile options
    `without` names False, then their defaults), in alternating blocks (models.interleaved:
    `args.repeat`, `args.warmup`, `args.steps`, `args.block_s`)."""
    sessions = {"off": started(w, [], without), "on": started(w, extra)}
    _, ms = interleaved({k: (lambda steps, s=sess: time_block(s, w, steps)) for k, sess in sessions.items()}, args)
    off, on = statistics.median(ms["off"]), statistics.median(ms["on"])
    return {"workload": w.name, "off ms": f"{off:.3g} ({min(ms['off']):.3g})", "on ms": f"{on:.3g} ({min(ms['on']):.3g})",
            "on/off median": f"{on / off:.3f}", "on/off best": f"{min(ms['on']) / min(ms['off']):.3f}"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_ab_arguments(p)
    p.add_argument("--flags", default="", help="the iree-compile flags to add, as one string")
    p.add_argument("--without", action="append", default=[], metavar="OPTION",
                   choices=[f.name for f in fields(CompileOptions) if f.type in (bool, "bool")],
                   help="a boolean compile option that is False on the \"off\" side (repeatable)")
    args = p.parse_args(argv)
    if not args.flags and not args.without:
        p.error("give --flags or --without")
    extra = shlex.split(args.flags)
    without = tuple(args.without)
    rows = measured_rows(lambda w: measure(w, extra, args, without), [(w,) for w, _, _ in workloads(args.models)])
    print(table_of(rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
