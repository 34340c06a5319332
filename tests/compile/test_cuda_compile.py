"""Graphs that once aborted IREE's CUDA backend compile for CUDA (compile-only: no GPU needed)."""

import numpy as np

import hlobridge
from hlobridge.compile.options import CompileOptions

# The input gradient of a 3x3 convolution with 256 channels in and out, as every ResNet-50
# training step has (stages 4 and 5: 256 and 512). With the filter flipped by stablehlo.reverse,
# IREE 3.13 fused flip, transpose and reshape into a gather that aborted iree-compile for
# cuda ("LLVM ERROR: Cannot select: v2i16 umul_lohi"); hlobridge now reverses the taps instead.
CONV_INPUT_GRADIENT = """
node { name: "dy" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 2 } dim { size: 8 } dim { size: 8 } dim { size: 256 } } } } }
node { name: "w" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 3 } dim { size: 3 } dim { size: 256 } dim { size: 256 } } } } }
node { name: "sizes" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } } tensor_content: "%s" } } } }
node { name: "dx" op: "Conv2DBackpropInput" input: "sizes" input: "w" input: "dy"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "padding" value { s: "SAME" } }
  attr { key: "strides" value { list { i: 1 i: 1 i: 1 i: 1 } } } }
"""


def test_conv_input_gradient_of_a_wide_3x3_filter_compiles_for_cuda(tmp_path):
    sizes = "".join(f"\\{b:03o}" for b in np.array([2, 8, 8, 256], "<i4").tobytes())
    graph = tmp_path / "g.pbtxt"
    graph.write_text(CONV_INPUT_GRADIENT % sizes)
    model = hlobridge.compile_graph(graph, options=CompileOptions(target="cuda"))
    assert len(model.vmfb) > 1000


def test_strided_1x1_filter_gradient_compiles_for_cuda_in_bf16():
    """ResNet v1's downsampling 1x1 convolutions (stride 2): their filter gradient, as a
    convolution over the batch with bf16 operands, failed IREE 3.13's CUDA codegen ("failed to
    pack reduction dimensions for partial reduction"); lowered for cuda it is a dot_general of
    the strided input positions and dy."""
    from hlobridge.debug.testing import single_op_graph
    x, dy = np.zeros((8, 56, 56, 64), np.float32), np.zeros((8, 28, 28, 64), np.float32)
    graph, feeds = single_op_graph("Conv2DBackpropFilter", [x, np.array([1, 1, 64, 64], np.int32), dy],
                                   dict(T=np.float32, strides=[1, 2, 2, 1], padding="SAME"))
    for precision in ("bf16", "bf16x3"):
        model = hlobridge.compile_graph(graph, inputs=list(feeds), outputs=["op:0"],
                                        options=CompileOptions(target="cuda", precision=precision))
        assert len(model.vmfb) > 1000
