"""Argument pieces and error handling shared by the command-line tools."""

from __future__ import annotations

import argparse
import sys

from ..compile.driver import parse_shape
from ..errors import HlobridgeError


def add_io_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --inputs, --outputs and --input-shape: the options that pick a graph's signature."""
    parser.add_argument("--inputs", default=None,
                        help="comma-separated input tensors (default: every Placeholder)")
    parser.add_argument("--outputs", default=None,
                        help="comma-separated output tensors (default: every sink that is not a NoOp)")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=DIMS",
                        help="fix an input's shape, e.g. images:0=4,32,32,3 (repeatable)")


def input_shapes(items) -> dict:
    """--input-shape NAME=DIMS items -> {name: shape}."""
    shapes = {}
    for item in items:
        name, sep, dims = item.partition("=")
        if not sep or not name:
            raise HlobridgeError(f"--input-shape expects NAME=DIMS (e.g. x:0=4,3), got '{item}'")
        shapes[name] = parse_shape(dims)
    return shapes


def io_options(args) -> dict:
    """Parsed --inputs/--outputs/--input-shape -> the inputs=, outputs=, input_shapes= keywords of
    lower_graph and compile_graph (None where an option was not given)."""
    shapes = input_shapes(args.input_shape)
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None  # noqa: E731
    return {"inputs": split(args.inputs), "outputs": split(args.outputs), "input_shapes": shapes}


def run_main(prog: str, main, argv=None) -> int:
    """Call main(argv); print hlobridge errors as `prog: error: ...` and return 1."""
    try:
        return main(argv) or 0
    except HlobridgeError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
