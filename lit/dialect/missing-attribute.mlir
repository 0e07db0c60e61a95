// RUN: %not mlirc-opt %s 2>&1 | FileCheck %s

// CHECK: error: {{.*}}dims
func.func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "mlirc.reduce_sum"(%a) {keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
