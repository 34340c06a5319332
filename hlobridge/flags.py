"""HLOBRIDGE_FLAGS: process-wide debug options from the environment, as TF reads TF_XLA_FLAGS.

    HLOBRIDGE_FLAGS="--dump-to=/tmp/d --dump-pass=simplify" python train.py
    HLOBRIDGE_FLAGS="--max-tensor-elements=2**34" hlobridge-compile huge.pbtxt ...

The variable is read once, on first use, and applies to everything that compiles in the
process: `hlobridge-compile`, `compile_graph` and the Session's JIT (each cluster compile
dumps into its own numbered subdirectory). Command-line options override it. An unknown
flag is an error naming the variable, as TensorFlow refuses unknown TF_XLA_FLAGS.
"""

from __future__ import annotations

import argparse
import os
import shlex
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from .errors import HlobridgeError

ENV_VAR = "HLOBRIDGE_FLAGS"


@dataclass(frozen=True)
class Flags:
    """The parsed HLOBRIDGE_FLAGS: where and what to dump (None: not set)."""

    dump_to: str | None = None  # directory for numbered IR dumps
    dump_pass: str | None = None  # regex: dump only stages/passes whose name matches
    max_constant_bytes: int | None = None  # limits.py: the largest constant decoded or folded
    max_tensor_elements: int | None = None  # limits.py: the largest tensor shape inference accepts
    max_loop_iterations: int | None = None  # limits.py: the most iterations one While may run
    release_host_memory: bool = False  # runtime/host_memory.py: keep glibc's malloc defaults
    in_place_variables: bool = True  # passes/ir/tie_variables.py: the Session's clusters write variables in place
    # runtime/cluster_launch.py: on cpu-task, a cluster estimated at most this many flops
    # (passes/ir/work_estimate.py) runs on the calling thread; 0: every cluster on the pool
    small_cluster_flops: int = 30_000_000
    pin_waiting_thread: bool = True  # runtime/caller_affinity.py: a caller waits for the pool on its last worker's CPU
    row_split: bool = True  # runtime/row_split.py: a large inference cluster's batch split across the CPUs
    row_split_flops: int = 100_000_000  # runtime/row_split.py: the least estimated work that is split
    row_cut: bool = True  # analysis/layer_cut.py: an odd batch's last row run in two halves, one per CPU
    row_split_trial: bool = True  # runtime/row_split.py: the parts kept only if timed faster than the pool
    compile_ahead: bool = True  # runtime/cluster_launch.py: a plan's known clusters compile side by side
    hoist_loop_reads: bool = False  # passes/graph/hoist_loop_reads.py: read-only loop variables read before the loop


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit the process
        raise HlobridgeError(f"{ENV_VAR}: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=ENV_VAR, add_help=False, allow_abbrev=False)
    p.add_argument("--dump-to", "--dump-ir", dest="dump_to", default=None)
    p.add_argument("--dump-pass", dest="dump_pass", default=None)
    p.add_argument("--max-constant-bytes", dest="max_constant_bytes", type=_positive_int, default=None)
    p.add_argument("--max-tensor-elements", dest="max_tensor_elements", type=_positive_int, default=None)
    p.add_argument("--max-loop-iterations", dest="max_loop_iterations", type=_positive_int, default=None)
    p.add_argument("--release-host-memory", dest="release_host_memory", action="store_true")
    p.add_argument("--no-in-place-variables", dest="in_place_variables", action="store_false")
    p.add_argument("--no-pin-waiting-thread", dest="pin_waiting_thread", action="store_false")
    p.add_argument("--small-cluster-flops", dest="small_cluster_flops", type=_count, default=Flags.small_cluster_flops)
    p.add_argument("--no-row-split", dest="row_split", action="store_false")
    p.add_argument("--row-split-flops", dest="row_split_flops", type=_count, default=Flags.row_split_flops)
    p.add_argument("--no-row-cut", dest="row_cut", action="store_false")
    p.add_argument("--no-row-split-trial", dest="row_split_trial", action="store_false")
    p.add_argument("--no-compile-ahead", dest="compile_ahead", action="store_false")
    p.add_argument("--hoist-loop-reads", dest="hoist_loop_reads", action="store_true")
    return p


def _positive_int(text: str) -> int:
    """An integer >= 1, written plainly or as a power of two ("2**33")."""
    try:
        value = 2 ** int(text[3:]) if text.startswith("2**") else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def _count(text: str) -> int:
    """An integer >= 0, written plainly, with underscores or in e notation ("2e7")."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count, got '{text}'") from None
    if value < 0 or value != int(value):
        raise argparse.ArgumentTypeError(f"expected a count, got '{text}'")
    return int(value)


def parse(text: str) -> Flags:
    """Flags from a HLOBRIDGE_FLAGS value ("--dump-to=DIR --dump-pass=REGEX")."""
    try:
        words = shlex.split(text or "")
    except ValueError as e:  # an unclosed quote
        raise HlobridgeError(f"{ENV_VAR}: cannot split '{text}' into flags: {e}") from None
    args, unknown = _parser().parse_known_args(words)
    if unknown:
        known = ", ".join(a.option_strings[0] for a in _parser()._actions)
        raise HlobridgeError(f"{ENV_VAR}: unknown flag(s) {' '.join(unknown)} (known: {known})")
    return Flags(dump_to=args.dump_to, dump_pass=args.dump_pass, max_constant_bytes=args.max_constant_bytes,
                 max_tensor_elements=args.max_tensor_elements, max_loop_iterations=args.max_loop_iterations,
                 release_host_memory=args.release_host_memory, in_place_variables=args.in_place_variables,
                 small_cluster_flops=args.small_cluster_flops, pin_waiting_thread=args.pin_waiting_thread,
                 row_split=args.row_split, row_split_flops=args.row_split_flops, row_cut=args.row_cut,
                 row_split_trial=args.row_split_trial, compile_ahead=args.compile_ahead,
                 hoist_loop_reads=args.hoist_loop_reads)


@cache
def from_environment() -> Flags:
    """The process's flags, parsed once (tests call `from_environment.cache_clear()`)."""
    return parse(os.environ.get(ENV_VAR, ""))


@contextmanager
def environment(text: str):
    """HLOBRIDGE_FLAGS set to `text` inside (benchmarks compile one workload several ways in one
    process; a cluster reads the flags when it is compiled and loaded), then as it was."""
    before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = text
    from_environment.cache_clear()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_VAR)
        else:
            os.environ[ENV_VAR] = before
        from_environment.cache_clear()
