// RUN: mlirc-opt %s -p mlirc-group-kernels | FileCheck %s
// RUN: mlirc-opt %s -p "mlirc-group-kernels{max-arguments=5}" | FileCheck %s --check-prefix=SMALL

// Two parameters' updates read only their own tensors: one group, called where the
// second was, returning both members' results.  The third call reads the group's
// result (a new run: alone, so no group), the reduction is not elementwise and the
// library call is not generated: both stay calls of their own.  The reshape of the
// first member's result (a view) moves after the group's call.
// CHECK-LABEL: func.func @group_0
// CHECK-SAME: (%[[P:.*]]: tensor<7x33xf32>, %[[G:.*]]: tensor<7x33xf32>, %[[Q:.*]]: tensor<5xf32>, %[[H:.*]]: tensor<5xf32>)
// CHECK-SAME: attributes {mlirc.group, mlirc.kernel}
// CHECK: %[[A:.*]] = call @update_a(%[[P]], %[[G]])
// CHECK: %[[B:.*]] = call @update_b(%[[Q]], %[[H]])
// CHECK: return %[[A]], %[[B]]
// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = call @row_sum(
// CHECK: %[[R:.*]]:2 = call @group_0(%arg0, %arg1, %arg2, %arg3)
// CHECK: %[[V:.*]] = tensor.collapse_shape %[[R]]#0
// CHECK: %[[T:.*]] = call @scale(%[[R]]#1)
// CHECK: call @mm(
// CHECK: return %[[V]], %[[T]], %[[S]]
// With room for one member's four buffers only, nothing groups.
// SMALL-NOT: mlirc.group
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
module attributes {mlirc.target = "cuda"} {
  func.func @update_a(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<7x33xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p, %g : tensor<7x33xf32>, tensor<7x33xf32>) outs(%e : tensor<7x33xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.subf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<7x33xf32>
    return %r : tensor<7x33xf32>
  }
  func.func @update_b(%p: tensor<5xf32>, %g: tensor<5xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<5xf32>
    %r = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%p, %g : tensor<5xf32>, tensor<5xf32>) outs(%e : tensor<5xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.subf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<5xf32>
    return %r : tensor<5xf32>
  }
  func.func @scale(%x: tensor<5xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
    %c = arith.constant 2.0 : f32
    %e = tensor.empty() : tensor<5xf32>
    %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<5xf32>) outs(%e : tensor<5xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<5xf32>
    return %r : tensor<5xf32>
  }
  func.func @row_sum(%x: tensor<7x33xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<7xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
    %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x33xf32>) outs(%f : tensor<7xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<7xf32>
    return %r : tensor<7xf32>
  }
  func.func private @mm(tensor<7x33xf32>, tensor<33x5xf32>) -> tensor<7x5xf32> attributes {mlirc.kernel, mlirc.library = "mm"}
  func.func @main(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>, %q: tensor<5xf32>, %h: tensor<5xf32>, %w: tensor<33x5xf32>) -> (tensor<231xf32>, tensor<5xf32>, tensor<7xf32>) attributes {mlirc.entry} {
    %a = call @update_a(%p, %g) : (tensor<7x33xf32>, tensor<7x33xf32>) -> tensor<7x33xf32>
    %av = tensor.collapse_shape %a [[0, 1]] : tensor<7x33xf32> into tensor<231xf32>
    %s = call @row_sum(%p) : (tensor<7x33xf32>) -> tensor<7xf32>
    %b = call @update_b(%q, %h) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
    %t = call @scale(%b) : (tensor<5xf32>) -> tensor<5xf32>
    %m = call @mm(%a, %w) : (tensor<7x33xf32>, tensor<33x5xf32>) -> tensor<7x5xf32>
    return %av, %t, %s : tensor<231xf32>, tensor<5xf32>, tensor<7xf32>
  }
}
