// RUN: mlirc-opt --split-input-file %s -p mlirc-lower-to-linalg | FileCheck %s

// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @permute
// CHECK: linalg.generic {indexing_maps = [#[[T]], #[[ID]]]
func.func @permute(%a: tensor<3x5xf32>) -> tensor<5x3xf32> {
  %0 = "mlirc.permute"(%a) {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]]
func.func @reshape(%a: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = "mlirc.reshape"(%a) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [4, 3] [1, 2]
func.func @slice(%a: tensor<4x7xf32>) -> tensor<4x3xf32> {
  %0 = "mlirc.slice"(%a) {starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<4x7xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK: linalg.generic
// CHECK-COUNT-2: tensor.extract
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = "mlirc.concat"(%a, %b) {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Reads along an empty dim: a gather or index_select from it reads nothing (any
// index is out of range, the op's check raises; an empty tensor's data pointer may
// be null), and a concatenation skips its empty pieces.
// CHECK-LABEL: func.func @from_empty
// CHECK-NOT: tensor.extract %arg0
// CHECK: %[[Z:.*]] = arith.constant 0 : i32
// CHECK: linalg.yield %[[Z]] : i32
// CHECK-NOT: tensor.extract %arg0
// CHECK: linalg.yield %{{.*}} : i32
// CHECK-NOT: tensor.extract %arg0
// CHECK: tensor.extract %arg3
// CHECK-NOT: tensor.extract %arg0
func.func @from_empty(%x: tensor<0x5xi32>, %i: tensor<7x2xi64>, %j: tensor<3xi64>, %y: tensor<4x5xi32>)
    -> (tensor<7x2xi32>, tensor<3x5xi32>, tensor<4x5xi32>) {
  %0 = "mlirc.gather"(%x, %i) {dim = 0 : i64} : (tensor<0x5xi32>, tensor<7x2xi64>) -> tensor<7x2xi32>
  %1 = "mlirc.index_select"(%x, %j) {dim = 0 : i64} : (tensor<0x5xi32>, tensor<3xi64>) -> tensor<3x5xi32>
  %2 = "mlirc.concat"(%x, %y) {dim = 0 : i64} : (tensor<0x5xi32>, tensor<4x5xi32>) -> tensor<4x5xi32>
  return %0, %1, %2 : tensor<7x2xi32>, tensor<3x5xi32>, tensor<4x5xi32>
}
