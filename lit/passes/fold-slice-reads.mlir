// RUN: mlirc-opt %s --split-input-file -p mlirc-fold-slice-reads | FileCheck %s

// Layer norm's pivot: each row's first element, broadcast against the row.  The
// generic reads x itself through (d0, 0); the slice goes.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @first_of_row
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[FIRST]], #{{.*}}], {{.*}} ins(%arg0, %arg0 : tensor<8x96xf32>, tensor<8x96xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d0, 0)>
func.func @first_of_row(%x: tensor<8x96xf32>) -> tensor<8x96xf32> attributes {mlirc.entry} {
  %p = tensor.extract_slice %x[0, 0] [8, 1] [1, 1] : tensor<8x96xf32> to tensor<8x1xf32>
  %e = tensor.empty() : tensor<8x96xf32>
  %r = linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %p : tensor<8x96xf32>, tensor<8x1xf32>) outs(%e : tensor<8x96xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x96xf32>
  return %r : tensor<8x96xf32>
}

// -----

// The first row, read through the identity of the slice's own unit dim: the dim's
// loop keeps its range from the result.
// CHECK-DAG: #[[ROW0:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @first_row
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {indexing_maps = [#[[ROW0]], #{{.*}}], {{.*}} ins(%arg0 : tensor<7x4xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @first_row(%x: tensor<7x4xf32>) -> tensor<1x4xf32> attributes {mlirc.entry} {
  %p = tensor.extract_slice %x[0, 0] [1, 4] [1, 1] : tensor<7x4xf32> to tensor<1x4xf32>
  %e = tensor.empty() : tensor<1x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<1x4xf32>) outs(%e : tensor<1x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

// Not folded: a slice that keeps part of a dim (its reads would need an offset
// map), a strided one, one that picks an element other than the first (the
// vectorizer takes only a 0 in a map), and one whose picked dim is the only source
// of a loop's range (a reduction over it).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: tensor.extract_slice
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @kept(%x: tensor<8x96xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>, tensor<8xf32>, tensor<8xf32>) attributes {mlirc.entry} {
  %part = tensor.extract_slice %x[0, 3] [8, 10] [1, 1] : tensor<8x96xf32> to tensor<8x10xf32>
  %strided = tensor.extract_slice %x[0, 0] [8, 10] [1, 2] : tensor<8x96xf32> to tensor<8x10xf32>
  %one = tensor.extract_slice %x[0, 0] [8, 1] [1, 1] : tensor<8x96xf32> to tensor<8x1xf32>
  %fifth = tensor.extract_slice %x[0, 5] [8, 1] [1, 1] : tensor<8x96xf32> to tensor<8x1xf32>
  %e = tensor.empty() : tensor<8x10xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%part : tensor<8x10xf32>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  } -> tensor<8x10xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%strided : tensor<8x10xf32>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  } -> tensor<8x10xf32>
  %z = arith.constant 0.0 : f32
  %e8 = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%one : tensor<8x1xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = arith.addf %v, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel"]} ins(%fifth : tensor<8x1xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %a, %b, %c, %d : tensor<8x10xf32>, tensor<8x10xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A symbolic dim kept whole: the slice's size is the source's own (`tensor.dim` of
// it, as the importer reads Dynamo's symbols), so it folds as a static one does.  A
// size read off another tensor may differ: that slice stays.
// CHECK-DAG: #[[FIRST:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @symbolic_rows
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[FIRST]], #{{.*}}], {{.*}} ins(%arg0, %arg0 : tensor<?x96xf32>, tensor<?x96xf32>)
// CHECK: %[[OTHER:.*]] = tensor.extract_slice %arg0[0, 0] [%{{.*}}, 1] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[OTHER]] : tensor<?x96xf32>, tensor<?x1xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d0, 0)>
func.func @symbolic_rows(%x: tensor<?x96xf32>, %y: tensor<?x3xf32>) -> (tensor<?x96xf32>, tensor<?x96xf32>) attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x96xf32>
  %p = tensor.extract_slice %x[0, 0] [%n, 1] [1, 1] : tensor<?x96xf32> to tensor<?x1xf32>
  %e = tensor.empty(%n) : tensor<?x96xf32>
  %r = linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %p : tensor<?x96xf32>, tensor<?x1xf32>) outs(%e : tensor<?x96xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x96xf32>
  %m = tensor.dim %y, %c0 : tensor<?x3xf32>
  %q = tensor.extract_slice %x[0, 0] [%m, 1] [1, 1] : tensor<?x96xf32> to tensor<?x1xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %q : tensor<?x96xf32>, tensor<?x1xf32>) outs(%e : tensor<?x96xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x96xf32>
  return %r, %r2 : tensor<?x96xf32>, tensor<?x96xf32>
}
