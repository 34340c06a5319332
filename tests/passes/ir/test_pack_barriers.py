"""A `?`-row matmul's operand keeps its pack barrier only where IREE data-tiles the module
(passes/ir/pack_barriers.py, dialects/dynamic_shapes.py's PACK_BARRIER)."""

import numpy as np

from hlobridge.compile.driver import CompileOptions, compile_graph, compile_mlir, lower_graph
from hlobridge.passes.ir.pack_barriers import MARK, add_pack_barriers, drop_pack_barriers
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime.module import load
from tests.compile.test_dynamic_dims import mlp_graph, mlp_reference


def test_the_barrier_is_dropped_and_the_module_still_compiles_and_matches():
    graph = mlp_graph().graph_def
    text = lower_graph(graph).text()
    assert text.count(MARK) == 1  # the one MatMul over the `?` batch
    plain = drop_pack_barriers(text)
    assert MARK not in plain and "optimization_barrier" not in plain
    assert drop_pack_barriers(plain) == plain


def test_tiled_and_untiled_modules_agree_with_numpy():
    graph = mlp_graph().graph_def
    x = np.random.default_rng(5).standard_normal((3, 8)).astype(np.float32)
    for tiling in ("on", "off"):  # with the barrier, and with it dropped
        module = compile_graph(graph, options=CompileOptions(data_tiling=tiling)).load()
        np.testing.assert_allclose(module.run({"x": x})["y:0"], mlp_reference(x), rtol=1e-5, atol=1e-6)


def test_a_static_module_gets_barriers_for_a_second_data_tiled_try():
    """A contraction over K = 300 is two blocks (matmul.py's CONTRACTION_BLOCK): both slices of
    tanh(x) get a barrier, tanh(x) itself none."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (4, 300))
    w = np.random.default_rng(6).standard_normal((300, 3)).astype(np.float32)
    b.op("MatMul", [b.op("Tanh", [x], name="t", T=np.float32), b.const("w", w)], name="y", T=np.float32)
    static = lower_graph(b.graph_def).text()
    held = add_pack_barriers(static)
    assert held.count(MARK) == 2 and add_pack_barriers(held) is None  # the two blocks' slices, once
    xv = np.random.default_rng(7).standard_normal((4, 300)).astype(np.float32)
    module = load(compile_mlir(held, CompileOptions(data_tiling="on")))
    np.testing.assert_allclose(module.run({"x": xv})["y:0"], np.tanh(xv) @ w, rtol=1e-5, atol=1e-5)
