"""--precision bf16x3 (passes/ir/split_contractions.py): f32 contractions as three bf16
products, near f32's accuracy and, for CUDA, on tensor cores."""

import numpy as np
import pytest

import hlobridge
from hlobridge.compile import driver as compiler
from hlobridge.compile.options import CompileOptions
from hlobridge.frontend.graph_builder import GraphBuilder

RNG = np.random.default_rng(3)


def _graph():
    """MatMul [16,300]x[300,24] and a 3x3 Conv2D [2,8,8,12]x[3,3,12,16] (SAME)."""
    b = GraphBuilder()
    a, w = b.placeholder("a", np.float32, (16, 300)), b.placeholder("w", np.float32, (300, 24))
    x, k = b.placeholder("x", np.float32, (2, 8, 8, 12)), b.placeholder("k", np.float32, (3, 3, 12, 16))
    b.op("MatMul", [a, w], name="mm", T=np.float32)
    b.op("Conv2D", [x, k], name="conv", T=np.float32, strides=[1, 1, 1, 1], padding="SAME")
    return b.graph()


def _feeds():
    return [RNG.standard_normal(s).astype(np.float32) for s in ((16, 300), (300, 24), (2, 8, 8, 12), (3, 3, 12, 16))]


def _exact(a, w, x, k):
    a, w, x, k = (v.astype(np.float64) for v in (a, w, x, k))
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = sum(np.einsum("nhwc,co->nhwo", xp[:, i:i + 8, j:j + 8], k[i, j]) for i in range(3) for j in range(3))
    return a @ w, conv


# ids without "cuda": conftest skips tests named so where no GPU runs them (this one runs on the CPU)
@pytest.mark.parametrize("lowering", ["llvm-cpu", "cuda"], ids=["cpu-lowering", "gpu-lowering"])
def test_bf16x3_is_near_f32_and_far_better_than_bf16(lowering):
    feeds = _feeds()
    exact = _exact(*feeds)
    errors = {}
    for precision in ("f32", "bf16x3", "bf16"):
        lowered = compiler.lower_graph(_graph(), outputs=["mm:0", "conv:0"], target=lowering,
                                       stages=CompileOptions(precision=precision).stages())
        if precision == "bf16x3":
            text = lowered.text()
            assert text.count("stablehlo.dot_general") % 3 == 0 and "xbf16>" in text
        module = hlobridge.runtime.load(compiler.compile_mlir(lowered.text(), CompileOptions()), device="cpu")
        got = module.main(*feeds)
        errors[precision] = max(np.abs(g - e).max() / np.abs(e).max() for g, e in zip(got, exact))
    assert errors["bf16x3"] < 1e-5 and errors["bf16x3"] < errors["bf16"] / 50, errors


def test_bf16x3_puts_the_products_on_tensor_cores_for_cuda(tmp_path):
    from hlobridge.cli import compile as compile_cli
    import json
    from hlobridge.frontend.graphdef import write_graphdef
    b = GraphBuilder()
    a, w = b.placeholder("a", np.float32, (128, 256)), b.placeholder("w", np.float32, (256, 64))
    b.op("MatMul", [a, w], name="mm", T=np.float32)
    write_graphdef(b.graph_def, tmp_path / "g.pbtxt")
    for precision in ("f32", "bf16x3"):
        stats = tmp_path / f"{precision}.json"
        assert compile_cli.main([str(tmp_path / "g.pbtxt"), "-o", str(tmp_path / "m.vmfb"), "--target", "cuda",
                                 "--precision", precision, "--stats", str(stats)]) == 0
        gpu = json.loads(stats.read_text())["gpu"]
        products = 2 * 128 * 64 * 256 * (3 if precision == "bf16x3" else 1)
        assert gpu["contraction_flops"] == products
        assert gpu["tensor_core_flops"] == (products if precision == "bf16x3" else 0)
