// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise | FileCheck %s

// A chain of elementwise ops becomes one generic.
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.exp
// CHECK: math.tanh
func.func @chain(%a: tensor<7x33xf32>, %b: tensor<33xf32>) -> tensor<7x33xf32> {
  %0 = "mlirc.add"(%a, %b) : (tensor<7x33xf32>, tensor<33xf32>) -> tensor<7x33xf32>
  %1 = "mlirc.exp"(%0) : (tensor<7x33xf32>) -> tensor<7x33xf32>
  %2 = "mlirc.tanh"(%1) : (tensor<7x33xf32>) -> tensor<7x33xf32>
  return %2 : tensor<7x33xf32>
}

// On `?` dims, a consumer's init sized by a `tensor.dim` of its (reshaped) producer:
// the size is read off the producer's own init first, so the producer has one use
// and fuses away (triu's row index), as on static dims.
// CHECK-LABEL: func.func @sized_by_producer
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
#r1 = affine_map<(d0) -> (d0)>
#r2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @sized_by_producer(%x: tensor<?x1xi64>) -> tensor<?x1xi64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x1xi64>
  %e = tensor.empty(%n) : tensor<?xi64>
  %iota = linalg.generic {indexing_maps = [#r1], iterator_types = ["parallel"]} outs(%e : tensor<?xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<?xi64>
  %col = tensor.expand_shape %iota [[0, 1]] output_shape [%n, 1] : tensor<?xi64> into tensor<?x1xi64>
  %m = tensor.dim %col, %c0 : tensor<?x1xi64>
  %e2 = tensor.empty(%m) : tensor<?x1xi64>
  %r = linalg.generic {indexing_maps = [#r2, #r2, #r2], iterator_types = ["parallel", "parallel"]} ins(%col, %x : tensor<?x1xi64>, tensor<?x1xi64>) outs(%e2 : tensor<?x1xi64>) {
  ^bb0(%a: i64, %b: i64, %out: i64):
    %s = arith.subi %a, %b : i64
    linalg.yield %s : i64
  } -> tensor<?x1xi64>
  return %r : tensor<?x1xi64>
}

// A residual add after a linear layer on an attention's output (a library bmm's
// result, flattened): fusion moves the view back to [?, ?, 16] through the bias
// add and the contraction, and meets the flattening of the bmm's result.  The
// pair folds where the bmm's sizes, read off its operands (mlirc-resolve-call-dims),
// are the view's: the bias and residual adds are one generic beside the
// contraction, as on static sizes.
// CHECK-LABEL: func.func @residual
// CHECK: call @library_bmm
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func private @library_bmm(%a: tensor<?x?x16xf32>, %b: tensor<?x16x16xf32>) -> tensor<?x?x16xf32> attributes {mlirc.kernel, mlirc.library = "bmm"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %d0 = tensor.dim %a, %c0 : tensor<?x?x16xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?x16xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<?x?x16xf32>, tensor<?x16x16xf32>) outs(%f : tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %r : tensor<?x?x16xf32>
}
func.func @residual(%x: tensor<?x?x16xf32>, %v: tensor<?x16x16xf32>, %w: tensor<16x16xf32>, %bias: tensor<16xf32>) -> tensor<?x?x16xf32> attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x?x16xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x16xf32>
  %a = call @library_bmm(%x, %v) : (tensor<?x?x16xf32>, tensor<?x16x16xf32>) -> tensor<?x?x16xf32>
  %c = tensor.collapse_shape %a [[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
  %nm = tensor.dim %c, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%nm) : tensor<?x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %p = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%c, %w : tensor<?x16xf32>, tensor<16x16xf32>) outs(%f : tensor<?x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.mulf %i, %j : f32
    %t = arith.addf %o, %s : f32
    linalg.yield %t : f32
  } -> tensor<?x16xf32>
  %b = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%p, %bias : tensor<?x16xf32>, tensor<16xf32>) outs(%e : tensor<?x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  %expanded = tensor.expand_shape %b [[0, 1], [2]] output_shape [%n, %m, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  %e2 = tensor.empty(%n, %m) : tensor<?x?x16xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %expanded : tensor<?x?x16xf32>, tensor<?x?x16xf32>) outs(%e2 : tensor<?x?x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  } -> tensor<?x?x16xf32>
  return %r : tensor<?x?x16xf32>
}
