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
