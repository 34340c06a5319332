"""Compile options: one dataclass that says what a compile is for, turned into hlobridge's IR
stages and iree-compile's flags."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from hlobridge.passes.ir import pipeline

from ..errors import HlobridgeError

TARGETS = ("llvm-cpu", "cuda")
# Who compiles the StableHLO (compile/backend.py): IREE (the default), XLA through PJRT (the
# `xla` extra: jax and jaxlib), or "auto": XLA where it measured faster for the device and
# is installed, else IREE (compile/backend.py, `resolve`).
BACKENDS = ("iree", "xla", "auto")
# IREE 3.13 has no sm_90 entry (iree-org/iree#22147) and crashes on "hopper". sm_80 code
# runs on A100 natively and on H100/H200 through the driver's PTX JIT.
DEFAULT_CUDA_ARCH = "sm_80"
# Portable CPU defaults: "host" tunes for this machine; cross triples for AOT elsewhere.
DATA_TILING = ("auto", "on", "off", "ahead")
DATA_TILING_FLAG = "--iree-opt-data-tiling"
# data_tiling="ahead": constant weights packed into the tile layout at compile time, into the
# module's read-only data, where "on" packs them when the module is loaded, into each VM
# context's memory. Row parts (runtime/row_split.py) share one copy that way.
AHEAD_DATA_TILING_FLAG = "--iree-global-opt-data-tiling"
CPU_TRIPLES = {"aarch64": "aarch64-unknown-linux-gnu", "x86_64": "x86_64-unknown-linux-gnu"}
# How much of an op's parallel loops one CPU workgroup takes, before IREE splits it among the
# workers. IREE's default, 64, cuts the bench models' dispatches finer than two cores need; at 128
# (2-core VM, A/B of two sessions in one process, median of 9-11 interleaved blocks, this flag
# against none): cnn_train 0.95 and 0.96, bert2_train 0.94, Keras ResNet50 and MobileNetV2 0.97,
# ResNet-50 training and mlp_adam 0.99, BERT-2 inference 1.01-1.03, seed_mnist_softmax 1.04.
CPU_DISTRIBUTION_FLAG = "--iree-llvmcpu-distribution-size=128"
# A convolution's zero padding computed inside the convolution's dispatch (IREE reads the border
# as zeros) instead of a copy of the padded input in a dispatch of its own: MobileNetV2 96x96
# batch 5 has 13 such copies before its depthwise convolutions. iree-benchmark-module, local-sync,
# whole module, median of 7 interleaved runs (2-core VM, 2026-11-28): MobileNetV2 0.84x,
# cnn_infer_bn 0.98x, Keras ResNet50 0.96x; results bit-identical (docs/performance.md).
PAD_FUSION = ("auto", "on", "off")
PAD_FUSION_FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"
# IREE's compile-time evaluation of constant expressions (JitGlobalsPass: the hoisted initializers
# compiled into a module of their own and run) left off: their values are computed once, when
# the module loads. hlobridge's own constant folding (the "simplify" stage,
# passes/ir/constant_fold.py) leaves it nothing to do on the bench models (Keras MobileNetV2,
# ResNet50, BERT-2, cnn_infer_bn: byte-identical modules either way), but where constants feed
# ops it does not fold, IREE's JIT was most of the compile: keras_random_ops' first cluster
# 15.9 -> 5.6 s (`iree-compile`, 2026-11-29). Kept on for data_tiling="ahead", which packs
# weights through it.
NO_CONST_EVAL_FLAG = "--iree-opt-const-eval=false"
# Flags a failing compile drops before giving up (compile/iree.py): IREE 3.13 fails some packs.
OPTIONAL_CPU_FLAGS = (DATA_TILING_FLAG, AHEAD_DATA_TILING_FLAG, PAD_FUSION_FLAG)
TILING_FLAG_OF = {"on": DATA_TILING_FLAG, "ahead": AHEAD_DATA_TILING_FLAG}  # data_tiling -> its flag
TILING_FLAGS = tuple(TILING_FLAG_OF.values())


@dataclass
class CompileOptions:
    """What to compile for and how: target and CPU/GPU model, hlobridge's IR stages
    (precision, fusion) and extra iree-compile flags. Part of every compile cache key."""

    target: str = "llvm-cpu"
    cpu: str = "host"
    cpu_triple: str | None = None
    cuda_arch: str = DEFAULT_CUDA_ARCH
    extra_flags: Sequence[str] = ()
    precision: str = "f32"  # "bf16"/"f16": compute f32 graphs in it (passes/ir/reduce_precision.py)
    # who forms dispatches: "hlobridge" (passes/ir/fusion.py), "iree" (IREE alone) or "none" (one per op)
    fusion: str = "iree"
    # IREE's data tiling (--iree-opt-data-tiling: matmul operands packed into the target's tile
    # layout): "auto" turns it on for modules whose weights are constants (measured: Keras
    # ResNet50 inference 0.81x ms/step, MobileNetV2 and cnn_infer_bn unchanged) and off where
    # variables are arguments (training: IREE 3.13 fails to compile a pack dispatch of cnn_train,
    # "large vector sizes", and the cluster would fall back to reference kernels); "on", "off",
    # "ahead" (packed at compile time, AHEAD_DATA_TILING_FLAG).
    data_tiling: str = "auto"
    # Convolution padding fused into the convolution's dispatch (PAD_FUSION_FLAG), CPU only: "auto"
    # turns it on where data tiling's "auto" does (constant weights: inference, where it was
    # measured; training modules keep IREE's default), "on", "off".
    pad_fusion: str = "auto"
    # Variables the caller hands over written in place (passes/ir/tie_variables.py): the Session
    # turns it on for its clusters; a module for users (hlobridge-compile) leaves its arguments alone.
    tie_variables: bool = False
    # Each function's work estimated into its reflection (passes/ir/work_estimate.py): the Session
    # runs small clusters on the calling thread.
    estimate_work: bool = False
    # "iree" or "xla" (or "auto", which `compile.backend.resolve` decides before compiling)
    backend: str = "iree"
    # Static functions `main_b<size>` beside the dynamic `main` for these batch sizes, and whether a
    # batch may run padded up to the next size where no op mixes rows (compile/buckets.py)
    batch_sizes: tuple = ()
    pad_batches: bool = False
    # f32 dots and convolutions on XLA: "highest" (exact f32, as TensorFlow computes) or "tf32"
    # (XLA:GPU's DEFAULT precision: TF32 tensor cores on Ampere and later). IREE 3.13's CUDA
    # target has no TF32 path, so IREE ignores it.
    matmul_precision: str = "highest"
    # Which target's lowering rules to use (registry.OpContext.target; None: the compile target's).
    # "llvm-cpu" with target="cuda" is every CUDA build before the lowering chose per target:
    # the A/B row of the GPU check (benchmarks/gpu_iree_variants.py).
    lowering_target: str | None = None
    # f32 dots and convolutions as three bf16 products (passes/ir/split_contractions.py): IREE's
    # stand-in for TF32, which its CUDA target lacks; applies where precision is "f32" (the
    # same as precision="bf16x3"), a keyword the GPU check's f32 and tf32 rows keep.
    bf16x3: bool = False
    # Inference batch norms (per-channel scales and shifts after a constant-weight convolution or
    # dot) folded into the weights (passes/ir/fold_batch_norm.py), as ONNX Runtime does: Keras
    # MobileNetV2 batch 1 1.69-1.81 -> 1.67-1.71 ms in iree-benchmark-module (docs/passes.md).
    # False: TF's rounding op for op.
    fold_batch_norm: bool = True
    # Dots of a few rows by constant weights cut into row pieces that fill IREE's CPU matmul tiles
    # (passes/ir/split_narrow_rows.py; llvm-cpu for this host, with data tiling): Keras
    # MobileNetV2 batch 1 1.78 -> 1.50 ms in iree-benchmark-module, bit for bit (docs/passes.md).
    split_narrow_rows: bool = True
    # No --iree-opt-level: IREE's default (O0) measured best (2026-11-24, best of 3 runs, ms/step,
    # O0 vs O2): bert2_train 15.8 vs 72 (O2 fails to compile a dispatch and the cluster falls
    # back), cnn_train 24.6 vs 26.7, mlp_adam 0.92 vs 0.97. docs/performance.md, "Compile options".

    def stages(self) -> tuple:
        """hlobridge's IR pipeline (passes/ir/pipeline.py) for these options."""
        # XLA forms its own fusions: hlobridge's dispatch regions are IREE's (compile/xla_input.py)
        fusion = "iree" if self.backend == "xla" else self.fusion
        precision = "bf16x3" if self.bf16x3 and self.precision == "f32" else self.precision
        return pipeline.build(precision=precision, fusion=fusion, tie_variables=self.tie_variables,
                              estimate_work=self.estimate_work, fold_batch_norm=self.fold_batch_norm,
                              split_narrow_rows=self.splits_narrow_rows())

    def splits_narrow_rows(self) -> bool:
        """Whether the split-narrow-rows stage runs: asked for, and IREE data-tiles matmuls for
        this host's CPU (the tile height it fits is this CPU's; other targets tile otherwise)."""
        return (self.split_narrow_rows and self.backend == "iree" and self.target == "llvm-cpu"
                and self.cpu == "host" and self.cpu_triple is None and self.data_tiling != "off")

    def for_module(self, reads_variables: bool) -> "CompileOptions":
        """These options with `data_tiling` and `pad_fusion` "auto" decided for a module that
        does, or does not, take variables as arguments."""
        decided = "off" if reads_variables else "on"
        return replace(self, data_tiling=decided if self.data_tiling == "auto" else self.data_tiling,
                       pad_fusion=decided if self.pad_fusion == "auto" else self.pad_fusion)

    def lowers_for(self) -> str:
        """The target whose lowering rules build the StableHLO (`lowering_target`, else `target`)."""
        return self.lowering_target or self.target

    def iree_flags(self) -> list[str]:
        """The iree-compile flags these options mean (validated: a bad target or backend is an error)."""
        if self.backend not in BACKENDS:
            raise HlobridgeError(f"unknown backend '{self.backend}'; choose one of {', '.join(BACKENDS)}")
        if self.target == "llvm-cpu":
            flags = [f"--iree-llvmcpu-target-cpu={self.cpu}", CPU_DISTRIBUTION_FLAG]
            if self.cpu_triple:
                triple = CPU_TRIPLES.get(self.cpu_triple, self.cpu_triple)
                flags.append(f"--iree-llvmcpu-target-triple={triple}")
        elif self.target == "cuda":
            if not re.fullmatch(r"sm_\d+a?", self.cuda_arch):
                raise HlobridgeError(f"--cuda-arch must look like sm_80, got '{self.cuda_arch}'")
            flags = [f"--iree-cuda-target={self.cuda_arch}"]
        else:
            raise HlobridgeError(f"unknown target '{self.target}'; choose one of {', '.join(TARGETS)}")
        if self.lowers_for() not in TARGETS:
            raise HlobridgeError(f"unknown lowering target '{self.lowering_target}'; choose one of {', '.join(TARGETS)}")
        # TensorFlow computes float64 in float64; IREE would demote it to f32 by default.
        flags.append("--iree-input-demote-f64-to-f32=false")
        if self.data_tiling not in DATA_TILING:
            raise HlobridgeError(f"data_tiling must be one of {', '.join(DATA_TILING)}, got '{self.data_tiling}'")
        if self.data_tiling in TILING_FLAG_OF:
            flags.append(TILING_FLAG_OF[self.data_tiling])
        if self.data_tiling != "ahead":
            flags.append(NO_CONST_EVAL_FLAG)
        if self.pad_fusion not in PAD_FUSION:
            raise HlobridgeError(f"pad_fusion must be one of {', '.join(PAD_FUSION)}, got '{self.pad_fusion}'")
        if self.pad_fusion == "on" and self.target == "llvm-cpu":
            flags.append(PAD_FUSION_FLAG)
        bad = [f for f in self.extra_flags if not isinstance(f, str) or not re.fullmatch(r"--?[A-Za-z]\S*", f)]
        if bad:  # ('' reaches compile_str as a TypeError; argparse turns --iree-flag=-- into [])
            shown = bad[0] if isinstance(bad[0], str) else "--"
            raise HlobridgeError(f"--iree-flag '{shown}': expected an iree-compile flag like --iree-opt-level=O2")
        return flags + list(self.extra_flags)
