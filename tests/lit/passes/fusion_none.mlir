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
