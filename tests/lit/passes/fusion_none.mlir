// RUN: %hlobridge-opt %s --passes no-fusion | FileCheck %s
// --fusion=none: every computing op in a region of its own, so IREE fuses nothing; constants
// and reshapes (metadata to IREE) stay outside.

// CHECK-LABEL: func.func @chain
// CHECK:      stablehlo.constant
// CHECK-NEXT: %[[B:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.broadcast_in_dim %arg1
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[A:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.add %arg0, %[[B]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[M:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.maximum %[[A]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = stablehlo.reshape %[[M]]
// CHECK-NEXT: %[[S:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.reduce(%[[R]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: return %[[S]]
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<32xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %a = stablehlo.add %x, %bb : tensor<4x8xf32>
  %m = stablehlo.maximum %a, %bb : tensor<4x8xf32>
  %r = stablehlo.reshape %m : (tensor<4x8xf32>) -> tensor<32x1xf32>
  %s = stablehlo.reduce(%r init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<32x1xf32>, tensor<f32>) -> tensor<32xf32>
  return %s : tensor<32xf32>
}

// A dot's epilogue, which --fusion=hlobridge keeps with the dot, gets regions of its own.
// CHECK-LABEL: func.func @dot_and_epilogue
// CHECK:      %[[D:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.dot_general %arg0, %arg1
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[A:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.add %[[D]], %arg2
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[T:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.tanh %[[A]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: return %[[T]]
func.func @dot_and_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = stablehlo.add %d, %b : tensor<4x16xf32>
  %t = stablehlo.tanh %a : tensor<4x16xf32>
  return %t : tensor<4x16xf32>
}

// Concatenates and pads stay outside regions, as in --fusion=hlobridge: IREE forms them.
// CHECK-LABEL: func.func @left_to_iree
// CHECK:      %[[E:.*]] = flow.dispatch.region
// CHECK-NEXT:   stablehlo.exponential %arg0
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[C:.*]] = stablehlo.concatenate %[[E]], %arg1
// CHECK-NEXT: %[[P:.*]] = stablehlo.pad %[[C]]
// CHECK-NEXT: return %[[P]]
func.func @left_to_iree(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<8x10xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<4x8xf32>
  %c = stablehlo.concatenate %e, %y, dim = 0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %p = stablehlo.pad %c, %zero, low = [0, 1], high = [0, 1], interior = [0, 0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x10xf32>
  return %p : tensor<8x10xf32>
}
