// RUN: %not mlirc-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK: invalid.mlir:6:8: error: op expects exactly 2 operands, but got 1
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  // A binary op with one operand must be rejected with a located diagnostic.
  %0 = "mlirc.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// IRDL: operands and results are builtin tensors.
// CHECK: invalid.mlir:[[# @LINE + 2]]:8: error: expected base type 'builtin.tensor' but got 'builtin.f32'
func.func @g(%a: f32) -> f32 {
  %0 = "mlirc.neg"(%a) : (f32) -> f32
  return %0 : f32
}
