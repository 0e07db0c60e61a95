// RUN: %not mlirc-opt %s 2>&1 | FileCheck %s

// CHECK: invalid.mlir:6:8: error: op expects exactly 2 operands, but got 1
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  // A binary op with one operand must be rejected with a located diagnostic.
  %0 = "mlirc.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
