"""The lowering chosen for CUDA (OpContext.target): convolutions and their gradients as one
stablehlo.convolution, MatMul without TF's CPU blocks. Checked on the CPU: lowered for cuda,
compiled for llvm-cpu, against the NumPy kernels."""

import numpy as np
import pytest

from hlobridge.compile import driver as compiler
from hlobridge.debug.testing import check_op, single_op_graph

RNG = np.random.default_rng(28)


def _conv_cases():
    cases = []
    for stride, padding, size, k in ((1, "SAME", 9, 3), (2, "SAME", 9, 3), (2, "VALID", 10, 3), (1, "VALID", 8, 1),
                                     (2, "SAME", 11, 7), (2, "SAME", 9, 1), (2, "VALID", 8, 1)):
        x = RNG.standard_normal((2, size, size, 5)).astype(np.float32)
        w = RNG.standard_normal((k, k, 5, 6)).astype(np.float32)
        attrs = dict(T=np.float32, strides=[1, stride, stride, 1], padding=padding)
        out = -(-size // stride) if padding == "SAME" else (size - k) // stride + 1
        dy = RNG.standard_normal((2, out, out, 6)).astype(np.float32)
        tag = f"{k}x{k}-s{stride}-{padding}"
        cases += [pytest.param("Conv2D", [x, w], attrs, id=f"Conv2D-{tag}"),
                  pytest.param("Conv2DBackpropInput", [np.array(x.shape, np.int32), w, dy], attrs,
                               id=f"BackpropInput-{tag}"),
                  pytest.param("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), dy], attrs,
                               id=f"BackpropFilter-{tag}")]
    return cases


@pytest.mark.parametrize("op, inputs, attrs", _conv_cases())
def test_cuda_lowers_convolutions_as_one_convolution(op, inputs, attrs):
    graph, feeds = single_op_graph(op, inputs, attrs)
    text = compiler.lower_graph(graph, inputs=list(feeds), outputs=["op:0"], target="cuda").text()
    pointwise_filter_grad = op == "Conv2DBackpropFilter" and inputs[0].ndim == 4 and \
        inputs[2].shape[1] < inputs[0].shape[1] and list(inputs[1]) [:2] == [1, 1]
    if pointwise_filter_grad:  # a strided 1x1 filter gradient: x's strided positions^T . dy
        assert text.count("stablehlo.dot_general") == 1 and "convolution" not in text
    else:
        assert text.count("stablehlo.convolution") == 1
        assert "dot_general" not in text and "concatenate" not in text
    if op == "Conv2D" and inputs[1].shape[0] == 1 and attrs["strides"][1] > 1:  # strided 1x1: sliced first
        assert "stablehlo.slice" in text and "stride = [1, 1]" in text
    cpu = compiler.lower_graph(graph, inputs=list(feeds), outputs=["op:0"]).text()
    assert "dot_general" in cpu or "convolution" in cpu  # the CPU's own forms are untouched
    check_op(op, inputs, attrs, rtol=1e-4, atol=1e-4, lowering_target="cuda")


def test_cuda_lowers_a_long_matmul_as_one_dot():
    a = RNG.standard_normal((4, 700)).astype(np.float32)
    b = RNG.standard_normal((700, 3)).astype(np.float32)
    graph, feeds = single_op_graph("MatMul", [a, b], dict(T=np.float32))
    cuda = compiler.lower_graph(graph, inputs=list(feeds), outputs=["op:0"], target="cuda").text()
    cpu = compiler.lower_graph(graph, inputs=list(feeds), outputs=["op:0"]).text()
    assert cuda.count("stablehlo.dot_general") == 1 and cpu.count("stablehlo.dot_general") == 3  # TF's blocks
    check_op("MatMul", [a, b], dict(T=np.float32), rtol=1e-4, atol=1e-4, lowering_target="cuda")
