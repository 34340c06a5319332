"""The IREE rows that benchmarks/gpu_check.py adds to its GPU run (issue 28): each a name and
the CompileOptions keywords of one IREE CUDA build to measure against the plain "iree" row.

GPU time is scarce (15 minutes a session, every row compiles ResNet-50 and runs it per
precision), so each row here answers one question the static report (docs/gpu.md,
`hlobridge-compile --target cuda --stats`) cannot:

- cpu-lowering: ResNet-50 lowered the CPU's way (im2col, row taps, MatMul in TF's blocks of
  256) and compiled for CUDA, i.e. every build before the lowering chose per target. The plain
  row against it measures part 2 (the report: bf16 training 1,486 -> 923 dispatches, 68.7 ->
  43.9 GB moved, roofline 25.9 -> 16.7 ms on an H100).
- bf16x3: f32 dots and convolutions as three bf16 tensor-core products
  (passes/ir/split_contractions.py), IREE's stand-in for TF32, which its CUDA target lacks.
  Only the f32 and tf32 rows change (gpu_check sets `precision` per row; bf16 stays bf16).

Keywords gpu_check sets itself (precision, matmul_precision, target, backend) are left out:
it overrides them per row.
"""

from __future__ import annotations


def variants() -> list[tuple[str, dict]]:
    """(variant name, CompileOptions keywords) of each extra IREE row, most telling first."""
    return [
        ("cpu-lowering", {"lowering_target": "llvm-cpu"}),
        ("bf16x3", {"bf16x3": True}),
    ]
