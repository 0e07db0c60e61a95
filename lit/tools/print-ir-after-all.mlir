// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,canonicalize --print-ir-after-all 2>&1 | FileCheck %s
// CHECK: IR Dump After mlirc-lower-to-linalg
// CHECK: IR Dump After Canonicalizer
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "mlirc.exp"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
