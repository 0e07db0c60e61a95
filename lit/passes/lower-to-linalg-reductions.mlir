// RUN: mlirc-opt --split-input-file %s -p mlirc-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @sum_keepdim
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
func.func @sum_keepdim(%a: tensor<7x129xf32>) -> tensor<7x1xf32> {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<7x129xf32>) -> tensor<7x1xf32>
  return %0 : tensor<7x1xf32>
}

// -----

// CHECK-LABEL: func.func @max
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
func.func @max(%a: tensor<7x129xf32>) -> tensor<129xf32> {
  %0 = "mlirc.reduce_max"(%a) {dims = array<i64: 0>, keepdim = false} : (tensor<7x129xf32>) -> tensor<129xf32>
  return %0 : tensor<129xf32>
}

// -----

// argmax carries (value, index) and breaks ties towards the lower index.
// CHECK-LABEL: func.func @argmax
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xi64>)
// CHECK: linalg.index 1
func.func @argmax(%a: tensor<3x11xf32>) -> tensor<3xi64> {
  %0 = "mlirc.argmax"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<3x11xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}
