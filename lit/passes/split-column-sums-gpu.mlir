// RUN: mlirc-opt %s -p "mlirc-split-column-sums{longest-column=1024}" | FileCheck %s

// On a GPU (the GPU backend's `longest-column=1024`) a strided sum stays whole up to 1024 rows (one tile's column walk): the
// batch-norm statistics of an 8x32x32x16 NHWC activation are cut once, at H, into
// per-image sums of 1024 rows, then summed over the 8 images.
// CHECK-LABEL: func.func @batch_norm_mean(
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: %[[T:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: ins(%[[P]] : tensor<8x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[T]]

// A contiguous run is left to mlirc-split-reductions, which keeps long rows whole on a
// GPU: a sum over H x W = 16384 of an NCHW tensor is not cut here.
// CHECK-LABEL: func.func @long_contiguous_rows(
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d1)>
#nc = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
module attributes {mlirc.target = "cuda"} {
  func.func @batch_norm_mean(%x: tensor<8x32x32x16xf32>) -> tensor<16xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %v = linalg.generic {indexing_maps = [#nhwc, #c], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
        ins(%x : tensor<8x32x32x16xf32>) outs(%init : tensor<16xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    return %v : tensor<16xf32>
  }
  func.func @long_contiguous_rows(%x: tensor<1024x4x128x128xf32>) -> tensor<1024x4xf32> {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1024x4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x4xf32>) -> tensor<1024x4xf32>
    %v = linalg.generic {indexing_maps = [#nchw, #nc], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
        ins(%x : tensor<1024x4x128x128xf32>) outs(%init : tensor<1024x4xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    } -> tensor<1024x4xf32>
    return %v : tensor<1024x4xf32>
  }
}
