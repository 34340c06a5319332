"""hlobridge-profile: where a Session step's time goes, per cluster and per IREE dispatch, each
dispatch named by the TF nodes it came from (hlobridge/debug/profile.py; docs/profiling.md).

    hlobridge-profile graph.pbtxt --fetch train --fetch loss:0 --init init \\
        --input-shape x:0=32,28,28,1 --input-shape y_:0=32,10        # random feeds of these shapes
    hlobridge-profile graph.pbtxt --fetch logits:0 --feed x:0=batch.npy --top 30 --trace step.json
    hlobridge-profile ../shared/graphs/cnn_train                      # a corpus case: its init, feeds, step
    hlobridge-profile graph.pbtxt ... --json                          # the profile as JSON

Placeholders the fetches need are fed from --feed FILE.npy, else with random values (floats
uniform in [0, 1), integers and booleans zero) of the --input-shape given or, when fully
known, their declared shape. The steps are real: a training step updates the variables.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hlobridge.passes.graph.mark_for_compilation import JIT_MODES
from hlobridge.passes.ir.fusion import MODES as FUSION_MODES

from ..compile.options import BACKENDS, CompileOptions
from ..debug.profile import profile
from ..errors import HlobridgeError
from ..frontend.corpus_case import Case, is_case
from ..ops.kinds import PLACEHOLDERS
from ..runtime.session import Session
from .common import input_shapes, run_main

PROG = "hlobridge-profile"
DEVICES = ("cpu-task", "cpu", "cuda")


def parse_arguments(argv=None) -> argparse.Namespace:
    """hlobridge-profile's command line -> its options (argv=None reads sys.argv)."""
    p = argparse.ArgumentParser(prog=PROG, description="Profile a Session step: time per cluster and per "
                                "IREE dispatch, each dispatch named by the TF nodes it came from.")
    p.add_argument("graph", help="GraphDef (.pbtxt or .pb), SavedModel directory, or corpus case folder "
                                 "(holding case.json)")
    p.add_argument("--fetch", action="append", default=None, metavar="NAME",
                   help="a tensor or op the step runs (repeatable; a corpus case has its own)")
    p.add_argument("--feed", action="append", default=[], metavar="TENSOR=FILE.npy",
                   help="feed a tensor from a .npy file (repeatable)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                   help="feed a placeholder random values of this shape, e.g. x:0=32,784 (repeatable)")
    p.add_argument("--init", action="append", default=[], metavar="OP",
                   help="run this op once before profiling, e.g. the variables' initializer (repeatable)")
    p.add_argument("--steps", type=int, default=5, help="traced steps; times are their medians (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first; they compile (default 1)")
    p.add_argument("--iterations", type=int, default=5,
                   help="calls of each cluster replayed with IREE's profiler on (default 5)")
    p.add_argument("--top", type=int, default=20, help="rows of the table (default 20)")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="write the profiled step's Chrome trace, dispatches included (chrome://tracing, Perfetto)")
    p.add_argument("--json", action="store_true", help="print the profile as JSON instead of the table")
    p.add_argument("--device", default="cpu-task", choices=DEVICES)
    p.add_argument("--jit", default="auto", choices=JIT_MODES,
                   help="as Session(jit=...); off: every op on its reference kernel (default auto)")
    p.add_argument("--backend", default="iree", choices=BACKENDS,
                   help="who compiles the clusters (docs/backends.md); XLA's clusters are timed per "
                        "launch, IREE's also per dispatch")
    p.add_argument("--fusion", default=CompileOptions.fusion, choices=FUSION_MODES,
                   help="who forms IREE dispatches (as hlobridge-compile --fusion; default %(default)s)")
    return p.parse_args(argv)


def _check_counts(args) -> None:
    for flag, value, least in (("--steps", args.steps, 1), ("--warmup", args.warmup, 0),
                               ("--iterations", args.iterations, 1), ("--top", args.top, 1)):
        if value < least:
            raise HlobridgeError(f"{flag} must be >= {least}, got {value}")


def _npy_feeds(items) -> dict:
    feeds = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise HlobridgeError(f"--feed expects TENSOR=FILE.npy, got '{item}'")
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise HlobridgeError(f"--feed {name}: cannot read {path}: {e}") from None
    return feeds


def _random_feeds(session: Session, fetches: list, given: dict, shapes: dict) -> dict:
    """Random values for the placeholders the fetches need that no --feed gives: of the
    --input-shape shape, else of the declared one if it is fully known."""
    graph = session.graph
    shapes = {str(graph.tensor(k)): v for k, v in shapes.items()}  # an unknown node is an error
    for name in shapes:
        if graph.nodes[name.split(":")[0]].op not in PLACEHOLDERS:
            raise HlobridgeError(f"--input-shape {name}: not a placeholder")
    fed = {str(graph.tensor(k)) for k in given}
    needed = graph.ancestors([graph.node(f.lstrip("^").split(":")[0]).name for f in fetches])  # unknown: an error
    rng = np.random.default_rng(0)
    feeds = {}
    for name in graph.placeholders():
        ref = f"{name}:0"
        if name not in needed or ref in fed:
            continue
        node = graph.nodes[name]
        shape = shapes.get(ref, node.attr("shape", None))
        if shape is None or any(d is None for d in shape):
            dims = "unknown" if shape is None else ",".join("?" if d is None else str(d) for d in shape)
            raise HlobridgeError(f"placeholder {ref} has shape {dims}: give --input-shape {ref}=DIMS "
                                 f"or --feed {ref}=FILE.npy")
        dtype = np.dtype(node.attr("dtype"))
        if dtype.kind == "f":
            feeds[ref] = rng.random(shape).astype(dtype)
        elif dtype.kind in "biuc":
            feeds[ref] = np.zeros(shape, dtype)
        else:
            raise HlobridgeError(f"placeholder {ref} is of type {dtype}: give --feed {ref}=FILE.npy")
    return feeds


def main(argv=None) -> int:
    """Profile the step and print the table (or --json); write --trace; returns the exit status."""
    args = parse_arguments(argv)
    _check_counts(args)
    shapes = input_shapes(args.input_shape)
    feeds = _npy_feeds(args.feed)
    graph, init, init_feeds, fetches = args.graph, list(args.init), {}, args.fetch
    if is_case(graph):  # the case's protocol: its initializer, its first step
        case = Case.load(Path(graph))
        case_init, init_feeds, case_fetches, case_feeds = case.first_run()
        graph, init = case.graph_path, ([case_init] if case_init else []) + init
        fetches, feeds = fetches or case_fetches, {**case_feeds, **feeds}
    if not fetches:
        raise HlobridgeError("give --fetch NAME (repeatable): the tensors or ops of the step to profile")
    options = CompileOptions(target="cuda" if args.device == "cuda" else "llvm-cpu", fusion=args.fusion,
                             backend=args.backend)
    session = Session(graph, jit=args.jit, device=args.device, compile_options=options)
    feeds.update(_random_feeds(session, fetches, feeds, shapes))
    for op in init:
        session.run(op, init_feeds)
    prof = profile(session, fetches, feeds, steps=args.steps, warmup=args.warmup, iterations=args.iterations)
    print(json.dumps(prof.to_dict(args.top), indent=1) if args.json else prof.table(args.top))
    if args.trace:
        try:
            Path(args.trace).write_text(json.dumps(prof.to_chrome_trace()))
        except OSError as e:
            raise HlobridgeError(f"cannot write {args.trace}: {e.strerror}") from None
    return 0


def _cli_main() -> None:
    sys.exit(run_main(PROG, main))


if __name__ == "__main__":
    _cli_main()
