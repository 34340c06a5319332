#!/usr/bin/env python3
"""Variables written in place (passes/ir/tie_variables.py) against new buffers every step: per
training workload, which variables its step writes in place, the MB of variables that go into
new buffers per step, IREE's transient bytes per call, and ms/step, both ways in one process.

    python benchmarks/in_place_variables.py                       # the corpus's training cases
    python benchmarks/in_place_variables.py cnn_train resnet50_train --repeat 9

The two Sessions are compiled under HLOBRIDGE_FLAGS with and without --no-in-place-variables
(the option is part of the compile cache key) and timed in alternating blocks, as
benchmarks/models.py times hlobridge against TensorFlow; medians and bests of the blocks.
The MB into new buffers come from the compiled signatures (each variable result not tied to
its argument is a buffer IREE allocates for the call); the device allocator's statistics do
not see those (IREE 3.13's local-task allocates call results through its queue, which they
leave out: they count only the feeds copied in).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import markdown_table, start, text_table, time_block  # noqa: E402
from benchmarks.models import interleaved, workloads  # noqa: E402
from hlobridge import flags  # noqa: E402
from hlobridge.compile.driver import compile_mlir  # noqa: E402

TRAINING = ["seed_linreg_resource", "seed_mnist_softmax", "mlp_adam", "cnn_train"]
WAYS = {"in place": "", "new buffers": "--no-in-place-variables"}


def compiled_as(way: str):
    """HLOBRIDGE_FLAGS as `way` asks, for the compiles inside (the flags are read per compile)."""
    return flags.environment(WAYS[way])


def session(w, way: str, device: str):
    """A started Session whose clusters were compiled with `way`'s flags."""
    with compiled_as(way):
        sess, _, _ = start(w, "auto", device, False)
    return sess


def launches(sess):
    """The cluster launches of the Session's plans, each with its compiled executables."""
    for plan in sess._plans.values():
        for unit in plan.units:
            if getattr(unit, "executables", None):
                yield unit


def transient_bytes(sess) -> int:
    """IREE's transient bytes per call, summed over the Session's compiled signatures
    (recompiled with statistics: the compile cache keeps binaries, not statistics)."""
    total = 0
    for launch in launches(sess):
        for key, exe in launch.executables.items():
            if exe is None:
                continue
            args = _example_args(launch, key)
            stats: dict = {}
            options = launch.compile_options()
            compile_mlir(launch.lower(launch.feed_specs(args), options.stages()).text(), options, stats=stats)
            total += stats["transient_bytes"]
    return total


def _example_args(launch, key) -> list:
    """Arrays of the signature's dtypes and shapes, with its constant inputs' values (what
    feed_specs reads)."""
    n = len(launch.tensor_inputs)
    values = iter(key[n:])
    return [np.frombuffer(next(values), dtype).reshape(shape) if i in launch.value_inputs
            else np.zeros(shape, dtype) for i, (dtype, shape) in enumerate(key[:n])]


def variable_traffic(sess) -> dict:
    """Over the executables that read variables: how many variables they write, how many of
    those in place, and the MB per call that go into new buffers (every variable result that
    is not written in place is a new buffer; a tied one is its argument's)."""
    count = {"written": 0, "in_place": 0, "new_mb": 0.0}
    for launch in launches(sess):
        for exe in launch.executables.values():
            if exe is None or not exe.resource_args:
                continue
            outputs = exe.module.functions["main"].signature.outputs[exe.n_outputs:]
            tied_results = {exe.written.index(exe.resource_args[i]) for i in exe.overwritten}
            count["written"] += len(outputs)
            count["in_place"] += len(tied_results)
            count["new_mb"] += sum(np.dtype(spec.dtype).itemsize * math.prod(spec.shape)
                                   for j, (_, spec) in enumerate(outputs) if j not in tied_results) / 2 ** 20
    return count


def bench(w, args) -> dict:
    sessions = {way: session(w, way, args.device) for way in WAYS}
    row = {"model": w.name}
    with_transients = not args.no_statistics
    for way, sess in sessions.items():
        traffic = variable_traffic(sess)
        row[f"{way} new MB/step"] = traffic["new_mb"]
        if way == "in place":
            row["in_place"], row["written"] = traffic["in_place"], traffic["written"]
        if with_transients:
            with compiled_as(way):
                row[f"{way} transient MB"] = transient_bytes(sess) / 2 ** 20
    timers = {way: (lambda steps, s=sess: time_block(s, w, steps)) for way, sess in sessions.items()}
    _, blocks = interleaved(timers, args)
    for way, b in blocks.items():
        row[f"{way} ms"], row[f"{way} ms best"] = statistics.median(b), min(b)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=TRAINING)
    p.add_argument("--device", default="cpu-task")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=None, help="runs per block (default: about --block-s)")
    p.add_argument("--block-s", type=float, default=0.3)
    p.add_argument("--no-statistics", action="store_true", help="skip the recompiles for IREE's transient bytes")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    rows = [bench(w, args) for w, _, run in workloads(args.cases) if run is None]
    head = ["model", "in place / written", "ms/step in place", "new buffers", "ratio",
            "variables into new buffers, MB/step, in place", "new buffers", "transient MB in place", "new buffers"]
    cells = [[r["model"], f"{r['in_place']} / {r['written']}",
              f"{r['in place ms']:.3f} (best {r['in place ms best']:.3f})",
              f"{r['new buffers ms']:.3f} (best {r['new buffers ms best']:.3f})",
              f"{r['in place ms'] / r['new buffers ms']:.2f}",
              f"{r['in place new MB/step']:.2f}", f"{r['new buffers new MB/step']:.2f}",
              *([f"{r['in place transient MB']:.2f}", f"{r['new buffers transient MB']:.2f}"]
                if "in place transient MB" in r else ["-", "-"])] for r in rows]
    print((markdown_table if args.markdown else text_table)(head, cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
