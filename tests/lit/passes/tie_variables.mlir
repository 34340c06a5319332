// RUN: %hlobridge-opt %s --passes tie-variables | FileCheck %s
// Which variable arguments become the storage of their new values (iree.abi.output), which
// variable arguments a result may be a view of (hlobridge.aliased), and which variable results
// come back in buffers of their own (hlobridge.fresh).

// Momentum: the accumulator and the weights are read only by their own elementwise update: both tied.
// CHECK-LABEL: func.func @momentum(%arg0: tensor<8xf32>, %arg1: tensor<8xf32> {iree.abi.output = 0 : index}, %arg2: tensor<8xf32> {iree.abi.output = 1 : index})
// CHECK-SAME: hlobridge.aliased = "[]"
// CHECK-SAME: hlobridge.fresh = "[0, 1]"
// CHECK-SAME: hlobridge.tied = "[[1, 0], [2, 1]]"
func.func @momentum(%g: tensor<8xf32>, %w: tensor<8xf32>, %acc: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22g:0\22, \22dtype\22: \22float32\22, \22shape\22: [8]}, {\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}, {\22name\22: \22acc:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}], \22outputs\22: [{\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}, {\22name\22: \22acc:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}]}"}} {
  %m = stablehlo.constant dense<0.9> : tensor<8xf32>
  %lr = stablehlo.constant dense<0.1> : tensor<8xf32>
  %a = stablehlo.multiply %acc, %m : tensor<8xf32>
  %acc2 = stablehlo.add %a, %g : tensor<8xf32>
  %step = stablehlo.multiply %acc2, %lr : tensor<8xf32>
  %w2 = stablehlo.subtract %w, %step : tensor<8xf32>
  return %w2, %acc2 : tensor<8xf32>, tensor<8xf32>
}

// The weights feed a dot (the input gradient) that the update does not wait for: untied.
// CHECK-LABEL: func.func @weights_read_by_the_backward_pass(%arg0: tensor<2x8xf32>, %arg1: tensor<8x8xf32>) ->
// CHECK-SAME: hlobridge.aliased = "[]"
// CHECK-SAME: hlobridge.fresh = "[1]"
// CHECK-SAME: hlobridge.tied = "[]"
func.func @weights_read_by_the_backward_pass(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x8xf32>, tensor<8x8xf32>) attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22x:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 8]}, {\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8, 8]}], \22outputs\22: [{\22name\22: \22dx:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 8]}, {\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8, 8]}]}"}} {
  %dx = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %gw = stablehlo.dot_general %x, %x, contracting_dims = [0] x [0] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<8x8xf32>
  %w2 = stablehlo.subtract %w, %gw : tensor<8x8xf32>
  return %dx, %w2 : tensor<2x8xf32>, tensor<8x8xf32>
}

// The old value is also a result (a fetched read): untied.
// CHECK-LABEL: func.func @old_value_returned(%arg0: tensor<8xf32>) ->
// CHECK-SAME: hlobridge.aliased = "[0]"
// CHECK-SAME: hlobridge.fresh = "[1]"
// CHECK-SAME: hlobridge.tied = "[]"
func.func @old_value_returned(%w: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}], \22outputs\22: [{\22name\22: \22peek:0\22, \22dtype\22: \22float32\22, \22shape\22: [8]}, {\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}]}"}} {
  %w2 = stablehlo.add %w, %w : tensor<8xf32>
  return %w, %w2 : tensor<8xf32>, tensor<8xf32>
}

// A bias read through a broadcast (not elementwise over its own shape): untied.
// CHECK-LABEL: func.func @read_through_a_broadcast(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>) ->
// CHECK-SAME: hlobridge.aliased = "[]"
// CHECK-SAME: hlobridge.fresh = "[1]"
// CHECK-SAME: hlobridge.tied = "[]"
func.func @read_through_a_broadcast(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>) attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22x:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 8]}, {\22name\22: \22b:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}], \22outputs\22: [{\22name\22: \22y:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 8]}, {\22name\22: \22b:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}]}"}} {
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<2x8xf32>
  %y = stablehlo.add %x, %bb : tensor<2x8xf32>
  %s = stablehlo.constant dense<0.0> : tensor<f32>
  %g = stablehlo.reduce(%y init: %s) applies stablehlo.add across dimensions = [0] : (tensor<2x8xf32>, tensor<f32>) -> tensor<8xf32>
  %b2 = stablehlo.subtract %b, %g : tensor<8xf32>
  return %y, %b2 : tensor<2x8xf32>, tensor<8xf32>
}

// w2 takes w's value: w2's new value is w's own buffer (not fresh); w's is a reshape's view of a result (not fresh either).
// CHECK-LABEL: func.func @assigned_from_another(%arg0: tensor<8xf32>, %arg1: tensor<2x4xf32>) ->
// CHECK-SAME: hlobridge.aliased = "[0]"
// CHECK-SAME: hlobridge.fresh = "[]"
// CHECK-SAME: hlobridge.tied = "[]"
func.func @assigned_from_another(%w: tensor<8xf32>, %x: tensor<2x4xf32>) -> (tensor<8xf32>, tensor<2x4xf32>, tensor<8xf32>) attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}, {\22name\22: \22x:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 4]}], \22outputs\22: [{\22name\22: \22w2:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}, {\22name\22: \22y:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 4]}, {\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}]}"}} {
  %y = stablehlo.add %x, %x : tensor<2x4xf32>
  %r = stablehlo.reshape %y : (tensor<2x4xf32>) -> tensor<8xf32>
  return %w, %y, %r : tensor<8xf32>, tensor<2x4xf32>, tensor<8xf32>
}
// A variable's new value sliced from a larger computed value nobody else returns (a scatter's
// spare row cut off): its buffer is its own.
// CHECK-LABEL: func.func @sliced_from_a_computed_value
// CHECK-SAME: hlobridge.fresh = "[0]"
func.func @sliced_from_a_computed_value(%x: tensor<9xf32>) -> tensor<8xf32> attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22x:0\22, \22dtype\22: \22float32\22, \22shape\22: [9]}], \22outputs\22: [{\22name\22: \22w:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [8]}]}"}} {
  %y = stablehlo.add %x, %x : tensor<9xf32>
  %w = stablehlo.slice %y [0:8] : (tensor<9xf32>) -> tensor<8xf32>
  return %w : tensor<8xf32>
}

// A slot whose update adds a matmul's result reshaped into its shape (a convolution kernel's
// gradient): IREE would compute it in the matmul's layout and copy it in. Untied.
// CHECK-LABEL: func.func @update_from_a_reshaped_matmul(%arg0: tensor<2x4xf32>, %arg1: tensor<2x2x2xf32>) ->
// CHECK-SAME: hlobridge.tied = "[]"
func.func @update_from_a_reshaped_matmul(%x: tensor<2x4xf32>, %acc: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> attributes {iree.reflection = {hlobridge.signature = "{\22inputs\22: [{\22name\22: \22x:0\22, \22dtype\22: \22float32\22, \22shape\22: [2, 4]}, {\22name\22: \22acc:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [2, 2, 2]}], \22outputs\22: [{\22name\22: \22acc:0 (variable)\22, \22dtype\22: \22float32\22, \22shape\22: [2, 2, 2]}]}"}} {
  %g = stablehlo.dot_general %x, %x, contracting_dims = [0] x [0] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %sl = stablehlo.slice %g [0:2, 0:4] : (tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = stablehlo.reshape %sl : (tensor<2x4xf32>) -> tensor<2x2x2xf32>
  %m = stablehlo.constant dense<0.9> : tensor<2x2x2xf32>
  %a = stablehlo.multiply %acc, %m : tensor<2x2x2xf32>
  %acc2 = stablehlo.add %a, %r : tensor<2x2x2xf32>
  return %acc2 : tensor<2x2x2xf32>
}
