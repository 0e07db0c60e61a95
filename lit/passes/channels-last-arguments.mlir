// RUN: mlirc-opt %s -p mlirc-channels-last,canonicalize,cse | FileCheck %s

// A training backward's arguments: a gradient and a saved activation whose buffers
// are NHWC (frontend/training_layouts.py), each read through the importer's "back to
// NCHW" permute.  Those permutes seed the propagation as a convolution's result does:
// the ReLU backward reads both buffers and writes NHWC through its maps, the
// per-channel sum reads that NHWC value, and the result's permute back into an NHWC
// buffer cancels.  No kernel is left that only transposes.

// CHECK-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<2x5x7x3xf32>, %[[A:[a-z0-9]+]]: tensor<2x5x7x3xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[NHWC]], #[[NHWC]]]{{.*}} ins(%[[G]], %[[A]] : {{.*}}) outs(%{{.*}} : tensor<2x5x7x3xf32>)
// CHECK: arith.select
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[CHAN]]]{{.*}} ins(%[[M]] : tensor<2x5x7x3xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[M]], %[[S]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#to_nchw = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#to_nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
module {
  func.func @main(%grad: tensor<2x5x7x3xf32>, %act: tensor<2x5x7x3xf32>) -> (tensor<2x5x7x3xf32>, tensor<3xf32>) attributes {mlirc.entry} {
    %zero = arith.constant 0.000000e+00 : f32
    %e0 = tensor.empty() : tensor<2x3x5x7xf32>
    %g = linalg.generic {indexing_maps = [#to_nchw, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%grad : tensor<2x5x7x3xf32>) outs(%e0 : tensor<2x3x5x7xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x3x5x7xf32>
    %e1 = tensor.empty() : tensor<2x3x5x7xf32>
    %a = linalg.generic {indexing_maps = [#to_nchw, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%act : tensor<2x5x7x3xf32>) outs(%e1 : tensor<2x3x5x7xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x3x5x7xf32>
    %e2 = tensor.empty() : tensor<2x3x5x7xf32>
    %masked = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %a : tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) outs(%e2 : tensor<2x3x5x7xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %le = arith.cmpf ole, %in_0, %zero : f32
      %s = arith.select %le, %zero, %in : f32
      linalg.yield %s : f32
    } -> tensor<2x3x5x7xf32>
    %e3 = tensor.empty() : tensor<3xf32>
    %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
    %sum = linalg.generic {indexing_maps = [#id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%masked : tensor<2x3x5x7xf32>) outs(%f3 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %add = arith.addf %in, %out : f32
      linalg.yield %add : f32
    } -> tensor<3xf32>
    %e4 = tensor.empty() : tensor<2x5x7x3xf32>
    %buf = linalg.generic {indexing_maps = [#to_nhwc, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%masked : tensor<2x3x5x7xf32>) outs(%e4 : tensor<2x5x7x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x5x7x3xf32>
    return %buf, %sum : tensor<2x5x7x3xf32>, tensor<3xf32>
  }
}
