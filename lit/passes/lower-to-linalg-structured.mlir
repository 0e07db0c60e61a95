// RUN: mlirc-opt --split-input-file %s -p mlirc-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @matmul
// CHECK: linalg.matmul
func.func @matmul(%a: tensor<5x7xf32>, %b: tensor<7x3xf32>) -> tensor<5x3xf32> {
  %0 = "mlirc.matmul"(%a, %b) : (tensor<5x7xf32>, tensor<7x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// CHECK-LABEL: func.func @conv
// CHECK: linalg.conv_2d_nchw_fchw
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = "mlirc.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @pool
// CHECK: linalg.pooling_nchw_max
func.func @pool(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "mlirc.max_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// An integer pool starts from, and pads with, the type's lowest value (there is no -inf).
// CHECK-LABEL: func.func @integer_pool
// CHECK: arith.constant -9223372036854775808 : i64
// CHECK: linalg.pooling_nchw_max
func.func @integer_pool(%x: tensor<1x2x5x5xi64>) -> tensor<1x2x3x3xi64> {
  %0 = "mlirc.max_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<1x2x5x5xi64>) -> tensor<1x2x3x3xi64>
  return %0 : tensor<1x2x3x3xi64>
}
