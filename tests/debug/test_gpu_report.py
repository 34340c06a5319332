"""The GPU report of `hlobridge-compile --target cuda --stats` (compile-only: no GPU needed)."""

import json

import numpy as np
import pytest

from hlobridge.cli import compile as compile_cli
from hlobridge.compile.gpu_cards import CARDS, card
from hlobridge.compile.gpu_kernels import Kernel, ptx_entries, tensor_core_instructions
from hlobridge.compile.iree import compile_mlir
from hlobridge.compile.options import CompileOptions
from hlobridge.debug.gpu_report import roofline_us
from hlobridge.errors import HlobridgeError
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import write_graphdef

MATMUL = """
func.func @main(%a: tensor<128x256x{t}>, %b: tensor<256x64x{t}>) -> tensor<128x64xf32> {{
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<128x256x{t}>, tensor<256x64x{t}>) -> tensor<128x64xf32>
  return %0 : tensor<128x64xf32>
}}
"""


def _kernels(mlir: str) -> dict:
    kernels = {}
    compile_mlir(mlir, CompileOptions(target="cuda"), kernels=kernels)
    return kernels


def test_a_bf16_matmul_runs_on_tensor_cores_and_an_f32_one_does_not():
    (bf16,) = _kernels(MATMUL.format(t="bf16")).values()
    assert bf16.tensor_core_type == "bf16" and bf16.tensor_core["bf16"] > 0
    assert "NV_MMA_SYNC_F32_16x8x16_BF16" in bf16.mma_kinds
    assert bf16.flops == bf16.contraction_flops == 2 * 128 * 64 * 256
    assert bf16.bytes == 2 * (128 * 256 + 256 * 64) + 4 * 128 * 64
    (f32,) = _kernels(MATMUL.format(t="f32")).values()
    # IREE 3.13's sm_80 target lists no TF32 intrinsic: f32 matmuls are SIMT FMAs (docs/gpu.md)
    assert f32.tensor_core == {} and f32.tensor_core_type is None and f32.mma_kinds == ()
    assert f32.contraction_flops == 2 * 128 * 64 * 256 and f32.pipeline


def test_tensor_core_instructions_are_counted_by_input_type():
    ptx = """.visible .entry k1(
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f2};
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f2};
    wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32 {%f1};
    fma.rn.f32 %f1, %f2, %f3, %f4;
.visible .entry k2(
    fma.rn.f32 %f1, %f2, %f3, %f4;
"""
    entries = ptx_entries(ptx)
    assert sorted(entries) == ["k1", "k2"]
    assert tensor_core_instructions(entries["k1"]) == {"bf16": 1, "f16": 1, "tf32": 1}
    assert not tensor_core_instructions(entries["k2"])


def test_roofline_takes_the_slower_of_compute_and_memory():
    h100 = card("H100")
    mm = Kernel("k", flops=2 * 10**12, contraction_flops=2 * 10**12, bytes=10**6, tensor_core={"bf16": 8})
    us, bound = roofline_us(mm, h100, 2 * 10**12)
    assert bound == "compute" and us == pytest.approx(2e6 / h100.bf16 + h100.dispatch_us)
    us, _ = roofline_us(mm, h100, 0)  # the same work off tensor cores: the FP32 rate
    assert us == pytest.approx(2e6 / h100.f32 + h100.dispatch_us)
    copy = Kernel("c", bytes=3 * 10**9)
    us, bound = roofline_us(copy, h100, 0)
    assert bound == "memory" and us == pytest.approx(1000.0 + h100.dispatch_us)  # 3 GB at 3.0 TB/s
    with pytest.raises(HlobridgeError, match="unknown GPU card 'v100'.*h100"):
        card("v100")
    assert all(c.source for c in CARDS.values())


@pytest.fixture(scope="module")
def conv_matmul_graph(tmp_path_factory):
    """x[2,8,8,16] conv 3x3 (SAME) with w[3,3,16,32] -> Relu -> reshape [2,2048] @ v[2048,10]."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 8, 8, 16))
    w = b.placeholder("w", np.float32, (3, 3, 16, 32))
    v = b.placeholder("v", np.float32, (2048, 10))
    y = b.op("Conv2D", [x, w], name="conv", T=np.float32, strides=[1, 1, 1, 1], padding="SAME")
    r = b.op("Relu", [y], name="relu", T=np.float32)
    flat = b.op("Reshape", [r, b.const("shape", np.array([2, 2048], np.int32))], name="flat", T=np.float32)
    b.op("MatMul", [flat, v], name="logits", T=np.float32)
    path = tmp_path_factory.mktemp("gpu_report") / "g.pbtxt"
    write_graphdef(b.graph_def, path)
    return path


CONV_FLOPS = 2 * (2 * 8 * 8 * 32) * (3 * 3 * 16)
MATMUL_FLOPS = 2 * 2 * 10 * 2048


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_cli_stats_report_the_gpu_work_of_a_conv_and_a_matmul(conv_matmul_graph, tmp_path, capsys, precision):
    stats_path = tmp_path / "stats.json"
    assert compile_cli.main([str(conv_matmul_graph), "-o", str(tmp_path / "m.vmfb"), "--target", "cuda",
                             "--precision", precision, "--stats", str(stats_path), "--card", "a100"]) == 0
    stats = json.loads(stats_path.read_text())
    gpu, rows = stats["gpu"], stats["gpu_dispatches"]
    assert set(gpu) >= {"flops", "tensor_core_flops", "estimated_ms", "card"} and gpu["card"] == "a100"
    assert gpu["contraction_flops"] == CONV_FLOPS + MATMUL_FLOPS  # however IREE and hlobridge split them
    assert gpu["flops"] >= gpu["contraction_flops"] and gpu["missing"] == 0
    assert gpu["dispatches"] == stats["dispatches"] == len(rows)
    assert gpu["estimated_ms"] == pytest.approx(sum(r["estimated_us"] for r in rows) / 1e3, abs=1e-3)
    conv_rows = [r for r in rows if "conv" in r["nodes"] and r["flops"] >= CONV_FLOPS // 3]
    assert conv_rows and all(r["pipeline"] for r in rows)
    if precision == "f32":
        assert gpu["tensor_core_flops"] == 0  # no TF32 MMA in IREE 3.13
    else:
        assert gpu["tensor_core_flops"] > 0 and any(r["tensor_core"] == "bf16" for r in conv_rows)
    assert "gpu (a100)" in capsys.readouterr().err
