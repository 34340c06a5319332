// RUN: %hlobridge-opt %s --passes estimate-work | FileCheck %s
// The work each hlobridge function does, as the Session's choice of executor reads it from the
// reflection (hlobridge.work): two flops per multiply-add of a dot or a convolution, five per
// element any other op reads or writes (the larger), loop bodies once, constants nothing.

// dot 4x8 . 8x16: 2*4*16*8 = 1024; the bias broadcast writes 64 elements (320), the add reads
// 128 (640), the ReLU's maximum reads 128 (640, its zero constant free): 2624.
// CHECK-LABEL: func.func @dense
// CHECK-SAME: hlobridge.work = "2624"
func.func @dense(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %y = stablehlo.add %d, %bb : tensor<4x16xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<4x16xf32>
  %r = stablehlo.maximum %y, %zero : tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// A batched dot contracts only its contracting dimensions: 2 * (3x4x5 results) * 6 = 720.
// CHECK-LABEL: func.func @batched
// CHECK-SAME: hlobridge.work = "720"
func.func @batched(%a: tensor<3x4x6xf32>, %b: tensor<3x6x5xf32>) -> tensor<3x4x5xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
  %d = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x4x6xf32>, tensor<3x6x5xf32>) -> tensor<3x4x5xf32>
  return %d : tensor<3x4x5xf32>
}

// A 3x3 convolution of 3 channels into 4 over 6x6 outputs: 2 * 144 * 27 = 7776.
// CHECK-LABEL: func.func @conv
// CHECK-SAME: hlobridge.work = "7776"
func.func @conv(%x: tensor<1x8x8x3xf32>, %k: tensor<3x3x3x4xf32>) -> tensor<1x6x6x4xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
  %y = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x6x6x4xf32>
  return %y : tensor<1x6x6x4xf32>
}

// A row sum reads 129 elements, its init among them (645), and its body's scalar add counts
// once (5 * 2 read): 655.
// CHECK-LABEL: func.func @row_sum
// CHECK-SAME: hlobridge.work = "655"
func.func @row_sum(%x: tensor<8x16xf32>) -> tensor<8xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// A dynamic dimension: no estimate (the Session keeps such a cluster on the thread pool).
// CHECK-LABEL: func.func @dynamic(%arg0: tensor<?xf32>) -> tensor<?xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
  %y = stablehlo.add %x, %x : tensor<?xf32>
  return %y : tensor<?xf32>
}

// Not an hlobridge function (no signature): left alone.
// CHECK-LABEL: func.func @helper(%arg0: tensor<4xf32>) -> tensor<4xf32> {
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = stablehlo.add %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// A While counts its body once (the work of one round), not its unknown trip count: the loop's
// own 5 elements in and out (25), the condition's compare (10), the body's two adds (40, 10).
// CHECK-LABEL: func.func @loop
// CHECK-SAME: hlobridge.work = "85"
func.func @loop(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> attributes {iree.reflection = {hlobridge.signature = ""}} {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %i, %acc = stablehlo.while(%iv = %zero, %av = %x) : tensor<i32>, tensor<4xf32>
  cond {
    %c = stablehlo.compare LT, %iv, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %a = stablehlo.add %av, %av : tensor<4xf32>
    %j = stablehlo.add %iv, %one : tensor<i32>
    stablehlo.return %j, %a : tensor<i32>, tensor<4xf32>
  }
  return %acc : tensor<4xf32>
}
