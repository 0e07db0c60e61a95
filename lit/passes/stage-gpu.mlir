// RUN: mlirc-opt %s -p mlirc-stage-gpu-fusion,mlirc-stage-gpu | FileCheck %s

// The GPU stages on softmax's kernels: the four become one row group (whole rows in
// registers: a max and a sum as tt.reduce, one store), declared with its launch, its
// TTIR in a nested module; the entry still calls it.
// CHECK-LABEL: func.func private @rows_0(tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK-SAME: mlirc.gpu.grid = array<i64: 1, 1, 1>
// CHECK-SAME: mlirc.gpu.ttir = "rows_0_ttir"
// CHECK-LABEL: func.func @main
// CHECK: call @rows_0(%arg0)
// CHECK-LABEL: module @rows_0_ttir
// CHECK: "tt.func"()
// CHECK-COUNT-1: "tt.load"
// CHECK: "tt.reduce"
// CHECK: arith.maximumf
// CHECK: "tt.reduce"
// CHECK: arith.addf
// CHECK: "tt.store"
// CHECK-NOT: "tt.store"
// CHECK: "tt.return"()
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module attributes {mlirc.target = "cuda"} {
  func.func @kernel_0(%arg0: tensor<3x5xf32>) -> tensor<3xf32> attributes {mlirc.kernel} {
    %cst = arith.constant 0xFF800000 : f32
    %0 = tensor.empty() : tensor<3xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<3xf32>) -> tensor<3xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<3x5xf32>) outs(%1 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.maximumf %in, %out : f32
      linalg.yield %3 : f32
    } -> tensor<3xf32>
    return %2 : tensor<3xf32>
  }
  func.func @kernel_1(%arg0: tensor<3x5xf32>, %arg1: tensor<3xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel} {
    %0 = tensor.empty() : tensor<3x5xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<3x5xf32>, tensor<3xf32>) outs(%0 : tensor<3x5xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.subf %in, %in_0 : f32
      %3 = math.exp %2 : f32
      linalg.yield %3 : f32
    } -> tensor<3x5xf32>
    return %1 : tensor<3x5xf32>
  }
  func.func @kernel_2(%arg0: tensor<3x5xf32>) -> tensor<3xf32> attributes {mlirc.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<3xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<3xf32>) -> tensor<3xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<3x5xf32>) outs(%1 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.addf %in, %out : f32
      linalg.yield %3 : f32
    } -> tensor<3xf32>
    return %2 : tensor<3xf32>
  }
  func.func @kernel_3(%arg0: tensor<3x5xf32>, %arg1: tensor<3xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel} {
    %0 = tensor.empty() : tensor<3x5xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<3x5xf32>, tensor<3xf32>) outs(%0 : tensor<3x5xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %2 = arith.divf %in, %in_0 : f32
      linalg.yield %2 : f32
    } -> tensor<3x5xf32>
    return %1 : tensor<3x5xf32>
  }
  func.func @main(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> attributes {mlirc.entry, mlirc.results_as_eager = [{shape = array<i64: 3, 5>, strides = array<i64: 5, 1>}]} {
    %0 = call @kernel_0(%arg0) : (tensor<3x5xf32>) -> tensor<3xf32>
    %1 = call @kernel_1(%arg0, %0) : (tensor<3x5xf32>, tensor<3xf32>) -> tensor<3x5xf32>
    %2 = call @kernel_2(%1) : (tensor<3x5xf32>) -> tensor<3xf32>
    %3 = call @kernel_3(%1, %2) : (tensor<3x5xf32>, tensor<3xf32>) -> tensor<3x5xf32>
    return %3 : tensor<3x5xf32>
  }
}
