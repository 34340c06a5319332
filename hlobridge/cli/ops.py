"""hlobridge-ops: the op registry, like grepping REGISTER_XLA_OP in TensorFlow.

    hlobridge-ops                        # every op: compiles or kernel only, dtypes; a summary
    hlobridge-ops --compiles             # only ops with a lowering
    hlobridge-ops --kernel-only          # only ops that run on their NumPy reference kernel
    hlobridge-ops 'Conv*' MatMul         # ops matching these names (globs; plain words are substrings)
    hlobridge-ops --dtype int8           # ops that compile for int8
    hlobridge-ops --json                 # [{"op", "compiles", "kernel", "stateful", "dtypes", ...}]
    hlobridge-ops --missing              # every op XLA compiles that hlobridge does not, and why

The dtypes are each entry's own declaration (hlobridge/ops/typesets.py), the same one that
clustering and compilation check, so this listing cannot drift from what compiles.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys

from ..errors import HlobridgeError
from ..ops import REGISTRY, typesets
from ..ops.coverage import coverage_summary, xla_coverage
from .common import add_output_arguments, configure_output, run_main

PROG = "hlobridge-ops"

# Short dtype spellings for the table (JSON keeps the full names).
_SHORT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8",
          "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
          "uint32": "u32", "uint64": "u64", "bool": "bool", "string": "str",
          "complex64": "c64", "complex128": "c128"}


def parse_arguments(argv=None) -> argparse.Namespace:
    """hlobridge-ops' command line: op name patterns and the --compiles/--kernel-only/--dtype filters."""
    p = argparse.ArgumentParser(prog=PROG, description="List the TensorFlow ops hlobridge knows: "
                                "whether each compiles or only runs on its reference kernel, and "
                                "for which dtypes.")
    p.add_argument("patterns", nargs="*", metavar="OP",
                   help="only ops whose name matches: a glob (Conv*), or a substring (case-insensitive)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--compiles", action="store_true", help="only ops with a StableHLO lowering")
    which.add_argument("--kernel-only", action="store_true",
                       help="only ops without a lowering (they run on their reference kernel)")
    which.add_argument("--missing", action="store_true",
                       help="the ops TensorFlow's XLA compiles that hlobridge does not: kernel only "
                       "or unregistered, each with its reason; the summary gives the coverage")
    p.add_argument("--dtype", metavar="NAME", help="only ops that compile (or, kernel-only, run) for this dtype")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    add_output_arguments(p)
    return p.parse_args(argv)


def op_record(entry) -> dict:
    """A registry entry as the plain dict that --json prints and the table is made from."""
    return {"op": entry.name, "compiles": entry.compiles, "kernel": entry.kernel is not None,
            "stateful": entry.stateful, "dtypes": list(entry.dtypes),
            "dtype_attrs": list(entry.dtype_attrs)}


def _matches(name: str, pattern: str) -> bool:
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(name.lower(), pattern.lower())
    return pattern.lower() in name.lower()


def select(args) -> list[dict]:
    """The records the filters keep, sorted by op name; an unknown filter is an error."""
    known = set(typesets.ANY) | {d for e in REGISTRY.values() for d in e.dtypes}
    if args.dtype is not None and args.dtype not in known:
        raise HlobridgeError(f"unknown dtype '{args.dtype}'; known: {', '.join(sorted(known))}")
    for pattern in args.patterns:
        if not any(_matches(name, pattern) for name in REGISTRY):
            raise HlobridgeError(f"no op matches '{pattern}' ({len(REGISTRY)} ops are registered)")
    records = []
    for name in sorted(REGISTRY):
        r = op_record(REGISTRY[name])
        if args.patterns and not any(_matches(name, p) for p in args.patterns):
            continue
        if (args.compiles and not r["compiles"]) or (args.kernel_only and r["compiles"]):
            continue
        if args.dtype is not None and args.dtype not in r["dtypes"]:
            continue
        records.append(r)
    return records


def _dtype_text(names) -> str:
    return " ".join(_SHORT.get(n, n) for n in names) or "-"


def format_table(records: list[dict]) -> str:
    """The records as an aligned table: op, compiles, kernel, stateful and short dtype names."""
    width = max([len(r["op"]) for r in records] + [2])
    lines = [f"{'op':<{width}}  compiles  kernel  stateful  dtypes"]
    for r in records:
        flags = [("yes" if r["compiles"] else "no"), ("yes" if r["kernel"] else "no"),
                 ("yes" if r["stateful"] else "")]
        lines.append(f"{r['op']:<{width}}  {flags[0]:<8}  {flags[1]:<6}  {flags[2]:<8}  "
                     f"{_dtype_text(r['dtypes'])}")
    return "\n".join(lines)


def summary(records: list[dict], filtered: bool) -> str:
    """'N ops, C compile, K run on their reference kernel only', noting when a filter applied."""
    n_compile = sum(r["compiles"] for r in records)
    line = (f"{len(records)} ops, {n_compile} compile, {len(records) - n_compile} run on their "
            f"reference kernel only")
    return line + (f" (filtered from {len(REGISTRY)})" if filtered else "")


def missing_records(args) -> tuple[list[dict], str]:
    """--missing: the XLA ops hlobridge neither compiles nor inlines (matching the patterns),
    and the coverage summary over all of them."""
    rows = xla_coverage()
    records = [{"op": r.op, "status": r.status, "reason": r.reason} for r in rows
               if r.status in ("kernel only", "refused", "missing")
               and (not args.patterns or any(_matches(r.op, p) for p in args.patterns))]
    return records, coverage_summary(rows)


def format_missing(records: list[dict]) -> str:
    """The --missing records as an aligned table: op, status, reason."""
    width = max([len(r["op"]) for r in records] + [2])
    lines = [f"{'op':<{width}}  {'status':<11}  reason"]
    lines += [f"{r['op']:<{width}}  {r['status']:<11}  {r['reason']}" for r in records]
    return "\n".join(lines)


def _print_json(records: list[dict]) -> None:
    # one object per line: valid JSON that still greps
    print("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]" if records else "[]")


def main(argv=None) -> int:
    """Print the selected ops as a table and summary, or as JSON; returns the exit status."""
    args = parse_arguments(argv)
    configure_output(args)
    if args.missing:
        if args.dtype is not None:
            raise HlobridgeError("--missing lists ops, not dtypes: leave out --dtype")
        records, line = missing_records(args)
        if args.json:
            _print_json(records)
        else:
            if records:
                print(format_missing(records))
            print(line)
        return 0
    records = select(args)
    if args.json:
        _print_json(records)
        return 0
    filtered = bool(args.patterns or args.compiles or args.kernel_only or args.dtype)
    if records:
        print(format_table(records))
    print(summary(records, filtered))
    return 0


def _cli_main() -> None:
    try:
        code = run_main(PROG, main)
        sys.stdout.flush()
    except BrokenPipeError:  # `hlobridge-ops | head`: the reader left, which is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)


if __name__ == "__main__":
    _cli_main()
