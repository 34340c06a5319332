// RUN: %hlobridge-opt %s --passes symbol-dce | FileCheck %s
// Upstream symbol-dce as a named pass: private functions nobody calls go; called ones,
// and public ones, stay.

// CHECK-NOT: func.func private @unused
func.func private @unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// CHECK: func.func private @called
func.func private @called(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A private function only another dead one calls is dead too.
// CHECK-NOT: func.func private @only_called_by_dead
// CHECK-NOT: func.func private @dead_caller
func.func private @only_called_by_dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @dead_caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @only_called_by_dead(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @main
// CHECK: call @called
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @called(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @public_uncalled
func.func @public_uncalled(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
