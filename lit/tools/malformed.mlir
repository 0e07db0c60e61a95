// RUN: %not mlirc-opt %s 2>&1 | FileCheck %s
// CHECK: malformed.mlir:4:{{[0-9]+}}: error:
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = arith.addf %a, %undefined : tensor<2xf32>
  return %0 : tensor<2xf32>
}
