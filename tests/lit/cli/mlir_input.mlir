// RUN: %hlobridge-opt %s --stage simplify | FileCheck %s
// StableHLO text in, hlobridge's simplify stage out: the private helper is inlined and dropped.
func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NOT: call
// CHECK: stablehlo.add %arg0, %arg0
// CHECK-NOT: func.func private @twice
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
