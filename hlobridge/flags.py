"""HLOBRIDGE_FLAGS: process-wide debug options from the environment, as TF reads TF_XLA_FLAGS.

    HLOBRIDGE_FLAGS="--dump-to=/tmp/d --dump-pass=simplify" python train.py

The variable is read once, on first use, and applies to everything that compiles in the
process: `hlobridge-compile`, `compile_graph` and the Session's JIT (each cluster compile
dumps into its own numbered subdirectory). Command-line options override it. An unknown
flag is an error naming the variable, as TensorFlow refuses unknown TF_XLA_FLAGS.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from functools import cache

from .errors import HlobridgeError

ENV_VAR = "HLOBRIDGE_FLAGS"


@dataclass(frozen=True)
class Flags:
    """The parsed HLOBRIDGE_FLAGS: where and what to dump (None: not set)."""

    dump_to: str | None = None  # directory for numbered IR dumps
    dump_pass: str | None = None  # regex: dump only stages/passes whose name matches


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit the process
        raise HlobridgeError(f"{ENV_VAR}: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=ENV_VAR, add_help=False, allow_abbrev=False)
    p.add_argument("--dump-to", "--dump-ir", dest="dump_to", default=None)
    p.add_argument("--dump-pass", dest="dump_pass", default=None)
    return p


def parse(text: str) -> Flags:
    """Flags from a HLOBRIDGE_FLAGS value ("--dump-to=DIR --dump-pass=REGEX")."""
    args, unknown = _parser().parse_known_args(shlex.split(text or ""))
    if unknown:
        known = ", ".join(a.option_strings[0] for a in _parser()._actions)
        raise HlobridgeError(f"{ENV_VAR}: unknown flag(s) {' '.join(unknown)} (known: {known})")
    return Flags(dump_to=args.dump_to, dump_pass=args.dump_pass)


@cache
def from_environment() -> Flags:
    """The process's flags, parsed once (tests call `from_environment.cache_clear()`)."""
    return parse(os.environ.get(ENV_VAR, ""))
