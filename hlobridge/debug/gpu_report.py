"""A report on a CUDA module that needs no GPU: per dispatch, the TF nodes it came from, its
FLOPs and bytes, IREE's codegen pipeline, whether its PTX runs on tensor cores, and a roofline
time on a named card; the totals go into `--stats` as `"gpu"`.

    hlobridge-compile graph.pbtxt -o m.vmfb --target cuda --stats stats.json [--card h100]

IREE 3.13 records nothing per dispatch on CUDA (dispatch_replay.py), so this is the loop to
iterate on between GPU runs. The kernels come from the real compile's executable dumps
(compile/gpu_kernels.py); the dispatches, in command order, and their TF nodes from a second
compile of the located module to IREE's stream phase (dispatch_sources.py), as the profiler
names them. A dispatch inside a loop body counts once.

The estimate of one dispatch is its roofline on the card (compile/gpu_cards.py):
    max(contraction FLOPs on tensor cores / the tensor-core rate of its MMA input type
        + the other FLOPs / the FP32 rate,  bytes / bandwidth)  +  the card's dispatch cost
A contraction's FLOPs count as tensor-core FLOPs only where its dispatch's PTX holds MMA
instructions. It is a lower bound: IREE's kernels reach a fraction of the peaks (docs/gpu.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..compile.gpu_cards import Card
from ..compile.gpu_kernels import Kernel
from ..errors import HlobridgeError
from .dispatch_sources import dispatch_sites

MAX_NODES = 8  # TF nodes listed per dispatch in the JSON (the root first)


@dataclass
class DispatchEstimate:
    """One dispatch site: its kernel's numbers and its roofline time on the card."""

    key: str
    nodes: tuple
    kernel: Kernel | None
    us: float = 0.0
    bound: str = ""  # "compute", "memory" or "launch"

    @property
    def tensor_core_flops(self) -> int:
        """Its contraction FLOPs, where its PTX runs them on tensor cores."""
        return self.kernel.contraction_flops if self.kernel and self.kernel.tensor_core else 0

    def as_dict(self) -> dict:
        """The JSON row of `--stats`' "gpu_dispatches"."""
        k = self.kernel
        row = {"dispatch": self.key, "nodes": list(self.nodes[:MAX_NODES])}
        if len(self.nodes) > MAX_NODES:
            row["more_nodes"] = len(self.nodes) - MAX_NODES
        if k is None:
            return {**row, "note": "no executable dump for this dispatch"}
        row.update({"pipeline": k.pipeline, "mma_kinds": list(k.mma_kinds),
                    "tensor_core": k.tensor_core_type, "flops": k.flops,
                    "tensor_core_flops": self.tensor_core_flops, "bytes": k.bytes,
                    "estimated_us": round(self.us, 3), "bound": self.bound})
        return {**row, "note": k.note} if k.note else row


def roofline_us(kernel: Kernel, card: Card, tensor_core_flops: int) -> tuple[float, str]:
    """(microseconds, what bounds it) of one call of `kernel` on `card` (module docstring)."""
    compute = (tensor_core_flops / (card.rate(kernel.tensor_core_type) * 1e6) if tensor_core_flops else 0.0)
    compute += (kernel.flops - tensor_core_flops) / (card.f32 * 1e6)
    memory = kernel.bytes / (card.bandwidth * 1e3)
    work = max(compute, memory)
    bound = "launch" if work < card.dispatch_us else "compute" if compute >= memory else "memory"
    return work + card.dispatch_us, bound


def estimate(sites: list, kernels: dict[str, Kernel], card: Card) -> list[DispatchEstimate]:
    """The dispatch sites (dispatch_sources.DispatchSite, command order) with their estimates."""
    rows = []
    for site in sites:
        row = DispatchEstimate(site.key, site.nodes, kernels.get(site.key))
        if row.kernel is not None:
            row.us, row.bound = roofline_us(row.kernel, card, row.tensor_core_flops)
        rows.append(row)
    return rows


def totals(rows: list[DispatchEstimate], card: Card) -> dict:
    """`--stats`' "gpu": the module's FLOPs, tensor-core FLOPs, bytes and estimated ms per call."""
    flops = sum(r.kernel.flops for r in rows if r.kernel)
    tc = sum(r.tensor_core_flops for r in rows)
    contraction = sum(r.kernel.contraction_flops for r in rows if r.kernel)
    return {"card": card.name, "flops": flops, "tensor_core_flops": tc,
            "tensor_core_share": round(tc / flops, 4) if flops else 0.0,
            "contraction_flops": contraction,
            "bytes": sum(r.kernel.bytes for r in rows if r.kernel),
            "estimated_ms": round(sum(r.us for r in rows) / 1e3, 4),
            "dispatches": len(rows),
            "pipelines": dict(Counter(r.kernel.pipeline or "?" for r in rows if r.kernel)),
            "missing": sum(1 for r in rows if r.kernel is None)}


def report(located_mlir: str, options, kernels: dict[str, Kernel], card: Card) -> dict:
    """{"gpu": totals, "gpu_dispatches": rows} for a module compiled for CUDA with `options`,
    whose executables were read into `kernels` (compile_mlir's `kernels=`)."""
    if options.target != "cuda":
        raise HlobridgeError(f"the GPU report is for --target cuda, not {options.target}")
    sites = [site for region in dispatch_sites(located_mlir, options) for site in region]
    rows = estimate(sites, kernels, card)
    return {"gpu": totals(rows, card), "gpu_dispatches": [r.as_dict() for r in rows]}


def format_summary(gpu: dict, rows: list[dict], top: int = 5) -> str:
    """A few lines for the terminal: the totals and the `top` dispatches by estimated time."""
    share = f"{100 * gpu['tensor_core_share']:.1f}%"
    lines = [f"gpu ({gpu['card']}): {gpu['dispatches']} dispatches, {gpu['flops'] / 1e9:.2f} GFLOP "
             f"({share} on tensor cores), {gpu['bytes'] / 1e6:.1f} MB, roofline {gpu['estimated_ms']:.3f} ms"]
    for r in sorted((r for r in rows if "estimated_us" in r), key=lambda r: -r["estimated_us"])[:top]:
        lines.append(f"  {r['estimated_us']:9.1f} us  {r['pipeline'] or '?':16} {r['tensor_core'] or 'simt':5} "
                     f"{r['bound']:7} {r['dispatch']}  <- {', '.join(r['nodes'][:3])}")
    return "\n".join(lines)
