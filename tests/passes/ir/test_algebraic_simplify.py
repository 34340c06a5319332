"""algebraic-simplify against IREE itself: it must keep every float result bit for bit, on the
inputs where float algebra breaks (-0.0, infinities, NaN). The lit tests show the rewrites;
this shows they are right."""

import numpy as np

from tests.passes.ir.iree_check import apply_passes, run_iree

SPECIAL = np.array([-0.0, 0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3e38], np.float32)


ALGEBRA = """
func.func @main(%x: tensor<8xf32>, %y: tensor<8xf32>, %p: tensor<8xi1>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<8xf32>
  %pz = stablehlo.constant dense<0.0> : tensor<8xf32>
  %nz = stablehlo.constant dense<-0.0> : tensor<8xf32>
  %a = stablehlo.multiply %x, %one : tensor<8xf32>
  %b = stablehlo.divide %x, %one : tensor<8xf32>
  %c = stablehlo.add %nz, %x : tensor<8xf32>
  %d = stablehlo.subtract %x, %pz : tensor<8xf32>
  %n1 = stablehlo.negate %x : tensor<8xf32>
  %e = stablehlo.negate %n1 : tensor<8xf32>
  %f = stablehlo.add %x, %pz : tensor<8xf32>
  %g = stablehlo.subtract %x, %nz : tensor<8xf32>
  %h = stablehlo.select %p, %y, %y : tensor<8xi1>, tensor<8xf32>
  %lo = stablehlo.convert %x : (tensor<8xf32>) -> tensor<8xbf16>
  %up = stablehlo.convert %lo : (tensor<8xbf16>) -> tensor<8xf32>
  %lo2 = stablehlo.convert %up : (tensor<8xf32>) -> tensor<8xbf16>
  %i = stablehlo.convert %lo2 : (tensor<8xbf16>) -> tensor<8xf32>
  return %a, %b, %c, %d, %e, %f, %g, %h, %i : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
"""


def test_algebraic_simplify_keeps_float_results_bit_for_bit():
    simplified = apply_passes(ALGEBRA, "algebraic-simplify")
    assert simplified.count("stablehlo.multiply") == 0 and simplified.count("stablehlo.negate") == 0
    assert simplified.count("stablehlo.convert") == 2  # the f32->bf16->f32 rounding stays once
    y = SPECIAL[::-1].copy()
    p = np.array([True, False] * 4)
    before = run_iree(ALGEBRA, "main", SPECIAL, y, p)
    after = run_iree(simplified, "main", SPECIAL, y, p)
    for i, (b, a) in enumerate(zip(before, after)):
        # NaN payloads may differ between the runtime's arithmetic and a pass-through; the bits
        # of everything else (the sign of zero included) must not.
        same = (b.view(np.uint32) == a.view(np.uint32)) | (np.isnan(b) & np.isnan(a))
        assert same.all(), f"result {i}: {b} before, {a} after"
