// RUN: mlirc-opt --split-input-file %s -p mlirc-lower-to-linalg | FileCheck %s

// `?` dims: each tensor an op creates takes its symbolic sizes from its operands
// (tensor.dim, by the rules of dialects/dims.py), a broadcast one from any operand
// whose dim is not 1.
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[D0]]) : tensor<?x33xf32>
// CHECK: linalg.generic
func.func @elementwise(%a: tensor<?x33xf32>, %b: tensor<33xf32>) -> tensor<?x33xf32> {
  %0 = "mlirc.add"(%a, %b) : (tensor<?x33xf32>, tensor<33xf32>) -> tensor<?x33xf32>
  return %0 : tensor<?x33xf32>
}

// -----

// A reduction keeps the dims it does not reduce; keepdim's unit dim comes back by
// an expand of the dims it has, each symbolic one its own.
// CHECK-LABEL: func.func @reduce_keepdim
// CHECK-DAG: %[[D0:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG: %[[D1:.*]] = tensor.dim %arg0, %c1
// CHECK: tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, %{{.*}}, 1] : tensor<?x?xf32> into tensor<?x?x1xf32>
func.func @reduce_keepdim(%a: tensor<?x?x32xf32>) -> tensor<?x?x1xf32> {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 2>, keepdim = true} : (tensor<?x?x32xf32>) -> tensor<?x?x1xf32>
  return %0 : tensor<?x?x1xf32>
}

// -----

// A reshape between shapes with several symbolic dims goes through one dim and
// takes its sizes from its operands.
// CHECK-LABEL: func.func @reshape
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : tensor<?x?x16xf32> into tensor<?xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2]] output_shape [%arg1, %arg2, 4] : tensor<?xf32> into tensor<?x?x4xf32>
func.func @reshape(%a: tensor<?x?x16xf32>, %s: index, %t: index) -> tensor<?x?x4xf32> {
  %0 = "mlirc.reshape"(%a, %s, %t) : (tensor<?x?x16xf32>, index, index) -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
}

// -----

// A matmul's rows are its left operand's; a size as a float tensor.
// CHECK-LABEL: func.func @matmul_and_count
// CHECK: %[[M:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[M]]) : tensor<?x8xf32>
// CHECK: linalg.matmul
// CHECK: arith.index_cast %arg2 : index to i64
// CHECK: arith.sitofp
// CHECK: tensor.from_elements
func.func @matmul_and_count(%a: tensor<?x16xf32>, %w: tensor<16x8xf32>, %n: index) -> (tensor<?x8xf32>, tensor<f32>) {
  %0 = "mlirc.matmul"(%a, %w) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %1 = "mlirc.from_size"(%n) : (index) -> tensor<f32>
  return %0, %1 : tensor<?x8xf32>, tensor<f32>
}

// -----

// [s0, s1] -> [s1, s0] has the same types as an identity: symbolic dims are not paired
// by position, the reshape goes through one dim.
// CHECK-LABEL: func.func @reshape_swap
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<?x?xf32> into tensor<?xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [%arg2, %arg1]
func.func @reshape_swap(%a: tensor<?x?xf32>, %s: index, %t: index) -> tensor<?x?xf32> {
  %0 = "mlirc.reshape"(%a, %t, %s) : (tensor<?x?xf32>, index, index) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Ops that wait for static sizes stay mlirc ops while they have `?` dims: one an
// earlier pass deferred (a sum whose split depends on its length), a concatenation
// along a symbolic dim (its pieces' offsets); one along a static dim is lowered.
// What reads them is lowered, taking their sizes with tensor.dim.  A window op of
// symbolic image size is lowered: its padded input and its result are sized from
// the input's dims (H + 2 pad; (H + 2 pad - k) floordiv stride + 1).
// CHECK-LABEL: func.func @waits_for_sizes
// CHECK: %[[SUM:.*]] = "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = false, mlirc.deferred = "mlirc-split-reductions"}
// CHECK: tensor.dim %[[SUM]], %c0
// CHECK: linalg.generic
// CHECK: %[[H:.*]] = tensor.dim %arg1, %c2
// CHECK: %[[PH:.*]] = arith.addi %[[H]], %c2
// CHECK: tensor.empty(%[[PH]], %{{.*}}) : tensor<1x3x?x?xf32>
// CHECK: arith.floordivsi
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} -> tensor<1x4x?x?xf32>
// CHECK: "mlirc.concat"(%arg3, %arg3) {dim = 0 : i64, mlirc.deferred = "mlirc-lower-to-linalg"}
// CHECK-NOT: "mlirc.concat"
func.func @waits_for_sizes(%a: tensor<?x?xf32>, %x: tensor<1x3x?x?xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<?x5xf32>)
    -> (tensor<?xf32>, tensor<1x4x?x?xf32>, tensor<?x5xf32>, tensor<?x10xf32>) {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false, mlirc.deferred = "mlirc-split-reductions"} : (tensor<?x?xf32>) -> tensor<?xf32>
  %1 = "mlirc.exp"(%0) : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "mlirc.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x?x?xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x?xf32>
  %3 = "mlirc.concat"(%c, %c) {dim = 0 : i64} : (tensor<?x5xf32>, tensor<?x5xf32>) -> tensor<?x5xf32>
  %4 = "mlirc.concat"(%c, %c) {dim = 1 : i64} : (tensor<?x5xf32>, tensor<?x5xf32>) -> tensor<?x10xf32>
  return %1, %2, %3, %4 : tensor<?xf32>, tensor<1x4x?x?xf32>, tensor<?x5xf32>, tensor<?x10xf32>
}

// -----

// A convolution whose weight is a graph argument of symbolic window size waits: its
// window's size decides its lowering.
// CHECK-LABEL: func.func @symbolic_window
// CHECK: "mlirc.conv2d"(%arg0, %arg1) {{.*}}mlirc.deferred = "mlirc-lower-to-linalg"
func.func @symbolic_window(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x?x?xf32>) -> tensor<1x4x?x?xf32> {
  %0 = "mlirc.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x9x9xf32>, tensor<4x3x?x?xf32>) -> tensor<1x4x?x?xf32>
  return %0 : tensor<1x4x?x?xf32>
}

// -----

// A gather or index_select along a `?` dim waits: its reads are clamped into that
// dim, which may be empty at some size (s0 - 1), where nothing may be read.
// CHECK-LABEL: func.func @indexed_symbolic_dim
// CHECK: "mlirc.index_select"(%arg0, %arg1) {dim = 0 : i64, mlirc.deferred = "mlirc-lower-to-linalg"}
// CHECK: "mlirc.gather"(%arg0, %arg2) {dim = 0 : i64, mlirc.deferred = "mlirc-lower-to-linalg"}
func.func @indexed_symbolic_dim(%x: tensor<?x5xf32>, %j: tensor<3xi64>, %i: tensor<2x5xi64>) -> (tensor<3x5xf32>, tensor<2x5xf32>) {
  %0 = "mlirc.index_select"(%x, %j) {dim = 0 : i64} : (tensor<?x5xf32>, tensor<3xi64>) -> tensor<3x5xf32>
  %1 = "mlirc.gather"(%x, %i) {dim = 0 : i64} : (tensor<?x5xf32>, tensor<2x5xi64>) -> tensor<2x5xf32>
  return %0, %1 : tensor<3x5xf32>, tensor<2x5xf32>
}
