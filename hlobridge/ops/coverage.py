"""How much of what TensorFlow's XLA compiles hlobridge compiles, and why the rest is not.

The measure is `data/xla_ops.json`: the ops tf2xla registers for XLA_CPU_JIT in TensorFlow 2.21
(tools/extract_xla_ops.py reads them from TF's kernel registry), 445 TensorFlow ops and XLA's own
44 `Xla*` ops (kept apart there as `xla_internal`; Keras 3 and tf2xla's Python wrappers write
them, see docs/xla_ops.md), 489 in all. Every one of them is, for hlobridge:

  compiled        it has a registry entry with a lowering;
  inlined         the frontend removes it before clustering (a call whose body is inlined),
                  so what it computes compiles with its callers;
  kernel only     registered, runs on its NumPy kernel, and NOT_COMPILED says why not;
  refused         registered only to refuse a node with a message that names what it needs (an
                  XlaCustomCall's target), NOT_COMPILED says why;
  missing         not registered at all, with NOT_COMPILED's reason or "not yet".

`hlobridge-ops --missing` prints every op that is neither compiled nor inlined, with its reason,
so the gap is data rather than a surprise at a user's graph. A reason is written once, here,
for ops that will not compile by design; "not yet" means nobody has written the rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..frontend.functions import CALL_OPS
from .registry import REGISTRY

_DATA = Path(__file__).parent / "data" / "xla_ops.json"

# Ops the frontend inlines or erases before any op rule sees them (frontend/functions.py).
INLINED = {
    **{op: "inlined by the frontend: its body clusters and compiles with the caller" for op in CALL_OPS},
    "_Arg": "a function body's argument: inlining binds it to the caller's input",
    "_Retval": "a function body's result: inlining binds it to the caller's output",
}

# Why an XLA op does not compile in hlobridge, by design (anything else missing is "not yet").
NOT_COMPILED = {
    "Unique": "data-dependent output shape (XLA uses bounded dynamic shapes; IREE has none): runs on its kernel",
    "UniqueV2": "data-dependent output shape: runs on its kernel",
    "Where": "data-dependent output shape (one input): runs on its kernel",
    "ListDiff": "data-dependent output shape: runs on its kernel",
    "DynamicPartition": "data-dependent output shapes: runs on its kernel",
    "SymbolicGradient": "TF1 gradient-of-function call: TensorFlow itself rewrites it before running; "
                        "graphs written by TF 2 do not contain it",
    "CollectiveReduceV2": "a multi-device collective: hlobridge runs one device per session",
    "CollectiveAssignGroupV2": "a multi-device collective: hlobridge runs one device per session",
    "Assert": "on its kernel on purpose: XLA compiles it to nothing (the check is lost), and a compiled check "
              "could not print the data tensors' values that TensorFlow's message holds",
    "VarIsInitializedOp": "session state at run time: a compiled cluster only ever receives initialized variables",
    **{op: "each node's stream position lives in the session (TF's per-kernel GuardedPhiloxRandom), not in a "
           "variable a cluster could take: runs on its kernel with TF's stream (docs/random.md: how it could compile)"
       for op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "Multinomial",
                  "RandomShuffle", "ParameterizedTruncatedNormal")},
    "StatelessParameterizedTruncatedNormal": "not yet: a sequential rejection sampler (a While per element)",
    "NonMaxSuppressionV3": "data-dependent output size (XLA compiles it with a dynamic size): runs on its kernel; "
                           "NonMaxSuppressionV4 with pad_to_max_output_size compiles",
    "TensorArrayGradV3": "not yet: gradient arrays are shared per `source` and add up writes; compiled, they need "
                         "XLA's pre-created gradient buffers carried through the loops",
    **{op: "not yet: TF1 gradient stacks are written with max_size -1, so a compiled bound would have to come "
           "from the forward loop's trip count" for op in ("StackV2", "StackPushV2", "StackPopV2", "StackCloseV2")},
    "DeviceIndex": "not yet: its value is the index of the device the graph runs on, which the lowering does not "
                   "see (a constant per compile target)",
    "AssignVariableXlaConcatND": "TPU SPMD variable sharding: only the TPU bridge writes it",
    "ReadVariableXlaSplitND": "TPU SPMD variable sharding: only the TPU bridge writes it",
    # XLA's own ops (docs/xla_ops.md)
    **{op: "refused with the target's name: a custom call runs code registered with XLA's runtime (a C++ "
           "function of the process), which a StableHLO module for IREE cannot call"
       for op in ("XlaCustomCall", "XlaCustomCallV2")},
    **{op: "a cross-replica collective (TPU/multi-device XLA programs); hlobridge runs one device per session, "
           "its data parallelism is MPI ranks with all-reduce units between clusters (docs/distributed)"
       for op in ("XlaAllReduce", "XlaReduceScatter")},
    **{op: "a host/device channel of XLA's runtime (send/recv by rendezvous name): nothing in a single compiled "
           "module to pair it with" for op in ("XlaSend", "XlaRecv")},
    "_XlaAotOnlyVarHandleOp": "tfcompile's ahead-of-time variables: only tfcompile writes it",
}


@dataclass(frozen=True)
class OpCoverage:
    """One XLA op as hlobridge treats it: status (compiled, inlined, kernel only, missing) and
    the reason where it is not compiled."""
    op: str
    status: str
    reason: str = ""


@cache
def xla_ops() -> dict:
    """{"tensorflow": version, "device": ..., "ops": [...], "xla_internal": [...]}."""
    return json.loads(_DATA.read_text())


def op_coverage(op: str) -> OpCoverage:
    """How hlobridge treats XLA op `op`."""
    entry = REGISTRY.get(op)
    if entry is not None and entry.compiles:
        return OpCoverage(op, "compiled")
    if op in INLINED:
        return OpCoverage(op, "inlined", INLINED[op])
    status = "missing" if entry is None else "kernel only" if entry.kernel is not None else "refused"
    return OpCoverage(op, status, NOT_COMPILED.get(op, "not yet"))


def all_xla_ops() -> list[str]:
    """Every op XLA compiles: TensorFlow's and XLA's own `Xla*` ops."""
    data = xla_ops()
    return sorted(data["ops"] + data["xla_internal"])


def xla_coverage() -> list[OpCoverage]:
    """Every op XLA compiles (its Xla* ops included), as hlobridge treats it, sorted by name."""
    return [op_coverage(op) for op in all_xla_ops()]


def coverage_summary(rows: list[OpCoverage]) -> str:
    """'hlobridge compiles C of N ops ... (P%)': the README's count, from the same rows."""
    n = len(rows)
    count = {s: sum(r.status == s for r in rows) for s in ("compiled", "inlined", "kernel only", "refused", "missing")}
    covered = count["compiled"] + count["inlined"]
    data = xla_ops()
    return (f"hlobridge compiles {count['compiled']} of the {n} ops TensorFlow {data['tensorflow']}'s XLA "
            f"compiles ({data['device']}, its {len(data['xla_internal'])} Xla* ops included), and inlines "
            f"{count['inlined']} more: "
            f"{covered}/{n} = {100 * covered / n:.1f}%. Not compiled: {count['kernel only']} run on "
            f"their reference kernel, {count['refused']} are refused by name, {count['missing']} are not registered.")
