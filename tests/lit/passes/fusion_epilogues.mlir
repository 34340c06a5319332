// RUN: %hlobridge-opt %s --passes fusion | FileCheck %s
// Producers and epilogues: a matmul takes its bias add and ReLU (the broadcast comes along),
// a reduction takes its elementwise producer and the mean's divide; a dot that IREE lowers
// through a reshape (two free lhs dims) stays outside regions with its epilogue, for IREE's
// own dispatch formation to fuse them.

// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK:      %[[R:.*]] = flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   stablehlo.dot_general
// CHECK-NEXT:   stablehlo.broadcast_in_dim
// CHECK-NEXT:   stablehlo.add
// CHECK-NEXT:   %[[M:.*]] = stablehlo.maximum
// CHECK-NEXT:   flow.return %[[M]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
func.func @matmul_bias_relu(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<4x8xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %s = stablehlo.add %d, %bb : tensor<4x8xf32>
  %r = stablehlo.maximum %s, %zero : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @reshaping_dot
// CHECK-NOT:  flow.dispatch.region
// CHECK:      stablehlo.dot_general
// CHECK-NEXT: stablehlo.add
// CHECK-NEXT: return
func.func @reshaping_dot(%x: tensor<2x4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [2] x [0] : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %s = stablehlo.add %d, %b : tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @mean_of_squares
// CHECK:      flow.dispatch.region -> (tensor<4xf32>) {
// CHECK-NEXT:   stablehlo.multiply %arg0, %arg0
// CHECK-NEXT:   stablehlo.reduce
// CHECK-NEXT:   %[[M:.*]] = stablehlo.divide
// CHECK-NEXT:   flow.return %[[M]]
// CHECK-NOT: flow.dispatch.region
// CHECK: return
func.func @mean_of_squares(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<8.0> : tensor<4xf32>
  %sq = stablehlo.multiply %x, %x : tensor<4x8xf32>
  %s = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %m = stablehlo.divide %s, %n : tensor<4xf32>
  return %m : tensor<4xf32>
}
