// RUN: mlirc-opt %s -p mlirc-stage-kernels | FileCheck %s

// Fusion then kernel formation on softmax's linalg: sub+exp fuse into one kernel;
// the reductions are roots of their own kernels (unit dims folded away); the entry
// only calls kernels.
// CHECK-LABEL: func.func @kernel_0(%arg0: tensor<3x5xf32>) -> tensor<3xf32> attributes {mlirc.kernel}
// CHECK: arith.maximumf
// CHECK-LABEL: func.func @kernel_1(%arg0: tensor<3x5xf32>, %arg1: tensor<3xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel}
// CHECK: arith.subf
// CHECK-NEXT: math.exp
// CHECK-LABEL: func.func @kernel_2
// CHECK: arith.addf
// CHECK-LABEL: func.func @kernel_3
// CHECK: arith.divf
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[M:.*]] = call @kernel_0(%arg0)
// CHECK-NEXT: %[[E:.*]] = call @kernel_1(%arg0, %[[M]])
// CHECK-NEXT: %[[S:.*]] = call @kernel_2(%[[E]])
// CHECK-NEXT: %[[R:.*]] = call @kernel_3(%[[E]], %[[S]])
// CHECK-NEXT: return %[[R]]
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func @main(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> attributes {mlirc.entry} {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<3x1xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<3x1xf32>) -> tensor<3x1xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<3x5xf32>) outs(%1 : tensor<3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = arith.maximumf %in, %out : f32
      linalg.yield %9 : f32
    } -> tensor<3x1xf32>
    %3 = tensor.empty() : tensor<3x5xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<3x5xf32>, tensor<3x1xf32>) outs(%3 : tensor<3x5xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %9 = arith.subf %in, %in_1 : f32
      linalg.yield %9 : f32
    } -> tensor<3x5xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<3x5xf32>) outs(%3 : tensor<3x5xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = math.exp %in : f32
      linalg.yield %9 : f32
    } -> tensor<3x5xf32>
    %6 = linalg.fill ins(%cst : f32) outs(%0 : tensor<3x1xf32>) -> tensor<3x1xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%5 : tensor<3x5xf32>) outs(%6 : tensor<3x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = arith.addf %in, %out : f32
      linalg.yield %9 : f32
    } -> tensor<3x1xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %7 : tensor<3x5xf32>, tensor<3x1xf32>) outs(%3 : tensor<3x5xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %9 = arith.divf %in, %in_1 : f32
      linalg.yield %9 : f32
    } -> tensor<3x5xf32>
    return %8 : tensor<3x5xf32>
  }
}
