"""Why passes/ir/tie_variables.py ties so little: IREE 3.13 writes a tied argument in place
without waiting for the reads of its old value that the new value does not depend on.

Here the weights feed a matmul (the backward pass's input gradient) and an update that does not
wait for it. Tied, the update runs first and the matmul reads the new weights; untied, the
numbers are right (tests/lit/passes/tie_variables.mlir: the pass leaves such weights untied). When this first case starts giving the right
answer, IREE orders such writes itself, and the pass may tie weights as well as slots."""

import numpy as np

from tests.passes.ir.iree_check import run_iree

RNG = np.random.default_rng(5)
X = RNG.standard_normal((64, 64)).astype(np.float32)
W = RNG.standard_normal((64, 64)).astype(np.float32)

UPDATE_THEN_READ = """
func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x64xf32> TIE) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %two = stablehlo.constant dense<2.0> : tensor<64x64xf32>
  %w2 = stablehlo.multiply %w, %two : tensor<64x64xf32>
  %wt = stablehlo.transpose %w, dims = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %dx = stablehlo.dot_general %x, %wt, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %dx, %w2 : tensor<64x64xf32>, tensor<64x64xf32>
}
"""


def _error(tie: str) -> float:
    dx, w2 = run_iree(UPDATE_THEN_READ.replace("TIE", tie), "main", X, W)
    np.testing.assert_array_equal(w2, 2 * W)
    return float(np.abs(dx - X @ W.T).max())


def test_iree_writes_a_tied_argument_before_an_unrelated_read_of_it():
    assert _error("{iree.abi.output = 1 : index}") > 1.0  # dx computed from 2 * W


def test_untied_the_read_sees_the_old_value():
    assert _error("") < 1e-3
