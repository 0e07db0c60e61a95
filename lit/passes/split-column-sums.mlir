// RUN: mlirc-opt %s -p mlirc-split-column-sums | FileCheck %s

// Batch-norm statistics of an NHWC activation: the loops are NCHW (d1 is C) and the
// input is read in memory order (N, H, W, C), so the sum over N, H and W is one run of
// 8192 rows of 16 columns.  Cut at W (32 rows, within the CPU's 128 for strided sums):
// partial sums over W keep N, H and C, in memory order; their 256 rows are cut again at
// H; the last 8 rows go into the original init.
// CHECK-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-DAG: #[[NHC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>
// CHECK-DAG: #[[MEAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[NC:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @batch_norm_variance(
// CHECK-SAME: %[[X:.*]]: tensor<8x32x32x16xf32>, %[[MEAN_IN:.*]]: tensor<16xf64>
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<16xf64>
// CHECK: %[[Z1:.*]] = linalg.fill {{.*}} -> tensor<8x32x16xf64>
// CHECK: %[[P1:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[MEAN]], #[[NHC]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[MEAN_IN]] : tensor<8x32x32x16xf32>, tensor<16xf64>) outs(%[[Z1]] : tensor<8x32x16xf64>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[Z2:.*]] = linalg.fill {{.*}} -> tensor<8x16xf64>
// CHECK: %[[P2:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[NC]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[P1]] : tensor<8x32x16xf64>) outs(%[[Z2]] : tensor<8x16xf64>)
// CHECK: %[[TOTAL:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[C]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: ins(%[[P2]] : tensor<8x16xf64>) outs(%[[INIT]] : tensor<16xf64>)
// CHECK: return %[[TOTAL]]

// A keepdim result (1x16x1x1, constant indices in its map) keeps its map in the last sum.
// CHECK-LABEL: func.func @keepdim_sum(
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: %[[K:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[KEEP:.*]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: outs(%{{.*}} : tensor<1x16x1x1xf32>)
// CHECK: return %[[K]]

// Unchanged: a sum that is short in memory order too (4 x 4 x 4 rows), one whose
// long run is contiguous in memory already (NCHW: split-reductions' to decide), a max
// (not a sum), an f16 accumulator, a symbolic batch.
// CHECK-LABEL: func.func @left_alone(
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d1)>
#keep = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
module attributes {mlirc.target = "cpu"} {
  func.func @batch_norm_variance(%x: tensor<8x32x32x16xf32>, %mean: tensor<16xf64>) -> tensor<16xf64> {
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<16xf64>
    %init = linalg.fill ins(%zero : f64) outs(%e : tensor<16xf64>) -> tensor<16xf64>
    %v = linalg.generic {indexing_maps = [#nhwc, #c, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%x, %mean : tensor<8x32x32x16xf32>, tensor<16xf64>) outs(%init : tensor<16xf64>) {
    ^bb0(%in: f32, %m: f64, %acc: f64):
      %w = arith.extf %in : f32 to f64
      %d = arith.subf %w, %m : f64
      %sq = arith.mulf %d, %d : f64
      %s = arith.addf %sq, %acc : f64
      linalg.yield %s : f64
    } -> tensor<16xf64>
    return %v : tensor<16xf64>
  }
  func.func @keepdim_sum(%x: tensor<8x32x32x16xf32>) -> tensor<1x16x1x1xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x16x1x1xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
    %v = linalg.generic {indexing_maps = [#nhwc, #keep], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%x : tensor<8x32x32x16xf32>) outs(%init : tensor<1x16x1x1xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<1x16x1x1xf32>
    return %v : tensor<1x16x1x1xf32>
  }
  func.func @left_alone(%short: tensor<4x4x4x16xf32>, %nchw: tensor<8x16x32x32xf32>, %x: tensor<8x32x32x16xf32>,
                        %h: tensor<8x32x32x16xf16>, %dyn: tensor<?x32x32x16xf32>)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf16>, tensor<16xf32>) {
    %zero = arith.constant 0.0 : f32
    %hzero = arith.constant 0.0 : f16
    %e = tensor.empty() : tensor<16xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %he = tensor.empty() : tensor<16xf16>
    %hinit = linalg.fill ins(%hzero : f16) outs(%he : tensor<16xf16>) -> tensor<16xf16>
    %0 = linalg.generic {indexing_maps = [#nhwc, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%short : tensor<4x4x4x16xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    %1 = linalg.generic {indexing_maps = [#nchw, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%nchw : tensor<8x16x32x32xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    %2 = linalg.generic {indexing_maps = [#nhwc, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%x : tensor<8x32x32x16xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.maximumf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    %3 = linalg.generic {indexing_maps = [#nhwc, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%h : tensor<8x32x32x16xf16>) outs(%hinit : tensor<16xf16>) {
    ^bb0(%in: f16, %acc: f16):
      %s = arith.addf %in, %acc : f16
      linalg.yield %s : f16
    } -> tensor<16xf16>
    %4 = linalg.generic {indexing_maps = [#nhwc, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%dyn : tensor<?x32x32x16xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    return %0, %1, %2, %3, %4 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf16>, tensor<16xf32>
  }
}
