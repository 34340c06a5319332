"""XlaCustomCall and XlaCustomCallV2: refused, naming the custom-call target.

A custom call runs a function registered with XLA's runtime by name (a C++ symbol in the
process: a hand-written kernel, a cuDNN or LAPACK entry point); a StableHLO module compiled by
IREE has nothing to call. The entries exist so that a graph holding one fails at load with the
target's name instead of the bare op type (coverage.py counts them as "refused").
"""

from __future__ import annotations

from ..registry import register


def _refuse(target_attr: str):
    def infer(ctx):
        target = ctx.attr(target_attr, "")
        target = target.decode("utf-8", "replace") if isinstance(target, bytes) else target
        raise ctx.error(f"custom call to target '{target}': XLA runs a function registered under that name in its "
                        f"runtime, which hlobridge cannot call (docs/xla_ops.md)")
    return infer


register("XlaCustomCall", infer=_refuse("target_name"), attrs=("target_name", "backend_config", "T", "dtype", "shape"))
register("XlaCustomCallV2", infer=_refuse("call_target_name"),
         attrs=("call_target_name", "backend_config", "has_side_effect", "operand_dtypes", "result_dtypes",
                "result_shapes"))
