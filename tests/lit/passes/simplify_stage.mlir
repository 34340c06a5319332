// RUN: %hlobridge-opt %s --stage simplify | FileCheck %s
// RUN: %hlobridge-opt %s --stage simplify.constant-fold | FileCheck %s --check-prefix=FOLDED
// The simplify stage runs its passes in order: inline, canonicalize, stablehlo-canonicalize,
// constant-fold, algebraic-simplify, cse, symbol-dce. --stage stops after any one of them.

func.func private @scale(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %s : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// After constant-fold, sqrt(1) is the constant 1 but the multiply by it is still there (the
// inliner already dropped the helper it inlined).
// FOLDED-LABEL: func.func @main
// FOLDED-NOT: stablehlo.sqrt
// FOLDED: stablehlo.multiply %arg0, %{{.*}}
// FOLDED-NOT: func.func private @scale
// After the whole stage, x * sqrt(1) is x, the two exps are one, the helper is gone.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[E:.*]] = stablehlo.exponential %arg0
// CHECK-NEXT: return %arg0, %[[E]], %[[E]]
// CHECK-NOT: func.func private @scale
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %root = stablehlo.sqrt %one : tensor<4xf32>
  %0 = func.call @scale(%a, %root) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e1 = stablehlo.exponential %a : tensor<4xf32>
  %e2 = stablehlo.exponential %a : tensor<4xf32>
  return %0, %e1, %e2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
