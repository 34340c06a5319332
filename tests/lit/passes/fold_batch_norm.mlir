// RUN: %hlobridge-opt %s --passes fold-batch-norm | FileCheck %s
// An inference batch norm's per-channel (x - m) * s + o after a constant-weight convolution or dot
// becomes the contraction with scaled weights and one add; anything else stays.

// W = [[1, 2], [3, 4]] scaled by s = [10, 100] along the output features (the columns); the
// bias is o - m * s = [1 - 1*10, 2 - 1*100] = [-9, -98].
// CHECK-LABEL: func.func @dot_batch_norm
// CHECK: %[[W:.*]] = stablehlo.constant dense<{{\[\[}}1.000000e+01, 2.000000e+02], [3.000000e+01, 4.000000e+02]]>
// CHECK: %[[D:.*]] = stablehlo.dot_general %arg0, %[[W]]
// CHECK: %[[B:.*]] = stablehlo.constant dense<[-9.000000e+00, -9.800000e+01]>
// CHECK: %[[BB:.*]] = stablehlo.broadcast_in_dim %[[B]], dims = [1]
// CHECK: %[[R:.*]] = stablehlo.add %[[D]], %[[BB]]
// CHECK-NOT: stablehlo.multiply
// CHECK-NOT: stablehlo.subtract
// CHECK: return %[[R]]
func.func @dot_batch_norm(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %m = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %s = stablehlo.constant dense<[10.0, 100.0]> : tensor<2xf32>
  %o = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [1] : (tensor<2xf32>) -> tensor<3x2xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<2xf32>) -> tensor<3x2xf32>
  %ob = stablehlo.broadcast_in_dim %o, dims = [1] : (tensor<2xf32>) -> tensor<3x2xf32>
  %a = stablehlo.subtract %d, %mb : tensor<3x2xf32>
  %b = stablehlo.multiply %a, %sb : tensor<3x2xf32>
  %c = stablehlo.add %b, %ob : tensor<3x2xf32>
  return %c : tensor<3x2xf32>
}

// A convolution's output features are its kernel's `o` dimension (here the last, 3 channels):
// W (all ones) * [2, 3, 4]; a splat divisor counts as per-channel; the ReLU after it stays.
// CHECK-LABEL: func.func @conv_scale_then_relu
// CHECK: %[[W:.*]] = stablehlo.constant dense<{{\[\[\[\[}}1.000000e+00, 1.500000e+00, 2.000000e+00]]]]>
// CHECK: %[[C:.*]] = stablehlo.convolution(%arg0, %[[W]])
// CHECK-NOT: stablehlo.multiply
// CHECK-NOT: stablehlo.divide
// CHECK: stablehlo.maximum %[[C]]
func.func @conv_scale_then_relu(%x: tensor<1x4x4x1xf32>) -> tensor<1x4x4x3xf32> {
  %w = stablehlo.constant dense<1.0> : tensor<1x1x1x3xf32>
  %s = stablehlo.constant dense<[2.0, 3.0, 4.0]> : tensor<3xf32>
  %two = stablehlo.constant dense<2.0> : tensor<1x4x4x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<1x4x4x3xf32>
  %c = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<1x1x1x3xf32>) -> tensor<1x4x4x3xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [3] : (tensor<3xf32>) -> tensor<1x4x4x3xf32>
  %a = stablehlo.multiply %c, %sb : tensor<1x4x4x3xf32>
  %b = stablehlo.divide %a, %two : tensor<1x4x4x3xf32>
  %r = stablehlo.maximum %b, %zero : tensor<1x4x4x3xf32>
  return %r : tensor<1x4x4x3xf32>
}

// Keras 3 writes the batch norm's vectors as [1, C] constants broadcast rank to rank; the shift
// keeps that form.
// CHECK-LABEL: func.func @keras3_vectors
// CHECK: %[[W:.*]] = stablehlo.constant dense<{{\[\[}}5.000000e-01, 4.000000e+00], [1.500000e+00, 8.000000e+00]]>
// CHECK: %[[D:.*]] = stablehlo.dot_general %arg0, %[[W]]
// CHECK: %[[B:.*]] = stablehlo.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
// CHECK: %[[BB:.*]] = stablehlo.broadcast_in_dim %[[B]], dims = [0, 1]
// CHECK: stablehlo.add %[[D]], %[[BB]]
// CHECK-NOT: stablehlo.multiply
func.func @keras3_vectors(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = stablehlo.constant dense<[[0.5, 2.0]]> : tensor<1x2xf32>
  %o = stablehlo.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<3x2xf32>
  %ob = stablehlo.broadcast_in_dim %o, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<3x2xf32>
  %a = stablehlo.multiply %d, %sb : tensor<3x2xf32>
  %b = stablehlo.add %a, %ob : tensor<3x2xf32>
  return %b : tensor<3x2xf32>
}

// A `?` batch: the shift is broadcast to the run-time shape as the scale was.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: %[[W:.*]] = stablehlo.constant dense<{{\[\[}}2.000000e+00, 4.000000e+00], [6.000000e+00, 8.000000e+00]]>
// CHECK: %[[D:.*]] = stablehlo.dot_general %arg0, %[[W]]
// CHECK: %[[B:.*]] = stablehlo.constant dense<3.000000e+00>
// CHECK: %[[BB:.*]] = stablehlo.dynamic_broadcast_in_dim %[[B]], %arg1, dims = [1]
// CHECK: %[[R:.*]] = stablehlo.add %[[D]], %[[BB]]
// CHECK-NOT: stablehlo.multiply
// CHECK: return %[[R]]
func.func @dynamic_batch(%x: tensor<?x2xf32>, %shape: tensor<2xi32>) -> tensor<?x2xf32> {
  %w = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = stablehlo.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %o = stablehlo.constant dense<[3.0, 3.0]> : tensor<2xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<?x2xf32>, tensor<2x2xf32>) -> tensor<?x2xf32>
  %sb = stablehlo.dynamic_broadcast_in_dim %s, %shape, dims = [1] : (tensor<2xf32>, tensor<2xi32>) -> tensor<?x2xf32>
  %ob = stablehlo.dynamic_broadcast_in_dim %o, %shape, dims = [1] : (tensor<2xf32>, tensor<2xi32>) -> tensor<?x2xf32>
  %a = stablehlo.multiply %d, %sb : tensor<?x2xf32>
  %b = stablehlo.add %a, %ob : tensor<?x2xf32>
  return %b : tensor<?x2xf32>
}

// Not folded: weights that are an argument (training), a product something else also reads,
// a constant that varies along another dimension, c - x, and a lone bias add.
// CHECK-LABEL: func.func @stays
// CHECK-COUNT-2: stablehlo.multiply
// CHECK: stablehlo.subtract %[[MB:.*]], %{{.*}} :
// CHECK: stablehlo.add
// CHECK: return
func.func @stays(%x: tensor<3x2xf32>, %wv: tensor<2x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = stablehlo.constant dense<[10.0, 100.0]> : tensor<2xf32>
  %rows = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<2xf32>) -> tensor<3x2xf32>
  %rb = stablehlo.broadcast_in_dim %rows, dims = [0] : (tensor<3xf32>) -> tensor<3x2xf32>
  %dv = stablehlo.dot_general %x, %wv, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %a = stablehlo.multiply %dv, %sb : tensor<3x2xf32>
  %d1 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %b = stablehlo.multiply %d1, %rb : tensor<3x2xf32>
  %d2 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %c = stablehlo.subtract %sb, %d2 : tensor<3x2xf32>
  %d3 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %e = stablehlo.add %d3, %sb : tensor<3x2xf32>
  return %a, %b, %c, %e, %d1 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}
