"""Modules with a batched dot_general compile without data tiling (IREE 3.13 miscompiles a
batched matmul fed by a softmax with it on: compile/iree.py's _has_static_batched_dot). The end-to-end
check is tests/e2e/test_keras_layers.py (Attention, AdditiveAttention, Dot under jit="auto")."""

from hlobridge.compile.iree import _has_static_batched_dot

BATCHED = ("%8 = stablehlo.dot_general %7, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1], "
           "precision = [DEFAULT, DEFAULT] : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>")
PLAIN = ("%0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : "
         "(tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>")


def test_batched_dot_is_found():
    assert _has_static_batched_dot(f"module {{\n{PLAIN}\n{BATCHED}\n}}")
    assert _has_static_batched_dot(BATCHED.encode())


def test_plain_dot_keeps_data_tiling():
    assert not _has_static_batched_dot(f"module {{\n{PLAIN}\n}}")


def test_a_batched_dot_over_question_marks_keeps_data_tiling():
    """Its operands are behind barriers (dialects/dynamic_shapes.py, BATCHED_DOT_BARRIERS)."""
    dynamic = BATCHED.replace("2x3x3", "?x3x3").replace("2x3x4", "?x3x4")
    assert not _has_static_batched_dot(f"module {{\n{PLAIN}\n{dynamic}\n}}")
    assert _has_static_batched_dot(f"module {{\n{dynamic}\n{BATCHED}\n}}")
