// RUN: mlirc-opt %s -p mlirc-group-kernels | FileCheck %s
// RUN: mlirc-opt %s -p "mlirc-group-kernels{max-arguments=3}" | FileCheck %s --check-prefix=SMALL

// Two parameters' updates and a row sum read only their own tensors: one group,
// called where the last of them was, returning all three members' results.  The
// next call reads the group's result (a new run: alone, so no group); a row group's
// kernel (two reductions) and the library call keep launches of their own.  The
// reshape of the first member's result (a view) moves after the group's call.
// CHECK-LABEL: func.func @group_0
// CHECK-SAME: (%[[P:.*]]: tensor<7x33xf32>, %[[G:.*]]: tensor<7x33xf32>, %[[Q:.*]]: tensor<5xf32>, %[[H:.*]]: tensor<5xf32>)
// CHECK-SAME: attributes {mlirc.group, mlirc.kernel}
// CHECK: %[[A:.*]] = call @update_a(%[[P]], %[[G]])
// CHECK: %[[S:.*]] = call @row_sum(%[[P]])
// CHECK: %[[B:.*]] = call @update_b(%[[Q]], %[[H]])
// CHECK: return %[[A]], %[[S]], %[[B]]
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]]:3 = call @group_0(%arg0, %arg1, %arg2, %arg3)
// CHECK: %[[V:.*]] = tensor.collapse_shape %[[R]]#0
// CHECK: %[[T:.*]] = call @scale(%[[R]]#2)
// CHECK: call @mm(
// CHECK: %[[N:.*]] = call @rows_0(%arg1)
// CHECK: return %[[V]], %[[T]], %[[R]]#1, %[[N]]
// With room for one update's three buffers only, nothing groups.
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
  // Its fill generalized, as linalg-generalize-named-ops leaves it before this pass.
  func.func @row_sum(%x: tensor<7x33xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<7xf32>
    %f = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, #id1], iterator_types = ["parallel"]} ins(%z : f32) outs(%e : tensor<7xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<7xf32>
    %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x33xf32>) outs(%f : tensor<7xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<7xf32>
    return %r : tensor<7xf32>
  }
  func.func @rows_0(%x: tensor<7x33xf32>) -> tensor<7xf32> attributes {mlirc.gpu.rows = 1 : i64, mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<7xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
    %m = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x33xf32>) outs(%f : tensor<7xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.maximumf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<7xf32>
    %r = linalg.generic {indexing_maps = [#id2, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<7x33xf32>, tensor<7xf32>) outs(%f : tensor<7xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %s = arith.addf %d, %o : f32
      linalg.yield %s : f32
    } -> tensor<7xf32>
    return %r : tensor<7xf32>
  }
  func.func private @mm(tensor<7x33xf32>, tensor<33x5xf32>) -> tensor<7x5xf32> attributes {mlirc.kernel, mlirc.library = "mm"}
  func.func @main(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>, %q: tensor<5xf32>, %h: tensor<5xf32>, %w: tensor<33x5xf32>) -> (tensor<231xf32>, tensor<5xf32>, tensor<7xf32>, tensor<7xf32>) attributes {mlirc.entry} {
    %a = call @update_a(%p, %g) : (tensor<7x33xf32>, tensor<7x33xf32>) -> tensor<7x33xf32>
    %av = tensor.collapse_shape %a [[0, 1]] : tensor<7x33xf32> into tensor<231xf32>
    %s = call @row_sum(%p) : (tensor<7x33xf32>) -> tensor<7xf32>
    %b = call @update_b(%q, %h) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
    %t = call @scale(%b) : (tensor<5xf32>) -> tensor<5xf32>
    %m = call @mm(%a, %w) : (tensor<7x33xf32>, tensor<33x5xf32>) -> tensor<7x5xf32>
    %n = call @rows_0(%g) : (tensor<7x33xf32>) -> tensor<7xf32>
    return %av, %t, %s, %n : tensor<231xf32>, tensor<5xf32>, tensor<7xf32>, tensor<7xf32>
  }
}
