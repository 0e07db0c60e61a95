// RUN: mlirc-opt %s | mlirc-opt | FileCheck %s

// CHECK-LABEL: func.func @ops
func.func @ops(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<3xi64>) -> tensor<4xf32> {
  // CHECK: "mlirc.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = "mlirc.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "mlirc.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = false}
  %1 = "mlirc.reduce_sum"(%0) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK: "mlirc.index_select"
  %2 = "mlirc.index_select"(%a, %i) {dim = 0 : i64} : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  return %1 : tensor<4xf32>
}
