// RUN: mlirc-opt %s --split-input-file -p mlirc-gpu-loop-order | FileCheck %s

// A generic writing channels-last (loops n, c, h, w; result n, h, w, c) gets its
// parallel loops in the result's order, so that neighbouring threads store
// neighbouring elements; the read in the same layout follows, a read of c alone
// becomes d3, and linalg.index names the renumbered loop.
// CHECK-DAG: #[[NHWC_IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CHANNEL:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @kernel_0
// CHECK: linalg.generic {indexing_maps = [#[[NHWC_IN]], #[[CHANNEL]], #[[NHWC_IN]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK: linalg.index 3 : index
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#c = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @kernel_0(%x: tensor<2x5x7x3xf32>, %b: tensor<3xf32>) -> tensor<2x5x7x3xf32> attributes {mlirc.kernel} {
  %init = tensor.empty() : tensor<2x5x7x3xf32>
  %0 = linalg.generic {indexing_maps = [#nhwc, #c, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<2x5x7x3xf32>, tensor<3xf32>) outs(%init : tensor<2x5x7x3xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i32
    %cf = arith.sitofp %ci : i32 to f32
    %s = arith.addf %in, %bias : f32
    %r = arith.addf %s, %cf : f32
    linalg.yield %r : f32
  } -> tensor<2x5x7x3xf32>
  return %0 : tensor<2x5x7x3xf32>
}

// -----

// A channels-last max pool (loops n, c, oh, ow, kh, kw): the window loops stay last.
// CHECK-DAG: #[[POOL_IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d4, d2 * 2 + d5, d3)>
// CHECK-DAG: #[[POOL_OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @kernel_1
// CHECK: indexing_maps = [#[[POOL_IN]], #{{.*}}, #[[POOL_OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: ins(%arg0, %{{.*}} : tensor<1x8x8x4xf32>, tensor<2x2xf32>)
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2 * 2 + d4, d3 * 2 + d5, d1)>
#window = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1)>
func.func @kernel_1(%x: tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32> attributes {mlirc.kernel} {
  %w = tensor.empty() : tensor<2x2xf32>
  %cst = arith.constant 0xFF800000 : f32
  %init = tensor.empty() : tensor<1x4x4x4xf32>
  %fill = linalg.fill ins(%cst : f32) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %0 = linalg.generic {indexing_maps = [#in, #window, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x8x8x4xf32>, tensor<2x2xf32>) outs(%fill : tensor<1x4x4x4xf32>) {
  ^bb0(%in: f32, %unused: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// A result in loop order (a transpose copy: the read is the strided one) is left as it is.
// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @kernel_2
// CHECK: indexing_maps = [#[[T]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<4x6xf32>) outs(%{{.*}} : tensor<6x4xf32>)
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @kernel_2(%x: tensor<4x6xf32>) -> tensor<6x4xf32> attributes {mlirc.kernel} {
  %init = tensor.empty() : tensor<6x4xf32>
  %0 = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%init : tensor<6x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// A short column sum over few columns ([N, C] summed into C: a split sum's last
// stage) gets its reduction loop last, a row reduction of C rows; a long one, and a
// short one over many columns, keep their loops.
// CHECK-DAG: #[[ACROSS:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[SAME:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COLUMN:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @short_column
// CHECK: linalg.generic {indexing_maps = [#[[ACROSS]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-LABEL: func.func @long_column
// CHECK: linalg.generic {indexing_maps = [#[[SAME]], #[[COLUMN]]], iterator_types = ["reduction", "parallel"]}
// CHECK-LABEL: func.func @wide_column
// CHECK: linalg.generic {indexing_maps = [#[[SAME]], #[[COLUMN]]], iterator_types = ["reduction", "parallel"]}
#same = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d1)>
func.func @short_column(%x: tensor<256x16xf32>, %init: tensor<16xf32>) -> tensor<16xf32> attributes {mlirc.kernel} {
  %0 = linalg.generic {indexing_maps = [#same, #column], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<256x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
func.func @long_column(%x: tensor<257x16xf32>, %init: tensor<16xf32>) -> tensor<16xf32> attributes {mlirc.kernel} {
  %0 = linalg.generic {indexing_maps = [#same, #column], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<257x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
func.func @wide_column(%x: tensor<256x4097xf32>, %init: tensor<4097xf32>) -> tensor<4097xf32> attributes {mlirc.kernel} {
  %0 = linalg.generic {indexing_maps = [#same, #column], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<256x4097xf32>) outs(%init : tensor<4097xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<4097xf32>
  return %0 : tensor<4097xf32>
}
