// RUN: %not mlirc-opt %s --split-input-file 2>&1 | FileCheck %s

// The dialect verifier checks what IRDL cannot: attributes in range and of the
// right length, and result shapes that follow from them.

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.reduce_sum' op dims [0, 0] repeat a dim
func.func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 0, 0>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.reduce_max' op dims [2] out of range for rank 2
func.func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "mlirc.reduce_max"(%a) {dims = array<i64: 2>, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.conv2d' op attribute 'stride' needs 2 entries (height, width), got [2]
func.func @f(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x5x4xf32> {
  %0 = "mlirc.conv2d"(%x, %w) {stride = array<i64: 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x4xf32>
  return %0 : tensor<1x6x5x4xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.permute' op perm [0, 0] is not a permutation of 2 dims
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = "mlirc.permute"(%a) {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.slice' op dim 0: 3 elements from 1 every 2 run past its size 5
func.func @f(%a: tensor<5xf32>) -> tensor<3xf32> {
  %0 = "mlirc.slice"(%a) {starts = array<i64: 1>, steps = array<i64: 2>} : (tensor<5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.add' op result shape [4, 8] but the operands give [4, 7]
func.func @f(%a: tensor<4x7xf32>, %b: tensor<7xf32>) -> tensor<4x8xf32> {
  %0 = "mlirc.add"(%a, %b) : (tensor<4x7xf32>, tensor<7xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.reduce_sum' op attribute 'dims' must be an array<i64: ...>
func.func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "mlirc.reduce_sum"(%a) {dims = 1 : i64, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Element types: a transcendental takes and gives floats ...
// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.exp' op takes and gives floats, not i32 -> i32
func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "mlirc.exp"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// ... bitwise ops take integers or bools, comparisons give bools
// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.bitwise_and' op takes and gives integers or bools, not f32, f32 -> f32
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mlirc.bitwise_and"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.lt' op gives bools (i1), not f32
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mlirc.lt"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A scatter's updates are rows of x's width, one per index entry.
// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.scatter_add' op src [5, 4] does not match index [6] and x [9, 4]
func.func @f(%x: tensor<9x4xf32>, %i: tensor<6xi64>, %v: tensor<5x4xf32>) -> tensor<9x4xf32> {
  %0 = "mlirc.scatter_add"(%x, %i, %v) : (tensor<9x4xf32>, tensor<6xi64>, tensor<5x4xf32>) -> tensor<9x4xf32>
  return %0 : tensor<9x4xf32>
}

// -----

// CHECK: invalid-attributes.mlir:[[# @LINE + 2]]:8: error: 'mlirc.scatter_add' op index must be an integer tensor
func.func @f(%x: tensor<9x4xf32>, %i: tensor<5xf32>, %v: tensor<5x4xf32>) -> tensor<9x4xf32> {
  %0 = "mlirc.scatter_add"(%x, %i, %v) : (tensor<9x4xf32>, tensor<5xf32>, tensor<5x4xf32>) -> tensor<9x4xf32>
  return %0 : tensor<9x4xf32>
}
