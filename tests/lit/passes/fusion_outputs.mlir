// RUN: %hlobridge-opt %s --passes fusion | FileCheck %s
// What a region may output, and what is copied instead: an elementwise producer read outside
// its group is an extra output (the reduction's group writes exp(x) for tanh); a producer
// whose fusion would be a cycle (exp -> dot -> add) stays apart; broadcasts and i1 compares
// are copied into every region that reads them, never returned (IREE 3.13 cannot distribute
// an i1 region output).

// CHECK-LABEL: func.func @extra_output
// CHECK:      %[[R:.*]]:2 = flow.dispatch.region -> (tensor<4x8xf32>, tensor<4xf32>) {
// CHECK-NEXT:   %[[E:.*]] = stablehlo.exponential %arg0
// CHECK-NEXT:   %[[S:.*]] = stablehlo.reduce(%[[E]]
// CHECK-NEXT:   flow.return %[[E]], %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[T:.*]] = flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   stablehlo.tanh %[[R]]#0
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: return %[[T]], %[[R]]#1
func.func @extra_output(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<4x8xf32>
  %t = stablehlo.tanh %e : tensor<4x8xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %t, %s : tensor<4x8xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @no_cycle
// CHECK:      %[[E:.*]] = flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   stablehlo.exponential %arg0
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: %[[R:.*]] = flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   %[[D:.*]] = stablehlo.dot_general %[[E]], %arg1
// CHECK-NEXT:   stablehlo.add %[[E]], %[[D]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
func.func @no_cycle(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %a = stablehlo.exponential %x : tensor<4x8xf32>
  %d = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c = stablehlo.add %a, %d : tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @copies
// CHECK:      flow.dispatch.region -> (tensor<4xf32>) {
// CHECK-NEXT:   %[[B1:.*]] = stablehlo.broadcast_in_dim %arg2
// CHECK-NEXT:   %[[C1:.*]] = stablehlo.compare GT, %arg0, %[[B1]]
// CHECK-NEXT:   stablehlo.select %[[C1]], %arg1, %[[B1]]
// CHECK-NEXT:   stablehlo.reduce
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NEXT: flow.dispatch.region -> (tensor<4x8xf32>) {
// CHECK-NEXT:   %[[B2:.*]] = stablehlo.broadcast_in_dim %arg2
// CHECK-NEXT:   %[[C2:.*]] = stablehlo.compare GT, %arg0, %[[B2]]
// CHECK-NEXT:   stablehlo.select %[[C2]], %arg0, %[[B2]]
// CHECK-NEXT:   flow.return
// CHECK-NEXT: }
// CHECK-NOT:  stablehlo.compare
// CHECK:      return
func.func @copies(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %gt = stablehlo.compare GT, %x, %bb, FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %sel = stablehlo.select %gt, %x, %bb : tensor<4x8xi1>, tensor<4x8xf32>
  %m = stablehlo.select %gt, %y, %bb : tensor<4x8xi1>, tensor<4x8xf32>
  %s = stablehlo.reduce(%m init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  return %sel, %s : tensor<4x8xf32>, tensor<4xf32>
}
