// RUN: %hlobridge-opt %s --passes canonicalize | FileCheck %s --check-prefix=CANON
// RUN: %hlobridge-opt %s --passes stablehlo-canonicalize | FileCheck %s --check-prefix=SHLO
// Upstream canonicalize removes dead pure ops but folds almost nothing of StableHLO;
// IREE's stablehlo-canonicalize folds x - 0, reshape chains and constant adds.

// CANON-LABEL: func.func @dead_ops
// CANON-NOT: stablehlo.exponential
// CANON: return %arg0
// SHLO-LABEL: func.func @dead_ops
// SHLO-NOT: stablehlo.exponential
func.func @dead_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %dead = stablehlo.exponential %x : tensor<4xf32>
  return %x : tensor<4xf32>
}

// CANON-LABEL: func.func @subtract_zero
// CANON: stablehlo.subtract
// SHLO-LABEL: func.func @subtract_zero
// SHLO-NOT: stablehlo.subtract
// SHLO: return %arg0
func.func @subtract_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %s = stablehlo.subtract %x, %zero : tensor<4xf32>
  return %s : tensor<4xf32>
}

// CANON-LABEL: func.func @constant_add
// CANON: stablehlo.add
// SHLO-LABEL: func.func @constant_add
// SHLO-NOT: stablehlo.add
// SHLO: stablehlo.constant dense<[4.000000e+00, 6.000000e+00]>
func.func @constant_add() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %s = stablehlo.add %a, %b : tensor<2xf32>
  return %s : tensor<2xf32>
}
