// RUN: %hlobridge-opt %s --passes cse | FileCheck %s
// Upstream CSE as a named pass: identical pure ops merge; ops with different attributes,
// and ops inside different reduction bodies' scopes, do not.

// CHECK-LABEL: func.func @identical_ops_merge
// CHECK-COUNT-1: stablehlo.exponential
// CHECK-NOT: stablehlo.exponential
// CHECK: stablehlo.add %[[E:.*]], %[[E]]
func.func @identical_ops_merge(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.exponential %x : tensor<4xf32>
  %b = stablehlo.exponential %x : tensor<4xf32>
  %s = stablehlo.add %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @different_attributes_stay
// CHECK: stablehlo.transpose %arg0, dims = [1, 0, 2]
// CHECK: stablehlo.transpose %arg0, dims = [0, 2, 1]
func.func @different_attributes_stay(%x: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>) {
  %a = stablehlo.transpose %x, dims = [1, 0, 2] : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %b = stablehlo.transpose %x, dims = [0, 2, 1] : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  return %a, %b : tensor<2x2x2xf32>, tensor<2x2x2xf32>
}

// Constants merge, and so does what is built from them, transitively.
// CHECK-LABEL: func.func @chains_merge
// CHECK-COUNT-1: stablehlo.constant
// CHECK-COUNT-1: stablehlo.multiply
// CHECK-NOT: stablehlo.multiply
// CHECK: return %[[M:.*]], %[[M]]
func.func @chains_merge(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c1 = stablehlo.constant dense<3.0> : tensor<4xf32>
  %c2 = stablehlo.constant dense<3.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %c1 : tensor<4xf32>
  %b = stablehlo.multiply %x, %c2 : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
