// RUN: mlirc-opt %s --split-input-file -p mlirc-fuse-gathered-producers | FileCheck %s

// A padding (a gather: clamped extract, then select) of max(x * scale[c], 0), which the
// producer writes transposed ((d0, d1) -> (d1, d0)).  The scale is read at the
// producer's map applied to the gathered index, x through the inverse permutation,
// and the producer is gone.
// CHECK-LABEL: func.func @pad_of_scaled_relu
// CHECK-NOT: linalg.generic {{.*}} ins(%arg0, %arg1
// CHECK: linalg.generic
// CHECK: %[[R:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK: %[[C:.*]] = arith.minsi %[[R]], %c4
// CHECK: %[[Q:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK: %[[D:.*]] = arith.minsi %[[Q]], %c2
// CHECK-NOT: tensor.extract %{{.*}}[%[[C]], %[[D]]] : tensor<5x3xf32>
// CHECK: %[[X:.*]] = tensor.extract %arg0[%[[D]], %[[C]]] : tensor<3x5xf32>
// CHECK: %[[S:.*]] = tensor.extract %arg1[%[[C]]] : tensor<5xf32>
// CHECK: %[[M:.*]] = arith.mulf %[[X]], %[[S]] : f32
// CHECK: %[[V:.*]] = arith.maximumf %[[M]], %{{.*}} : f32
// CHECK: arith.select %{{.*}}, %[[V]], %{{.*}} : f32
#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#col = affine_map<(d0, d1) -> (d1)>
#none = affine_map<(d0, d1) -> ()>
func.func @pad_of_scaled_relu(%x: tensor<3x5xf32>, %scale: tensor<5xf32>, %fill: tensor<f32>) -> tensor<7x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %p = linalg.generic {indexing_maps = [#id, #col, #t], iterator_types = ["parallel", "parallel"]} ins(%x, %scale : tensor<3x5xf32>, tensor<5xf32>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %m = arith.mulf %a, %s : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  } -> tensor<5x3xf32>
  %e2 = tensor.empty() : tensor<7x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %pad = linalg.generic {indexing_maps = [#none, #id], iterator_types = ["parallel", "parallel"]} ins(%fill : tensor<f32>) outs(%e2 : tensor<7x4xf32>) {
  ^bb0(%f: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %li = arith.subi %i, %c1 : index
    %lj = arith.subi %j, %c1 : index
    %ci0 = arith.maxsi %li, %c0 : index
    %ci = arith.minsi %ci0, %c4 : index
    %cj0 = arith.maxsi %lj, %c0 : index
    %cj = arith.minsi %cj0, %c2 : index
    %in_i = arith.cmpi eq, %li, %ci : index
    %in_j = arith.cmpi eq, %lj, %cj : index
    %in = arith.andi %in_i, %in_j : i1
    %v = tensor.extract %p[%ci, %cj] : tensor<5x3xf32>
    %r = arith.select %in, %v, %f : f32
    linalg.yield %r : f32
  } -> tensor<7x4xf32>
  return %pad : tensor<7x4xf32>
}

// -----

// A producer something else reads whole as well stays: inlined into the gather it
// would be computed twice and written anyway.
// CHECK-LABEL: func.func @read_whole_too
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: tensor.extract %[[P]]
// CHECK: return %[[P]],
#id1 = affine_map<(d0) -> (d0)>
func.func @read_whole_too(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %e = tensor.empty() : tensor<6xf32>
  %p = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e : tensor<6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<6xf32>
  %c5 = arith.constant 5 : index
  %flip = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%e : tensor<6xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %k = arith.subi %c5, %i : index
    %v = tensor.extract %p[%k] : tensor<6xf32>
    linalg.yield %v : f32
  } -> tensor<6xf32>
  return %p, %flip : tensor<6xf32>, tensor<6xf32>
}

// -----

// Integer division stays where eager computes it: a zero divisor must not be met in
// a gather's clamped lane that eager never reads.
// CHECK-LABEL: func.func @integer_division_stays
// CHECK: %[[P:.*]] = linalg.generic
// CHECK: arith.divsi
// CHECK: tensor.extract %[[P]]
#id1 = affine_map<(d0) -> (d0)>
func.func @integer_division_stays(%x: tensor<6xi64>, %y: tensor<6xi64>) -> tensor<6xi64> {
  %e = tensor.empty() : tensor<6xi64>
  %p = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%x, %y : tensor<6xi64>, tensor<6xi64>) outs(%e : tensor<6xi64>) {
  ^bb0(%a: i64, %b: i64, %out: i64):
    %r = arith.divsi %a, %b : i64
    linalg.yield %r : i64
  } -> tensor<6xi64>
  %c5 = arith.constant 5 : index
  %flip = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%e : tensor<6xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %k = arith.subi %c5, %i : index
    %v = tensor.extract %p[%k] : tensor<6xi64>
    linalg.yield %v : i64
  } -> tensor<6xi64>
  return %flip : tensor<6xi64>
}

// -----

// A pad of a pad: the inner one, a gather itself, is inlined in a second round; an
// index the producer reads (linalg.index) is the gathered one.
// CHECK-LABEL: func.func @pad_of_iota_pad
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: arith.index_cast
// CHECK: return
#id1 = affine_map<(d0) -> (d0)>
func.func @pad_of_iota_pad(%fill: tensor<i64>) -> tensor<8xi64> {
  %e = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%e : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<4xi64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %e6 = tensor.empty() : tensor<6xi64>
  %pad1 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, #id1], iterator_types = ["parallel"]} ins(%fill : tensor<i64>) outs(%e6 : tensor<6xi64>) {
  ^bb0(%f: i64, %out: i64):
    %i = linalg.index 0 : index
    %l = arith.subi %i, %c1 : index
    %c = arith.maxsi %l, %c0 : index
    %k = arith.minsi %c, %c3 : index
    %in = arith.cmpi eq, %l, %k : index
    %v = tensor.extract %iota[%k] : tensor<4xi64>
    %r = arith.select %in, %v, %f : i64
    linalg.yield %r : i64
  } -> tensor<6xi64>
  %e8 = tensor.empty() : tensor<8xi64>
  %pad2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, #id1], iterator_types = ["parallel"]} ins(%fill : tensor<i64>) outs(%e8 : tensor<8xi64>) {
  ^bb0(%f: i64, %out: i64):
    %i = linalg.index 0 : index
    %l = arith.subi %i, %c1 : index
    %c = arith.maxsi %l, %c0 : index
    %k = arith.minsi %c, %c5 : index
    %in = arith.cmpi eq, %l, %k : index
    %v = tensor.extract %pad1[%k] : tensor<6xi64>
    %r = arith.select %in, %v, %f : i64
    linalg.yield %r : i64
  } -> tensor<8xi64>
  return %pad2 : tensor<8xi64>
}

// -----

// Read through a reshape (batch and channels merged for a per-channel window): the
// gathered index is delinearized into the producer's (i / 3, i % 3).
// CHECK-LABEL: func.func @through_a_collapse
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[N:.*]] = arith.remui %[[I:.*]], %c3
// CHECK: %[[C:.*]] = arith.divui %[[I]], %c3
// CHECK: %[[X:.*]] = tensor.extract %arg0[%[[C]], %[[N]], %{{.*}}] : tensor<2x3x4xf32>
// CHECK: math.tanh %[[X]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @through_a_collapse(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %e = tensor.empty() : tensor<2x3x4xf32>
  %p = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<2x3x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<2x3x4xf32>
  %flat = tensor.collapse_shape %p [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %c3 = arith.constant 3 : index
  %e2 = tensor.empty() : tensor<6x4xf32>
  %flip = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<6x4xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.subi %c3, %j : index
    %v = tensor.extract %flat[%i, %k] : tensor<6x4xf32>
    linalg.yield %v : f32
  } -> tensor<6x4xf32>
  return %flip : tensor<6x4xf32>
}

// -----

// A reshape of the producer that nothing reads (mlirc-recompute-cheap-producers leaves
// one behind when it gives the reshape's reader a copy) goes with the producer: erasing
// the producer under it aborted (fuzzer graph 114000342023: a concatenation and an
// fmod of one transposed input).
// CHECK-LABEL: func.func @beside_an_unread_reshape
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor.extract %{{.*}} : tensor<3x2xf32>
// CHECK: %[[X:.*]] = tensor.extract %arg0[%{{.*}}, %{{.*}}] : tensor<2x3xf32>
// CHECK: math.tanh %[[X]]
#t23 = affine_map<(d0, d1) -> (d1, d0)>
#i23 = affine_map<(d0, d1) -> (d0, d1)>
func.func @beside_an_unread_reshape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %e = tensor.empty() : tensor<3x2xf32>
  %p = linalg.generic {indexing_maps = [#t23, #i23], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<3x2xf32>
  %unread = tensor.collapse_shape %p [[0, 1]] : tensor<3x2xf32> into tensor<6xf32>
  %c2 = arith.constant 2 : index
  %e2 = tensor.empty() : tensor<3x2xf32>
  %flip = linalg.generic {indexing_maps = [#i23], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<3x2xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.subi %c2, %i : index
    %v = tensor.extract %p[%k, %j] : tensor<3x2xf32>
    linalg.yield %v : f32
  } -> tensor<3x2xf32>
  return %flip : tensor<3x2xf32>
}
