"""Argument pieces and error handling shared by the command-line tools."""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import tempfile
from pathlib import Path

from .. import limits
from ..compile.driver import parse_shape
from ..debug import progress
from ..errors import HlobridgeError


def add_io_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --inputs, --outputs and --input-shape: the options that pick a graph's signature."""
    parser.add_argument("--inputs", default=None,
                        help="comma-separated input tensors (default: every Placeholder)")
    parser.add_argument("--outputs", default=None,
                        help="comma-separated output tensors (default: every sink that is not a NoOp)")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                        help="fix an input's shape, e.g. images:0=4,32,32,3, or ?,32,32,3 for a dynamic "
                             "batch (repeatable; unknown dimensions are dynamic by default)")


def input_shapes(items) -> dict:
    """--input-shape NAME=DIMS items -> {name: shape}."""
    shapes = {}
    for item in items:
        name, sep, dims = item.partition("=")
        if not sep or not name:
            raise HlobridgeError(f"--input-shape expects NAME=DIMS (e.g. x:0=4,3), got '{item}'")
        shapes[name] = parse_shape(dims)
        where = f"--input-shape {item}"
        known = [d for d in shapes[name] if d is not None]  # '?': dynamic, sized at run time
        for d in known:  # one huge dimension times a 0 is still no type MLIR can build
            limits.check_tensor_elements(d, where)
        limits.check_tensor_elements(math.prod(known), where)
    return shapes


def check_output_path(path: str, flag: str = "-o") -> None:
    """Refuse an output file that cannot be written (a missing folder, a folder, a read-only
    place) before the slow part, not after a compile: the probe creates and removes a
    temporary file beside it, which also catches what os.access cannot (root, /proc)."""
    if path == "-":
        return
    p = Path(path)
    if p.is_dir():
        raise HlobridgeError(f"{flag} {path}: is a directory; give a file name (e.g. {p / 'model.vmfb'})")
    parent = p.parent
    if not parent.is_dir():
        raise HlobridgeError(f"{flag} {path}: the folder {parent} does not exist")
    if p.exists() and not os.access(p, os.W_OK):
        raise HlobridgeError(f"{flag} {path}: cannot write the file (permission denied)")
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=f".{p.name}.", suffix=".probe"):
            pass
    except OSError as e:
        raise HlobridgeError(f"{flag} {path}: cannot write in {parent}: {e.strerror or e}") from None


def io_options(args) -> dict:
    """Parsed --inputs/--outputs/--input-shape -> the inputs=, outputs=, input_shapes= keywords of
    lower_graph and compile_graph (None where an option was not given)."""
    shapes = input_shapes(args.input_shape)
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None  # noqa: E731
    return {"inputs": split(args.inputs), "outputs": split(args.outputs), "input_shapes": shapes}


def run_main(prog: str, main, argv=None) -> int:
    """Call main(argv) as an activity with a progress line (debug/progress.py: on a terminal,
    unless -q); print hlobridge errors as `prog: error: ...` and return 1."""
    try:
        with progress.activity(prog):
            return main(argv) or 0
    except HlobridgeError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Add -v/--verbose and -q/--quiet: how much the tool says on stderr besides its result."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="count", default=0,
                       help="log what each stage did and how long it took (-vv: debug detail)")
    group.add_argument("-q", "--quiet", action="store_true",
                       help="no progress line and no notes on stderr: errors only")


class _TerminalHandler(logging.StreamHandler):
    """Log records on stderr as it is now (a test may have replaced it), after erasing the
    progress line (it is redrawn on its next tick)."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):  # StreamHandler.__init__ sets one; stderr is looked up at each record
        pass

    def emit(self, record: logging.LogRecord) -> None:
        progress.clear()
        super().emit(record)


_HANDLER = _TerminalHandler()


def configure_output(args) -> None:
    """Apply -v/-q: the `hlobridge` logger's level and handler, and the progress line (shown on a
    terminal unless -q)."""
    level = logging.ERROR if args.quiet else {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logger = logging.getLogger("hlobridge")
    logger.setLevel(level)
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    progress.configure("off" if args.quiet else "auto")
