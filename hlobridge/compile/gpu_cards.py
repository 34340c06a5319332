"""The GPUs the static CUDA report (debug/gpu_report.py) estimates for: one table, each number
with its source.

Rates are dense (no 2:4 sparsity) peak rates in TFLOP/s, as the vendor's datasheet gives them
(the datasheets print the sparse rates, twice these, for the tensor cores); `bandwidth` is
memory bandwidth in GB/s, measured where a measurement exists. An H100 runs IREE 3.13's sm_80
PTX (IREE has no sm_90 target: no wgmma), whose `mma.sync` cannot reach the datasheet's
Hopper rates: the estimate is a lower bound of the time, not a prediction (docs/gpu.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HlobridgeError


@dataclass(frozen=True)
class Card:
    """A GPU's peak rates (TFLOP/s, dense) and memory bandwidth (GB/s), and where they come from."""

    name: str
    bandwidth: float  # GB/s
    f32: float  # SIMT FP32 (FMA counted as two)
    tf32: float  # tensor cores, TF32 inputs, f32 accumulation
    bf16: float  # tensor cores, bf16 (or f16) inputs, f32 accumulation
    source: str
    # What one dispatch costs beyond its work: a kernel launch inside a recorded command buffer
    # (IREE's CUDA HAL replays command buffers as CUDA graphs). An assumption, not a measurement.
    dispatch_us: float = 2.0

    def rate(self, kind: str) -> float:
        """Peak TFLOP/s for an instruction kind: "f32", "tf32", "bf16" or "f16"."""
        return {"f32": self.f32, "tf32": self.tf32, "bf16": self.bf16, "f16": self.bf16}[kind]


CARDS = {c.name: c for c in (
    Card("h100", 3000.0, 67.0, 494.7, 989.4,
         "NVIDIA H100 SXM5 datasheet (FP32 67, TF32 989 and BF16 1979 TFLOP/s with sparsity, halved "
         "for dense); bandwidth 3.0 TB/s measured on the H100 of issue 28 (datasheet 3.35 TB/s)"),
    Card("h100-pcie", 2000.0, 51.0, 378.0, 756.0,
         "NVIDIA H100 PCIe datasheet (FP32 51, TF32 756 and BF16 1513 TFLOP/s with sparsity, halved; "
         "bandwidth 2.0 TB/s)"),
    Card("h200", 4800.0, 67.0, 494.7, 989.4,
         "NVIDIA H200 SXM datasheet (H100 SXM's rates; bandwidth 4.8 TB/s)"),
    Card("a100", 2039.0, 19.5, 156.0, 312.0,
         "NVIDIA A100 80GB SXM datasheet (FP32 19.5, TF32 156, BF16 312 TFLOP/s dense; 2,039 GB/s)"),
)}
DEFAULT_CARD = "h100"


def card(name: str) -> Card:
    """The card named `name`; an unknown name is an error listing the known ones."""
    found = CARDS.get(name.lower())
    if found is None:
        raise HlobridgeError(f"unknown GPU card '{name}'; choose one of {', '.join(CARDS)}")
    return found
