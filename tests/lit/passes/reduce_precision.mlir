// RUN: %hlobridge-opt %s --passes convert-to-bf16 | FileCheck %s --check-prefix=PASS
// RUN: %hlobridge-opt %s --precision bf16 --stage precision | FileCheck %s --check-prefix=BF16
// RUN: %hlobridge-opt %s --precision f16 --stage precision | FileCheck %s --check-prefix=F16
// f32 compute in bf16/f16: elementwise ops in the low type, dots and convolutions with low
// operands and f32 results, reductions and their bodies in f32, the signature unchanged.

// The pass alone: a convert down before and up after each elementwise op.
// PASS-LABEL: func.func @chain
// PASS: %[[D:.*]] = stablehlo.convert %arg0 : (tensor<8xf32>) -> tensor<8xbf16>
// PASS: %[[E:.*]] = stablehlo.exponential %[[D]] : tensor<8xbf16>
// PASS: %[[U:.*]] = stablehlo.convert %[[E]] : (tensor<8xbf16>) -> tensor<8xf32>
// PASS: stablehlo.convert %[[U]] : (tensor<8xf32>) -> tensor<8xbf16>
// The stage: the bf16 -> f32 -> bf16 round trips cancel, the constant 2 is folded to bf16,
// and the sum adds in f32.
// BF16-LABEL: func.func @chain(%arg0: tensor<8xf32>) -> tensor<f32>
// BF16: %[[D:.*]] = stablehlo.convert %arg0 : (tensor<8xf32>) -> tensor<8xbf16>
// BF16: %[[E:.*]] = stablehlo.exponential %[[D]] : tensor<8xbf16>
// BF16: %[[TWO:.*]] = stablehlo.constant dense<2.000000e+00> : tensor<8xbf16>
// BF16: %[[M:.*]] = stablehlo.multiply %[[E]], %[[TWO]] : tensor<8xbf16>
// BF16: %[[T:.*]] = stablehlo.tanh %[[M]] : tensor<8xbf16>
// BF16: %[[U:.*]] = stablehlo.convert %[[T]] : (tensor<8xbf16>) -> tensor<8xf32>
// BF16: stablehlo.reduce(%[[U]] init: %{{.*}}) applies stablehlo.add {{.*}} -> tensor<f32>
// F16-LABEL: func.func @chain
// F16: stablehlo.tanh %{{.*}} : tensor<8xf16>
func.func @chain(%x: tensor<8xf32>) -> tensor<f32> {
  %two = stablehlo.constant dense<2.0> : tensor<8xf32>
  %e = stablehlo.exponential %x : tensor<8xf32>
  %m = stablehlo.multiply %e, %two : tensor<8xf32>
  %t = stablehlo.tanh %m : tensor<8xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%t init: %init) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// What reaches a result through elementwise ops alone stays f32: here an SGD update of a
// variable (w - lr * x^T.dy), whose rounding to bf16 every step would stall training. The
// gradient's dot still takes bf16 operands, and tanh, which feeds only the dot, is bf16.
// BF16-LABEL: func.func @update_tail_stays_f32
// BF16: stablehlo.tanh %{{.*}} : tensor<4x3xbf16>
// BF16: %[[G:.*]] = stablehlo.dot_general {{.*}} : (tensor<4x8xbf16>, tensor<4x3xbf16>) -> tensor<8x3xf32>
// BF16: %[[S:.*]] = stablehlo.multiply %[[G]], %{{.*}} : tensor<8x3xf32>
// BF16: %[[W:.*]] = stablehlo.subtract %arg2, %[[S]] : tensor<8x3xf32>
// BF16: return %[[W]]
func.func @update_tail_stays_f32(%x: tensor<4x8xf32>, %dy: tensor<4x3xf32>, %w: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %t = stablehlo.tanh %dy : tensor<4x3xf32>
  %g = stablehlo.dot_general %x, %t, contracting_dims = [0] x [0] : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %lr = stablehlo.constant dense<0.1> : tensor<8x3xf32>
  %s = stablehlo.multiply %g, %lr : tensor<8x3xf32>
  %new = stablehlo.subtract %w, %s : tensor<8x3xf32>
  return %new : tensor<8x3xf32>
}

// Dense layer + softmax denominator: bf16 operands, f32 dot result, the sum reduces in f32.
// BF16-LABEL: func.func @dense_and_sum
// BF16: stablehlo.dot_general %{{.*}}, %{{.*}}, contracting_dims = [1] x [0] : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xf32>
// BF16: %[[R:.*]] = stablehlo.maximum %{{.*}} : tensor<4x3xbf16>
// BF16: %[[UP:.*]] = stablehlo.convert %[[R]] : (tensor<4x3xbf16>) -> tensor<4x3xf32>
// BF16: stablehlo.reduce(%[[UP]] init: %{{.*}}) applies stablehlo.add across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
// F16-LABEL: func.func @dense_and_sum
// F16: (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
func.func @dense_and_sum(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4xf32> {
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<4x3xf32>
  %r = stablehlo.maximum %d, %zero : tensor<4x3xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%r init: %init) applies stablehlo.add across dimensions = [1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// A convolution gets bf16 operands and keeps its f32 result; a depthwise (grouped) one stays
// in f32 (IREE 3.13 cannot compile it mixed); a transpose of a bf16 value moves bf16.
// BF16-LABEL: func.func @convolutions
// BF16: stablehlo.convolution(%{{.*}}, %{{.*}}) {{.*}} feature_group_count = 1 : i64} : (tensor<1x6x6x2xbf16>, tensor<3x3x2x4xbf16>) -> tensor<1x4x4x4xf32>
// BF16: stablehlo.convolution(%{{.*}}, %{{.*}}) {{.*}} feature_group_count = 4 : i64} : (tensor<1x4x4x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x2x2x4xf32>
// BF16: stablehlo.negate %{{.*}} : tensor<1x2x2x4xbf16>
// BF16: stablehlo.transpose %{{.*}}, dims = [0, 3, 1, 2] : (tensor<1x2x2x4xbf16>) -> tensor<1x4x2x2xbf16>
// BF16: stablehlo.reduce
func.func @convolutions(%img: tensor<1x6x6x2xf32>, %k: tensor<3x3x2x4xf32>, %dk: tensor<3x3x1x4xf32>) -> tensor<1x4x2xf32> {
  %c = stablehlo.convolution(%img, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32>
  %dw = stablehlo.convolution(%c, %dk) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 4 : i64} : (tensor<1x4x4x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x2x2x4xf32>
  %n = stablehlo.negate %dw : tensor<1x2x2x4xf32>
  %t = stablehlo.transpose %n, dims = [0, 3, 1, 2] : (tensor<1x2x2x4xf32>) -> tensor<1x4x2x2xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%t init: %init) applies stablehlo.add across dimensions = [3] : (tensor<1x4x2x2xf32>, tensor<f32>) -> tensor<1x4x2xf32>
  return %s : tensor<1x4x2xf32>
}

// An op reading an integer converted to f32 (a loop counter) stays f32: IREE 3.13 would fold
// the two converts into an int->bf16 one, which llvm-cpu cannot link (__truncsfbf2).
// BF16-LABEL: func.func @integer_source
// BF16: %[[F:.*]] = stablehlo.convert %arg0 : (tensor<i32>) -> tensor<f32>
// BF16: %[[B:.*]] = stablehlo.broadcast_in_dim %[[F]], dims = [] : (tensor<f32>) -> tensor<3xf32>
// BF16: stablehlo.multiply %arg1, %[[B]] : tensor<3xf32>
// BF16: stablehlo.exponential %{{.*}} : tensor<3xbf16>
func.func @integer_source(%i: tensor<i32>, %x: tensor<3xf32>) -> tensor<f32> {
  %f = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %m = stablehlo.multiply %x, %b : tensor<3xf32>
  %e = stablehlo.exponential %m : tensor<3xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %init) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// Integer and boolean ops, and a transpose of an f32 argument, are left alone.
// BF16-LABEL: func.func @left_alone
// BF16-NOT: bf16
// BF16: return
func.func @left_alone(%i: tensor<4xi32>, %x: tensor<2x3xf32>) -> (tensor<4xi32>, tensor<3x2xf32>) {
  %a = stablehlo.add %i, %i : tensor<4xi32>
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %a, %t : tensor<4xi32>, tensor<3x2xf32>
}
