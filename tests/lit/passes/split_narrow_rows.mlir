// RUN: %hlobridge-opt %s --passes split-narrow-rows | FileCheck %s
// A dot of a few rows by constant weights becomes one dot per row piece that fills IREE's CPU
// matmul tiles (whole tiles, then powers of two), joined along the rows. The pieces below are
// the same for a tile height of 16 (AVX-512) and of 8.

// A 1x1 convolution's dot over a 3x3 image: 9 rows, as 8 + 1.
// CHECK-LABEL: func.func @nine_rows
// CHECK: %[[W:.*]] = stablehlo.constant
// CHECK: %[[X:.*]] = stablehlo.reshape %arg0 : (tensor<1x3x3x128xf32>) -> tensor<9x128xf32>
// CHECK: %[[A:.*]] = stablehlo.slice %[[X]] [0:8, 0:128]
// CHECK: %[[DA:.*]] = stablehlo.dot_general %[[A]], %[[W]], contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<8x128xf32>, tensor<128x512xf32>) -> tensor<8x512xf32>
// CHECK: %[[B:.*]] = stablehlo.slice %[[X]] [8:9, 0:128]
// CHECK: %[[DB:.*]] = stablehlo.dot_general %[[B]], %[[W]], contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<1x128xf32>, tensor<128x512xf32>) -> tensor<1x512xf32>
// CHECK: %[[C:.*]] = stablehlo.concatenate %[[DA]], %[[DB]], dim = 0
// CHECK: %[[R:.*]] = stablehlo.reshape %[[C]] : (tensor<9x512xf32>) -> tensor<1x3x3x512xf32>
// CHECK: return %[[R]]
func.func @nine_rows(%x: tensor<1x3x3x128xf32>) -> tensor<1x3x3x512xf32> {
  %w = stablehlo.constant dense<0.5> : tensor<128x512xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [3] x [0], precision = [HIGHEST, HIGHEST] : (tensor<1x3x3x128xf32>, tensor<128x512xf32>) -> tensor<1x3x3x512xf32>
  return %d : tensor<1x3x3x512xf32>
}

// 18 rows: a whole tile of 16, then 2.
// CHECK-LABEL: func.func @eighteen_rows
// CHECK: stablehlo.dot_general {{.*}} -> tensor<16x512xf32>
// CHECK: stablehlo.dot_general {{.*}} -> tensor<2x512xf32>
// CHECK: stablehlo.concatenate {{.*}} dim = 0 : (tensor<16x512xf32>, tensor<2x512xf32>) -> tensor<18x512xf32>
func.func @eighteen_rows(%x: tensor<18x128xf32>) -> tensor<18x512xf32> {
  %w = stablehlo.constant dense<0.5> : tensor<128x512xf32>
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<18x128xf32>, tensor<128x512xf32>) -> tensor<18x512xf32>
  return %d : tensor<18x512xf32>
}

// Whole: rows that fill their tiles, too many rows, too little work, weights that are not
// constants, a batch dimension, a `?` row count.
// CHECK-LABEL: func.func @kept_whole
// CHECK-COUNT-6: stablehlo.dot_general
// CHECK-NOT: stablehlo.dot_general
// CHECK-NOT: stablehlo.slice
// CHECK-NOT: stablehlo.concatenate
func.func @kept_whole(%a: tensor<16x128xf32>, %b: tensor<72x128xf32>, %c: tensor<9x8xf32>, %v: tensor<128x512xf32>,
                      %e: tensor<2x9x128xf32>, %f: tensor<?x128xf32>)
    -> (tensor<16x512xf32>, tensor<72x512xf32>, tensor<9x8xf32>, tensor<9x512xf32>, tensor<2x9x512xf32>, tensor<?x512xf32>) {
  %w = stablehlo.constant dense<0.5> : tensor<128x512xf32>
  %s = stablehlo.constant dense<0.5> : tensor<8x8xf32>
  %wb = stablehlo.constant dense<0.5> : tensor<2x128x512xf32>
  %0 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<16x128xf32>, tensor<128x512xf32>) -> tensor<16x512xf32>
  %1 = stablehlo.dot_general %b, %w, contracting_dims = [1] x [0] : (tensor<72x128xf32>, tensor<128x512xf32>) -> tensor<72x512xf32>
  %2 = stablehlo.dot_general %c, %s, contracting_dims = [1] x [0] : (tensor<9x8xf32>, tensor<8x8xf32>) -> tensor<9x8xf32>
  %3 = stablehlo.slice %b [0:9, 0:128] : (tensor<72x128xf32>) -> tensor<9x128xf32>
  %4 = stablehlo.dot_general %3, %v, contracting_dims = [1] x [0] : (tensor<9x128xf32>, tensor<128x512xf32>) -> tensor<9x512xf32>
  %5 = stablehlo.dot_general %e, %wb, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x9x128xf32>, tensor<2x128x512xf32>) -> tensor<2x9x512xf32>
  %6 = stablehlo.dot_general %f, %w, contracting_dims = [1] x [0] : (tensor<?x128xf32>, tensor<128x512xf32>) -> tensor<?x512xf32>
  return %0, %1, %2, %4, %5, %6 : tensor<16x512xf32>, tensor<72x512xf32>, tensor<9x8xf32>, tensor<9x512xf32>, tensor<2x9x512xf32>, tensor<?x512xf32>
}
