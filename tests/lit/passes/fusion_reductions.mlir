// RUN: %hlobridge-opt %s --passes fusion | FileCheck %s
// Reductions: each takes its elementwise producers but not another reduction, except in a
// softmax (max, exp-sum, divide: one region, as IREE forms it); with exp(x - max) also
// returned it is no softmax and stays three regions (longer row chains were slower as one).
// Sibling reductions of the same dims become one variadic reduce in one region, one over
// other dims stays apart, and a reduction that reads another is not its sibling.

// CHECK-LABEL: func.func @softmax
// CHECK:      %[[R:.*]] = flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   stablehlo.reduce(%arg0 init: %{{.*}}) applies stablehlo.maximum
// CHECK-NEXT:   stablehlo.broadcast_in_dim
// CHECK-NEXT:   stablehlo.subtract
// CHECK-NEXT:   stablehlo.exponential
// CHECK-NEXT:   stablehlo.reduce
// CHECK-SAME:     applies stablehlo.add
// CHECK-NEXT:   stablehlo.broadcast_in_dim
// CHECK-NEXT:   %[[P:.*]] = stablehlo.divide
// CHECK-NEXT:   flow.return %[[P]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %d = stablehlo.subtract %x, %mb : tensor<4x8xf32>
  %e = stablehlo.exponential %d : tensor<4x8xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %p = stablehlo.divide %e, %sb : tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @exp_also_returned
// CHECK:      %[[M:.*]] = flow.dispatch.region -> (tensor<4xf32>) {
// CHECK-NEXT:   stablehlo.reduce(%arg0 init: %{{.*}}) applies stablehlo.maximum
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[S:.*]]:2 = flow.dispatch.region -> (tensor<4x8xf32>, tensor<4xf32>) {
// CHECK-NEXT:   stablehlo.broadcast_in_dim %[[M]], dims = [0]
// CHECK-NEXT:   stablehlo.subtract
// CHECK-NEXT:   %[[E:.*]] = stablehlo.exponential
// CHECK-NEXT:   %[[SUM:.*]] = stablehlo.reduce(%[[E]]
// CHECK-NEXT:   flow.return %[[E]], %[[SUM]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[P:.*]] = flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   %[[B:.*]] = stablehlo.broadcast_in_dim %[[S]]#1
// CHECK-NEXT:   stablehlo.divide %[[S]]#0, %[[B]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: return %[[P]], %[[S]]#0
func.func @exp_also_returned(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %d = stablehlo.subtract %x, %mb : tensor<4x8xf32>
  %e = stablehlo.exponential %d : tensor<4x8xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %p = stablehlo.divide %e, %sb : tensor<4x8xf32>
  return %p, %e : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @moments
// CHECK:      %[[R:.*]]:2 = flow.dispatch.region -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %[[SQ:.*]] = stablehlo.multiply %arg0, %arg0
// CHECK-NEXT:   %[[V:.*]]:2 = stablehlo.reduce(%arg0 init: %{{.*}}), (%[[SQ]] init: %{{.*}}) across dimensions = [1]
// CHECK:        flow.return %[[V]]#0, %[[V]]#1
// CHECK-NEXT: }
// CHECK-NEXT: %[[C:.*]] = flow.dispatch.region -> (tensor<8xf32>) {
// CHECK-NEXT:   stablehlo.reduce(%arg0 init: %{{.*}}) applies stablehlo.add across dimensions = [0]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1, %[[C]]
func.func @moments(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %sq = stablehlo.multiply %x, %x : tensor<4x8xf32>
  %q = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %c = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
  return %s, %q, %c : tensor<4xf32>, tensor<4xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @centered_sum
// CHECK:      %[[M:.*]] = flow.dispatch.region -> (tensor<f32>) {
// CHECK-NEXT:   stablehlo.reduce(%arg0
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: flow.dispatch.region -> (tensor<f32>) {
// CHECK-NEXT:   stablehlo.broadcast_in_dim %[[M]]
// CHECK-NEXT:   stablehlo.subtract
// CHECK-NEXT:   stablehlo.multiply
// CHECK-NEXT:   stablehlo.reduce
func.func @centered_sum(%x: tensor<64xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %d = stablehlo.subtract %x, %mb : tensor<64xf32>
  %d2 = stablehlo.multiply %d, %d : tensor<64xf32>
  %v = stablehlo.reduce(%d2 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
  return %v : tensor<f32>
}
