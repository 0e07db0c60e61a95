// RUN: mlirc-opt %s -p mlirc-stage-cpu-layout | FileCheck %s

// A narrow linear layer (4 outputs: a classifier head) is not a library call on the
// CPU: the stage turns the outlined mm into a contraction in the entry, which the
// kernels stage can then fuse with its producers and the softmax after it.
// CHECK-NOT: mlirc.library
// CHECK-LABEL: func.func @main
// CHECK: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[W:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT: arith.addf %[[ACC]], %[[P]] : f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: call @library
#map = affine_map<(d0, d1) -> (d1, d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d0)>
#map3 = affine_map<(d0, d1) -> (d0, 0)>
module attributes {mlirc.target = "cpu"} {
  func.func @library_0(%arg0: tensor<3x8xf32>, %arg1: tensor<8x4xf32>) -> tensor<3x4xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<3x4xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<3x4xf32>) -> tensor<3x4xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<3x8xf32>, tensor<8x4xf32>) outs(%1 : tensor<3x4xf32>) -> tensor<3x4xf32>
    return %2 : tensor<3x4xf32>
  }
  func.func @main(%arg0: tensor<3x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<3x4xf32> attributes {mlirc.entry, mlirc.results_as_eager = [{shape = array<i64: 3, 4>, strides = array<i64: 4, 1>}]} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<8x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<4x8xf32>) outs(%0 : tensor<8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8x4xf32>
    %2 = call @library_0(%arg0, %1) : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %3 = tensor.empty() : tensor<3xf32>
    %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<3xf32>) -> tensor<3xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%2 : tensor<3x4xf32>) outs(%4 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.maximumf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<3xf32>
    %expanded = tensor.expand_shape %5 [[0, 1]] output_shape [3, 1] : tensor<3xf32> into tensor<3x1xf32>
    %6 = tensor.empty() : tensor<3x4xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel"]} ins(%2, %expanded : tensor<3x4xf32>, tensor<3x1xf32>) outs(%6 : tensor<3x4xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.subf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<3x4xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<3x4xf32>) outs(%6 : tensor<3x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = math.exp %in : f32
      linalg.yield %12 : f32
    } -> tensor<3x4xf32>
    %9 = linalg.fill ins(%cst : f32) outs(%3 : tensor<3xf32>) -> tensor<3xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["parallel", "reduction"]} ins(%8 : tensor<3x4xf32>) outs(%9 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.addf %in, %out : f32
      linalg.yield %12 : f32
    } -> tensor<3xf32>
    %expanded_1 = tensor.expand_shape %10 [[0, 1]] output_shape [3, 1] : tensor<3xf32> into tensor<3x1xf32>
    %11 = linalg.generic {indexing_maps = [#map1, #map3, #map1], iterator_types = ["parallel", "parallel"]} ins(%8, %expanded_1 : tensor<3x4xf32>, tensor<3x1xf32>) outs(%6 : tensor<3x4xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %12 = arith.divf %in, %in_2 : f32
      linalg.yield %12 : f32
    } -> tensor<3x4xf32>
    return %11 : tensor<3x4xf32>
  }
}
