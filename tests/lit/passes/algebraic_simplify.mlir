// RUN: %hlobridge-opt %s --passes algebraic-simplify | FileCheck %s
// Each case keeps float results bit-identical: what is unsafe for some float stays.

// CHECK-LABEL: func.func @identities
// CHECK-NOT: stablehlo.multiply
// CHECK-NOT: stablehlo.divide
// CHECK-NOT: stablehlo.subtract
// CHECK: return %arg0, %arg0, %arg0, %arg0, %arg0
func.func @identities(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %pzero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %nzero = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.multiply %one, %x : tensor<4xf32>
  %c = stablehlo.divide %x, %one : tensor<4xf32>
  %d = stablehlo.add %nzero, %x : tensor<4xf32>
  %e = stablehlo.subtract %x, %pzero : tensor<4xf32>
  return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// x + 0.0 gives +0.0 for x = -0.0; x - (-0.0) is x + 0.0; x * 0 is NaN for inf; 1 / x is not x.
// CHECK-LABEL: func.func @float_unsafe_stays
// CHECK: stablehlo.add %arg0, %[[PZ:.*]] :
// CHECK: stablehlo.subtract %arg0, %[[NZ:.*]] :
// CHECK: stablehlo.multiply %arg0, %[[PZ]] :
// CHECK: stablehlo.divide %[[ONE:.*]], %arg0 :
func.func @float_unsafe_stays(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %pzero = stablehlo.constant dense<0.0> : tensor<4xf32>
  %nzero = stablehlo.constant dense<-0.0> : tensor<4xf32>
  %a = stablehlo.add %x, %pzero : tensor<4xf32>
  %b = stablehlo.subtract %x, %nzero : tensor<4xf32>
  %c = stablehlo.multiply %x, %pzero : tensor<4xf32>
  %d = stablehlo.divide %one, %x : tensor<4xf32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Integers: any zero is the additive identity; a scalar 1 broadcast is still 1.
// CHECK-LABEL: func.func @integer_and_broadcast_splats
// CHECK-NOT: stablehlo.add
// CHECK-NOT: stablehlo.multiply
// CHECK: return %arg0, %arg0
func.func @integer_and_broadcast_splats(%i: tensor<2x3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi32>) {
  %zero = stablehlo.constant dense<0> : tensor<2x3xi32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %ones = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<i32>) -> tensor<2x3xi32>
  %a = stablehlo.add %i, %zero : tensor<2x3xi32>
  %b = stablehlo.multiply %ones, %i : tensor<2x3xi32>
  return %a, %b : tensor<2x3xi32>, tensor<2x3xi32>
}

// CHECK-LABEL: func.func @double_negate_and_select
// CHECK-NEXT: %[[N:.*]] = stablehlo.negate %arg0
// CHECK-NEXT: return %arg0, %[[N]], %arg0
func.func @double_negate_and_select(%x: tensor<4xf32>, %p: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %n1 = stablehlo.negate %x : tensor<4xf32>
  %n2 = stablehlo.negate %n1 : tensor<4xf32>
  %n3 = stablehlo.negate %n2 : tensor<4xf32>
  %s = stablehlo.select %p, %x, %x : tensor<4xi1>, tensor<4xf32>
  return %n2, %n3, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// transpose(transpose(x, [1,2,0]), [2,0,1]) is x; with [0,2,1] after it composes to one.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT: %[[T:.*]] = stablehlo.transpose %arg0, dims = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT: return %arg0, %[[T]], %arg0
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3x2x4xf32>, tensor<2x3x4xf32>) {
  %t1 = stablehlo.transpose %x, dims = [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %t2 = stablehlo.transpose %t1, dims = [2, 0, 1] : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  %t3 = stablehlo.transpose %t1, dims = [0, 2, 1] : (tensor<3x4x2xf32>) -> tensor<3x2x4xf32>
  %id = stablehlo.transpose %x, dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %t2, %t3, %id : tensor<2x3x4xf32>, tensor<3x2x4xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT: %[[R:.*]] = stablehlo.reshape %arg0 : (tensor<2x6xf32>) -> tensor<12xf32>
// CHECK-NEXT: return %[[R]], %arg0
func.func @reshapes(%x: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<2x6xf32>) {
  %r1 = stablehlo.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
  %r2 = stablehlo.reshape %r1 : (tensor<3x4xf32>) -> tensor<12xf32>
  %r3 = stablehlo.reshape %r1 : (tensor<3x4xf32>) -> tensor<2x6xf32>
  return %r2, %r3 : tensor<12xf32>, tensor<2x6xf32>
}

// broadcast [4] -> [3,4] (dims [1]) -> [2,3,4] (dims [1,2]) is [4] -> [2,3,4] with dims [2].
// CHECK-LABEL: func.func @broadcasts
// CHECK-NEXT: %[[B:.*]] = stablehlo.broadcast_in_dim %arg0, dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: return %[[B]], %arg1
func.func @broadcasts(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3x4xf32>) {
  %b1 = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<4xf32>) -> tensor<3x4xf32>
  %b2 = stablehlo.broadcast_in_dim %b1, dims = [1, 2] : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %id = stablehlo.broadcast_in_dim %y, dims = [0, 1] : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %b2, %id : tensor<2x3x4xf32>, tensor<3x4xf32>
}

// bf16 -> f32 -> bf16 is exact; f32 -> bf16 -> f32 rounds and stays; so does i32 -> i8 -> i32.
// CHECK-LABEL: func.func @converts
// CHECK-NEXT: %[[D:.*]] = stablehlo.convert %arg1 : (tensor<4xf32>) -> tensor<4xbf16>
// CHECK-NEXT: %[[U:.*]] = stablehlo.convert %[[D]] : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK-NEXT: %[[N:.*]] = stablehlo.convert %arg2 : (tensor<4xi32>) -> tensor<4xi8>
// CHECK-NEXT: %[[W:.*]] = stablehlo.convert %[[N]] : (tensor<4xi8>) -> tensor<4xi32>
// CHECK-NEXT: return %arg0, %[[U]], %arg1, %[[W]]
func.func @converts(%h: tensor<4xbf16>, %x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %up = stablehlo.convert %h : (tensor<4xbf16>) -> tensor<4xf32>
  %back = stablehlo.convert %up : (tensor<4xf32>) -> tensor<4xbf16>
  %down = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xbf16>
  %lossy = stablehlo.convert %down : (tensor<4xbf16>) -> tensor<4xf32>
  %same = stablehlo.convert %x : tensor<4xf32>
  %narrow = stablehlo.convert %i : (tensor<4xi32>) -> tensor<4xi8>
  %wide = stablehlo.convert %narrow : (tensor<4xi8>) -> tensor<4xi32>
  return %back, %lossy, %same, %wide : tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}
