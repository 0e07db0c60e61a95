// RUN: mlirc-opt --split-input-file %s | FileCheck %s

// CHECK-LABEL: func.func @first
func.func @first(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}

// -----

// CHECK: // -----
// CHECK-LABEL: func.func @second
func.func @second(%a: tensor<3xf32>) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
