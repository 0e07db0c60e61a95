// RUN: mlirc-opt %s -p mlirc-channels-last,canonicalize,cse | FileCheck %s

// What reads a convolution's NHWC result besides elementwise ops.  A padding (a
// gather: tensor.extract at clamped indices) reads the NHWC tensor with its indices
// permuted to (n, h, w, c) and writes NHWC itself.  A permute to NHWC of the NCHW
// result (ConvNeXt's) is not made to write "NHWC" of its own result, which would be
// (n, w, c, h): it reads the NHWC buffer in place, a copy that folds away.
// CHECK-LABEL: func.func @main(
// CHECK: %[[C:.*]] = call @library_0(%{{.*}}, %{{.*}}) : (tensor<1x8x6x3xf32>, tensor<5x3x3x3xf32>) -> tensor<1x6x4x5xf32>
// CHECK: %[[PAD:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x7x5x5xf32>)
// CHECK: %[[CH:.*]] = linalg.index 1
// CHECK: %[[H:.*]] = arith.minsi
// CHECK: %[[W:.*]] = arith.minsi
// CHECK: tensor.extract %[[C]][%{{.*}}, %[[H]], %[[W]], %[[CH]]] : tensor<1x6x4x5xf32>
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[PAD]] : tensor<1x7x5x5xf32>) outs(%{{.*}} : tensor<1x5x7x5xf32>)
// CHECK: return %[[OUT]], %[[C]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#to_nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
module {
  func.func @library_0(%arg0: tensor<1x3x8x6xf32>, %arg1: tensor<5x3x3x3xf32>) -> tensor<1x5x6x4xf32> attributes {mlirc.kernel, mlirc.library = "conv2d", mlirc.library_args = {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x5x6x4xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x5x6x4xf32>) -> tensor<1x5x6x4xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : tensor<1x3x8x6xf32>, tensor<5x3x3x3xf32>) outs(%1 : tensor<1x5x6x4xf32>) -> tensor<1x5x6x4xf32>
    return %2 : tensor<1x5x6x4xf32>
  }
  func.func @main(%x: tensor<1x3x8x6xf32>, %w: tensor<5x3x3x3xf32>) -> (tensor<1x5x7x5xf32>, tensor<1x6x4x5xf32>) attributes {mlirc.entry} {
    %zero = arith.constant 0.000000e+00 : f32
    %c5 = arith.constant 5 : index
    %c3 = arith.constant 3 : index
    %c = call @library_0(%x, %w) : (tensor<1x3x8x6xf32>, tensor<5x3x3x3xf32>) -> tensor<1x5x6x4xf32>
    %e0 = tensor.empty() : tensor<1x5x7x5xf32>
    %pad = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e0 : tensor<1x5x7x5xf32>) {
    ^bb0(%out: f32):
      %n = linalg.index 0 : index
      %ch = linalg.index 1 : index
      %h = linalg.index 2 : index
      %wi = linalg.index 3 : index
      %hc = arith.minsi %h, %c5 : index
      %wc = arith.minsi %wi, %c3 : index
      %in_h = arith.cmpi slt, %h, %c5 : index
      %v = tensor.extract %c[%n, %ch, %hc, %wc] : tensor<1x5x6x4xf32>
      %r = arith.select %in_h, %v, %zero : f32
      linalg.yield %r : f32
    } -> tensor<1x5x7x5xf32>
    %e1 = tensor.empty() : tensor<1x6x4x5xf32>
    %perm = linalg.generic {indexing_maps = [#to_nhwc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x5x6x4xf32>) outs(%e1 : tensor<1x6x4x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<1x6x4x5xf32>
    return %pad, %perm : tensor<1x5x7x5xf32>, tensor<1x6x4x5xf32>
  }
}
