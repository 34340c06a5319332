// RUN: %hlobridge-opt %s --passes constant-fold | FileCheck %s
// Ops computing only from constants become constants; what would grow, or where NumPy's
// and StableHLO's semantics could differ, stays.

// The batch-norm scale TF graphs lower: rsqrt(variance + eps) * gamma, all constant.
// CHECK-LABEL: func.func @batch_norm_scale
// CHECK-NEXT: %[[C:.*]] = stablehlo.constant dense<[1.000000e+00, 5.000000e-01, 2.000000e+00]> : tensor<3xf32>
// CHECK-NEXT: return %[[C]]
func.func @batch_norm_scale() -> tensor<3xf32> {
  %var = stablehlo.constant dense<[1.0, 4.0, 0.25]> : tensor<3xf32>
  %eps = stablehlo.constant dense<0.0> : tensor<3xf32>
  %gamma = stablehlo.constant dense<1.0> : tensor<3xf32>
  %s = stablehlo.add %var, %eps : tensor<3xf32>
  %r = stablehlo.rsqrt %s : tensor<3xf32>
  %m = stablehlo.multiply %r, %gamma : tensor<3xf32>
  return %m : tensor<3xf32>
}

// CHECK-LABEL: func.func @shape_ops
// CHECK-DAG: stablehlo.constant dense<{{\[\[}}1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-DAG: stablehlo.constant dense<[2, 3, 7]> : tensor<3xi32>
// CHECK-DAG: stablehlo.constant dense<5> : tensor<2x8xi32>
// CHECK-NOT: stablehlo.reshape
// CHECK-NOT: stablehlo.transpose
// CHECK-NOT: stablehlo.slice
// CHECK-NOT: stablehlo.concatenate
// CHECK: return
func.func @shape_ops() -> (tensor<3x2xi32>, tensor<3xi32>, tensor<2x8xi32>) {
  %c = stablehlo.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi32>
  %r = stablehlo.reshape %c : (tensor<6xi32>) -> tensor<2x3xi32>
  %t = stablehlo.transpose %r, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %s = stablehlo.slice %c [1:3] : (tensor<6xi32>) -> tensor<2xi32>
  %seven = stablehlo.constant dense<7> : tensor<1xi32>
  %cat = stablehlo.concatenate %s, %seven, dim = 0 : (tensor<2xi32>, tensor<1xi32>) -> tensor<3xi32>
  %five = stablehlo.constant dense<5> : tensor<i32>
  %b = stablehlo.broadcast_in_dim %five, dims = [] : (tensor<i32>) -> tensor<2x8xi32>
  return %t, %cat, %b : tensor<3x2xi32>, tensor<3xi32>, tensor<2x8xi32>
}

// Converts (as the precision pass makes them), compares and selects.
// CHECK-LABEL: func.func @convert_compare_select
// CHECK-DAG: stablehlo.constant dense<[1.000000e+00, 3.398440e-01]> : tensor<2xbf16>
// CHECK-DAG: stablehlo.constant dense<[-2, 2]> : tensor<2xi32>
// CHECK-DAG: stablehlo.constant dense<[false, true]> : tensor<2xi1>
// CHECK-DAG: stablehlo.constant dense<[2.000000e+00, 0.339000016]> : tensor<2xf32>
// CHECK-NOT: stablehlo.convert
// CHECK-NOT: stablehlo.compare
// CHECK-NOT: stablehlo.select
func.func @convert_compare_select() -> (tensor<2xbf16>, tensor<2xi32>, tensor<2xi1>, tensor<2xf32>) {
  %x = stablehlo.constant dense<[1.0, 0.33900001]> : tensor<2xf32>
  %h = stablehlo.convert %x : (tensor<2xf32>) -> tensor<2xbf16>
  %y = stablehlo.constant dense<[-2.75, 2.75]> : tensor<2xf32>
  %i = stablehlo.convert %y : (tensor<2xf32>) -> tensor<2xi32>
  %half = stablehlo.constant dense<0.5> : tensor<2xf32>
  %p = stablehlo.compare LT, %x, %half, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %two = stablehlo.constant dense<2.0> : tensor<2xf32>
  %s = stablehlo.select %p, %x, %two : tensor<2xi1>, tensor<2xf32>
  return %h, %i, %p, %s : tensor<2xbf16>, tensor<2xi32>, tensor<2xi1>, tensor<2xf32>
}

// Left alone: a non-splat broadcast (it would grow), operands that are not all constant,
// integer division by zero, a float->int convert of NaN, max of zeros with different signs.
// CHECK-LABEL: func.func @left_alone
// CHECK: stablehlo.broadcast_in_dim
// CHECK: stablehlo.add %arg0
// CHECK: stablehlo.divide
// CHECK: stablehlo.convert
// CHECK: stablehlo.maximum
func.func @left_alone(%a: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xf32>) {
  %v = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %s = stablehlo.add %a, %v : tensor<3xf32>
  %n = stablehlo.constant dense<[7, 8]> : tensor<2xi32>
  %z = stablehlo.constant dense<[1, 0]> : tensor<2xi32>
  %d = stablehlo.divide %n, %z : tensor<2xi32>
  %nan = stablehlo.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %c = stablehlo.convert %nan : (tensor<2xf32>) -> tensor<2xi32>
  %pz = stablehlo.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %nz = stablehlo.constant dense<[-0.0, 2.0]> : tensor<2xf32>
  %m = stablehlo.maximum %pz, %nz : tensor<2xf32>
  return %b, %s, %d, %c, %m : tensor<4x3xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<2xf32>
}

// Integer division rounds toward zero (NumPy's // rounds down).
// CHECK-LABEL: func.func @integer_division
// CHECK-NEXT: stablehlo.constant dense<[-3, 3, -3, 1]> : tensor<4xi32>
func.func @integer_division() -> tensor<4xi32> {
  %n = stablehlo.constant dense<[-7, 7, 7, 1]> : tensor<4xi32>
  %d = stablehlo.constant dense<[2, 2, -2, 1]> : tensor<4xi32>
  %q = stablehlo.divide %n, %d : tensor<4xi32>
  return %q : tensor<4xi32>
}
