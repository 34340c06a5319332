"""benchmarks/gpu_iree_variants.py: the IREE rows gpu_check.py runs on a GPU, each a valid set
of CompileOptions keywords whose build differs from the plain row's (compile-only here)."""

from dataclasses import replace

import numpy as np

from benchmarks.gpu_iree_variants import variants
from hlobridge.compile import driver as compiler
from hlobridge.compile.options import CompileOptions
from hlobridge.frontend.graph_builder import GraphBuilder

# what gpu_check sets per row itself: a variant must not rely on them
ROW_KEYWORDS = {"precision", "matmul_precision", "target", "backend"}


def _graph():
    b = GraphBuilder()
    x, w = b.placeholder("x", np.float32, (2, 8, 8, 16)), b.placeholder("w", np.float32, (3, 3, 16, 32))
    b.op("Conv2D", [x, w], name="conv", T=np.float32, strides=[1, 1, 1, 1], padding="SAME")
    return b.graph()


def test_variants_are_named_compile_options_that_change_the_cuda_build():
    found = variants()
    names = [n for n, _ in found]
    assert names and len(set(names)) == len(names)
    plain = CompileOptions(target="cuda", precision="f32")
    plain_text = compiler.lower_graph(_graph(), outputs=["conv:0"], target=plain.lowers_for(),
                                      stages=plain.stages()).text()
    for name, keywords in found:
        assert not ROW_KEYWORDS & set(keywords), name
        options = replace(plain, **keywords)
        options.iree_flags()  # valid
        text = compiler.lower_graph(_graph(), outputs=["conv:0"], target=options.lowers_for(),
                                    stages=options.stages()).text()
        assert text != plain_text, f"variant {name} builds what the plain row builds"
        vmfb = compiler.compile_mlir(text, options)
        assert len(vmfb) > 1000
