// RUN: mlirc-opt %s -p mlirc-stage-kernels | FileCheck %s

// A cross-entropy's backward (its nll_loss scatter of -1/n at each row's target,
// lowered as a one-hot compare, the index of the writer and a gather of the source
// at that index): the source has one column, so the gather reads index 0 whatever
// the writer, and the writer's index tensor -- a full rows x classes i64 -- is read
// by nothing once mlirc-fuse-gathered-producers has folded the clamp.  Fusion runs
// again after the passes that leave such dead inputs: the gradient is one kernel
// reading the targets, and no kernel writes a rows x classes index or mask.
// CHECK-NOT: tensor<6x7xi64>
// CHECK-NOT: -> tensor<6x7xi8>
// CHECK-LABEL: func.func @main
// CHECK-NOT: tensor<6x7xi64>
#map = affine_map<() -> ()>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> ()>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
#map5 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map6 = affine_map<(d0, d1, d2) -> ()>
#map7 = affine_map<(d0, d1) -> (d0, 0)>
#map8 = affine_map<(d0, d1) -> (d0)>
module attributes {mlirc.target = "cpu"} {
  func.func @main(%arg0: tensor<6xi64>, %arg1: tensor<6x7xf32>, %arg2: tensor<f32>, %arg3: tensor<f32>) -> (tensor<6x7xf32>, tensor<i8>) attributes {mlirc.checks = ["RuntimeError: index out of bounds for dimension 1 with size 7 (mlirc: aten.nll_loss_backward, an index outside [0, 7))"], mlirc.entry, mlirc.results_as_eager = [{shape = array<i64: 6, 7>, strides = array<i64: 7, 1>}]} {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c-9223372036854775808_i64 = arith.constant -9223372036854775808 : i64
    %cst_0 = arith.constant dense<-1> : tensor<i64>
    %c0_i8 = arith.constant 0 : i8
    %cst_1 = arith.constant dense<-1.000000e+00> : tensor<f32>
    %c1_i8 = arith.constant 1 : i8
    %cst_2 = arith.constant dense<7> : tensor<i64>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_4 = arith.constant dense<0> : tensor<i64>
    %cst_5 = arith.constant dense<-100> : tensor<i64>
    %0 = tensor.empty() : tensor<f32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = []} ins(%arg3, %arg2 : tensor<f32>, tensor<f32>) outs(%0 : tensor<f32>) {
    ^bb0(%in: f32, %in_11: f32, %out: f32):
      %44 = arith.divf %in, %in_11 : f32
      linalg.yield %44 : f32
    } -> tensor<f32>
    %expanded = tensor.expand_shape %arg0 [[0, 1]] output_shape [6, 1] : tensor<6xi64> into tensor<6x1xi64>
    %2 = tensor.empty() : tensor<6x1xi8>
    %3 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded, %cst_5 : tensor<6x1xi64>, tensor<i64>) outs(%2 : tensor<6x1xi8>) {
    ^bb0(%in: i64, %in_11: i64, %out: i8):
      %44 = arith.cmpi ne, %in, %in_11 : i64
      %45 = arith.extui %44 : i1 to i8
      linalg.yield %45 : i8
    } -> tensor<6x1xi8>
    %4 = tensor.empty() : tensor<6x1xi64>
    %5 = linalg.generic {indexing_maps = [#map1, #map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %expanded, %cst_4 : tensor<6x1xi8>, tensor<6x1xi64>, tensor<i64>) outs(%4 : tensor<6x1xi64>) {
    ^bb0(%in: i8, %in_11: i64, %in_12: i64, %out: i64):
      %44 = arith.trunci %in : i8 to i1
      %45 = arith.select %44, %in_11, %in_12 : i64
      linalg.yield %45 : i64
    } -> tensor<6x1xi64>
    %6 = tensor.empty() : tensor<6x7xf32>
    %7 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_3 : tensor<f32>) outs(%6 : tensor<6x7xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<6x7xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%5, %cst_4 : tensor<6x1xi64>, tensor<i64>) outs(%2 : tensor<6x1xi8>) {
    ^bb0(%in: i64, %in_11: i64, %out: i8):
      %44 = arith.cmpi sge, %in, %in_11 : i64
      %45 = arith.extui %44 : i1 to i8
      linalg.yield %45 : i8
    } -> tensor<6x1xi8>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%5, %cst_2 : tensor<6x1xi64>, tensor<i64>) outs(%2 : tensor<6x1xi8>) {
    ^bb0(%in: i64, %in_11: i64, %out: i8):
      %44 = arith.cmpi slt, %in, %in_11 : i64
      %45 = arith.extui %44 : i1 to i8
      linalg.yield %45 : i8
    } -> tensor<6x1xi8>
    %10 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%8, %9 : tensor<6x1xi8>, tensor<6x1xi8>) outs(%2 : tensor<6x1xi8>) {
    ^bb0(%in: i8, %in_11: i8, %out: i8):
      %44 = arith.trunci %in : i8 to i1
      %45 = arith.trunci %in_11 : i8 to i1
      %46 = arith.andi %44, %45 : i1
      %47 = arith.extui %46 : i1 to i8
      linalg.yield %47 : i8
    } -> tensor<6x1xi8>
    %11 = tensor.empty() : tensor<i8>
    %12 = linalg.fill ins(%c1_i8 : i8) outs(%11 : tensor<i8>) -> tensor<i8>
    %13 = linalg.generic {indexing_maps = [#map1, #map2], iterator_types = ["reduction", "reduction"]} ins(%10 : tensor<6x1xi8>) outs(%12 : tensor<i8>) {
    ^bb0(%in: i8, %out: i8):
      %44 = arith.andi %in, %out : i8
      linalg.yield %44 : i8
    } -> tensor<i8>
    %14 = tensor.empty() : tensor<6x1xf32>
    %15 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%cst_1 : tensor<f32>) outs(%14 : tensor<6x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<6x1xf32>
    %expanded_6 = tensor.expand_shape %5 [[0], [1, 2]] output_shape [6, 1, 1] : tensor<6x1xi64> into tensor<6x1x1xi64>
    %16 = tensor.empty() : tensor<6x7x1xi64>
    %17 = linalg.generic {indexing_maps = [#map3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%16 : tensor<6x7x1xi64>) {
    ^bb0(%out: i64):
      %44 = linalg.index 1 : index
      %45 = arith.index_cast %44 : index to i64
      linalg.yield %45 : i64
    } -> tensor<6x7x1xi64>
    %18 = tensor.empty() : tensor<6x7x1xi8>
    %19 = linalg.generic {indexing_maps = [#map4, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_6, %17 : tensor<6x1x1xi64>, tensor<6x7x1xi64>) outs(%18 : tensor<6x7x1xi8>) {
    ^bb0(%in: i64, %in_11: i64, %out: i8):
      %44 = arith.cmpi eq, %in, %in_11 : i64
      %45 = arith.extui %44 : i1 to i8
      linalg.yield %45 : i8
    } -> tensor<6x7x1xi8>
    %20 = tensor.empty() : tensor<6x7xi8>
    %21 = linalg.fill ins(%c0_i8 : i8) outs(%20 : tensor<6x7xi8>) -> tensor<6x7xi8>
    %22 = linalg.generic {indexing_maps = [#map3, #map5], iterator_types = ["parallel", "parallel", "reduction"]} ins(%19 : tensor<6x7x1xi8>) outs(%21 : tensor<6x7xi8>) {
    ^bb0(%in: i8, %out: i8):
      %44 = arith.ori %in, %out : i8
      linalg.yield %44 : i8
    } -> tensor<6x7xi8>
    %23 = linalg.generic {indexing_maps = [#map3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%16 : tensor<6x7x1xi64>) {
    ^bb0(%out: i64):
      linalg.yield %c0_i64 : i64
    } -> tensor<6x7x1xi64>
    %24 = linalg.generic {indexing_maps = [#map3, #map3, #map6, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19, %23, %cst_0 : tensor<6x7x1xi8>, tensor<6x7x1xi64>, tensor<i64>) outs(%16 : tensor<6x7x1xi64>) {
    ^bb0(%in: i8, %in_11: i64, %in_12: i64, %out: i64):
      %44 = arith.trunci %in : i8 to i1
      %45 = arith.select %44, %in_11, %in_12 : i64
      linalg.yield %45 : i64
    } -> tensor<6x7x1xi64>
    %25 = tensor.empty() : tensor<6x7xi64>
    %26 = linalg.fill ins(%c-9223372036854775808_i64 : i64) outs(%25 : tensor<6x7xi64>) -> tensor<6x7xi64>
    %27 = linalg.generic {indexing_maps = [#map3, #map5], iterator_types = ["parallel", "parallel", "reduction"]} ins(%24 : tensor<6x7x1xi64>) outs(%26 : tensor<6x7xi64>) {
    ^bb0(%in: i64, %out: i64):
      %44 = arith.maxsi %in, %out : i64
      linalg.yield %44 : i64
    } -> tensor<6x7xi64>
    %28 = linalg.generic {indexing_maps = [#map1, #map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%22, %27, %cst_4 : tensor<6x7xi8>, tensor<6x7xi64>, tensor<i64>) outs(%25 : tensor<6x7xi64>) {
    ^bb0(%in: i8, %in_11: i64, %in_12: i64, %out: i64):
      %44 = arith.trunci %in : i8 to i1
      %45 = arith.select %44, %in_11, %in_12 : i64
      linalg.yield %45 : i64
    } -> tensor<6x7xi64>
    %29 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%28 : tensor<6x7xi64>) outs(%6 : tensor<6x7xf32>) {
    ^bb0(%in: i64, %out: f32):
      %44 = linalg.index 0 : index
      %45 = arith.index_cast %in : i64 to index
      %46 = arith.maxsi %45, %c0 : index
      %47 = arith.minsi %46, %c0 : index
      %extracted = tensor.extract %15[%44, %47] : tensor<6x1xf32>
      linalg.yield %extracted : f32
    } -> tensor<6x7xf32>
    %30 = linalg.generic {indexing_maps = [#map1, #map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%22, %29, %7 : tensor<6x7xi8>, tensor<6x7xf32>, tensor<6x7xf32>) outs(%6 : tensor<6x7xf32>) {
    ^bb0(%in: i8, %in_11: f32, %in_12: f32, %out: f32):
      %44 = arith.trunci %in : i8 to i1
      %45 = arith.select %44, %in_11, %in_12 : f32
      linalg.yield %45 : f32
    } -> tensor<6x7xf32>
    %31 = linalg.generic {indexing_maps = [#map1, #map2, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %1, %cst_3 : tensor<6x1xi8>, tensor<f32>, tensor<f32>) outs(%14 : tensor<6x1xf32>) {
    ^bb0(%in: i8, %in_11: f32, %in_12: f32, %out: f32):
      %44 = arith.trunci %in : i8 to i1
      %45 = arith.select %44, %in_11, %in_12 : f32
      linalg.yield %45 : f32
    } -> tensor<6x1xf32>
    %32 = linalg.generic {indexing_maps = [#map1, #map7, #map1], iterator_types = ["parallel", "parallel"]} ins(%30, %31 : tensor<6x7xf32>, tensor<6x1xf32>) outs(%6 : tensor<6x7xf32>) {
    ^bb0(%in: f32, %in_11: f32, %out: f32):
      %44 = arith.mulf %in, %in_11 : f32
      linalg.yield %44 : f32
    } -> tensor<6x7xf32>
    return %32, %13 : tensor<6x7xf32>, tensor<i8>
  }
}
