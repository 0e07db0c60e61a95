// RUN: mlirc-opt %s -p mlirc-channels-last,canonicalize,cse | FileCheck %s

// conv -> relu -> conv -> max-pool.  Both convolutions become NHWC library calls;
// the input is copied to NHWC once, the relu and the (generalized) pool read and
// write NHWC through their maps, nothing converts between the two convolutions,
// and the result is copied back to NCHW at the end.  Weights are passed OHWI
// (channels-last), so that oneDNN does not copy them: the 3x3 one through a
// transpose, the 1x1 one through a reshape (its two layouts are the same memory).

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-DAG: #[[TO_NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2 * 2 + d4, d3 * 2 + d5, d1)>
// CHECK-DAG: #[[POOL_OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1)>

// CHECK-LABEL: func.func @library_0(
// CHECK-SAME: %{{.*}}: tensor<1x6x6x3xf32>, %{{.*}}: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-SAME: mlirc.library = "conv2d_nhwc"
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-LABEL: func.func @library_1(
// CHECK-SAME: tensor<1x4x4x4xf32>, %{{.*}}: tensor<2x1x1x4xf32>) -> tensor<1x4x4x2xf32>

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<4x3x3x3xf32>, %[[X:[a-z0-9]+]]: tensor<1x3x6x6xf32>, %[[W2:[a-z0-9]+]]: tensor<2x4x1x1xf32>)
// CHECK: %[[XT:.*]] = linalg.generic {indexing_maps = [#[[TO_NHWC]], #[[ID]]]{{.*}} ins(%[[X]] : tensor<1x3x6x6xf32>) outs(%{{.*}} : tensor<1x6x6x3xf32>)
// CHECK: %[[W1T:.*]] = linalg.generic {indexing_maps = [#[[TO_NHWC]], #[[ID]]]{{.*}} ins(%[[W1]] : tensor<4x3x3x3xf32>) outs(%{{.*}} : tensor<4x3x3x3xf32>)
// CHECK: %[[C1:.*]] = call @library_0(%[[XT]], %[[W1T]]) : (tensor<1x6x6x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[NHWC]]]{{.*}} ins(%[[C1]] : tensor<1x4x4x4xf32>)
// CHECK: arith.maximumf
// CHECK: %[[W2F:.*]] = tensor.collapse_shape %[[W2]]
// CHECK: %[[W2T:.*]] = tensor.expand_shape %[[W2F]] {{.*}} into tensor<2x1x1x4xf32>
// CHECK: %[[C2:.*]] = call @library_1(%[[R]], %[[W2T]]) : (tensor<1x4x4x4xf32>, tensor<2x1x1x4xf32>) -> tensor<1x4x4x2xf32>
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[WINDOW]], #{{.*}}, #[[POOL_OUT]]]{{.*}} ins(%[[C2]], %{{.*}} : tensor<1x4x4x2xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<1x2x2x2xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[ID]]]{{.*}} ins(%[[P]] : tensor<1x2x2x2xf32>)
// CHECK: return %[[OUT]]
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
module {
  func.func @library_0(%arg0: tensor<1x3x6x6xf32>, %arg1: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> attributes {mlirc.kernel, mlirc.library = "conv2d", mlirc.library_args = {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x4x4x4xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) outs(%1 : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    return %2 : tensor<1x4x4x4xf32>
  }
  func.func @library_1(%arg0: tensor<1x4x4x4xf32>, %arg1: tensor<2x4x1x1xf32>) -> tensor<1x2x4x4xf32> attributes {mlirc.kernel, mlirc.library = "conv2d", mlirc.library_args = {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x2x4x4xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%arg0, %arg1 : tensor<1x4x4x4xf32>, tensor<2x4x1x1xf32>) outs(%1 : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    return %2 : tensor<1x2x4x4xf32>
  }
  func.func @main(%arg0: tensor<4x3x3x3xf32>, %arg1: tensor<1x3x6x6xf32>, %arg2: tensor<2x4x1x1xf32>) -> tensor<1x2x2x2xf32> attributes {mlirc.entry} {
    %cst = arith.constant 0xFF800000 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = call @library_0(%arg1, %arg0) : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
    %1 = tensor.empty() : tensor<1x4x4x4xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x4x4x4xf32>) outs(%1 : tensor<1x4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.maximumf %in, %cst_0 : f32
      linalg.yield %8 : f32
    } -> tensor<1x4x4x4xf32>
    %3 = call @library_1(%2, %arg2) : (tensor<1x4x4x4xf32>, tensor<2x4x1x1xf32>) -> tensor<1x2x4x4xf32>
    %4 = tensor.empty() : tensor<2x2xf32>
    %5 = tensor.empty() : tensor<1x2x2x2xf32>
    %6 = linalg.fill ins(%cst : f32) outs(%5 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %7 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%3, %4 : tensor<1x2x4x4xf32>, tensor<2x2xf32>) outs(%6 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %7 : tensor<1x2x2x2xf32>
  }
}
