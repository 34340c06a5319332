"""A batched matmul fed by a softmax computes the right numbers when data tiling is asked for.

IREE 3.13 miscompiles exactly this with data tiling on (every batch after the first came out
wrong: docs/keras-sweep.md has the 12-line reproducer; this graph reproduces it). hlobridge
compiles modules with a batched dot untiled (compile/iree.py `_has_static_batched_dot`). Putting the
dot's operands behind an optimization barrier also gave the right numbers with tiling kept, but
ran slower than untiled (BERT-tiny inference 2.5-2.7 ms a step against 2.2, its training 19-20
against 16-18). The end-to-end check is tests/e2e/test_keras_layers.py (Attention,
AdditiveAttention, Dot(normalize=True) under jit="auto")."""

import numpy as np
import pytest

from hlobridge.compile.driver import compile_graph
from hlobridge.compile.options import CompileOptions
from hlobridge.frontend.graph_builder import GraphBuilder

RNG = np.random.default_rng(3)
W = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def softmax_then_batched_matmul():
    """y = (e / sum(e, -1)) @ W with e = exp(x): the miscompiled pattern, W a constant."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (2, 3, 3))
    e = b.op("Exp", [x], name="e", T=np.float32)
    s = b.op("Sum", [e, b.const("axis", np.int32(-1))], name="s", T=np.float32, Tidx=np.int32, keep_dims=True)
    p = b.op("RealDiv", [e, s], name="p", T=np.float32)
    b.op("BatchMatMulV2", [p, b.const("w", W)], name="y", T=np.float32, adj_x=False, adj_y=False)
    return b.graph()


@pytest.mark.parametrize("tiling", ["on", "off", "ahead"])
def test_softmax_into_batched_matmul_is_right_whether_data_tiling_is_asked_for_or_not(tiling):
    model = compile_graph(softmax_then_batched_matmul(), inputs=["x:0"], outputs=["y:0"],
                          options=CompileOptions(data_tiling=tiling))
    assert model.options.data_tiling == tiling
    x = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    e = np.exp(x.astype(np.float64))
    want = (e / e.sum(-1, keepdims=True)) @ W
    (got,) = model.load().run({"x:0": x}).values()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
