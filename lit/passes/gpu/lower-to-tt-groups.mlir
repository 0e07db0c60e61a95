// RUN: mlirc-opt %s -p mlirc-gpu-lower-to-tt | FileCheck %s

// A group (mlirc-group-kernels) becomes one tt.func: its grid is the members' grids
// end to end (1 program for 7x33, 3 of 1024 elements for 3001), its warps the most
// any member asked; program 0 runs the first member (its one program: id 0),
// programs 1 to 3 the second, as its programs 0 to 2.  The members' declarations
// and TTIR modules are gone.
// CHECK-LABEL: func.func private @group_0
// CHECK-SAME: mlirc.gpu.grid = array<i64: 4, 1, 1>
// CHECK-SAME: mlirc.gpu.num_warps = 4
// CHECK-SAME: mlirc.gpu.ttir = "group_0_ttir"
// CHECK-NOT: func.func private @update_a
// CHECK-NOT: func.func private @update_b
// CHECK-LABEL: func.func @main
// CHECK: call @group_0(%arg0, %arg1, %arg2, %arg3)
// CHECK-NOT: module @update_
// CHECK-LABEL: module @group_0_ttir
// CHECK: ^bb0(%[[P:.*]]: !tt.ptr<f32>, %[[G:.*]]: !tt.ptr<f32>, %[[Q:.*]]: !tt.ptr<f32>, %[[H:.*]]: !tt.ptr<f32>, %[[A:.*]]: !tt.ptr<f32>, %[[B:.*]]: !tt.ptr<f32>):
// CHECK: %[[PID:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK-NOT: tt.get_program_id
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %[[PID]], %c1_i32
// CHECK: scf.if %[[FIRST]] {
// CHECK: arith.muli %c0_i32, %c256_i32
// CHECK: "tt.splat"(%[[P]])
// CHECK: "tt.splat"(%[[G]])
// CHECK: "tt.splat"(%[[A]])
// CHECK: "tt.store"
// CHECK: arith.cmpi slt, %[[PID]], %c4_i32
// CHECK: arith.cmpi sge, %[[PID]], %c1_i32
// CHECK: %[[SECOND:.*]] = arith.andi
// CHECK: scf.if %[[SECOND]] {
// CHECK: %[[LOCAL:.*]] = arith.subi %[[PID]], %c1_i32
// CHECK: arith.muli %[[LOCAL]], %c1024_i32
// CHECK: "tt.splat"(%[[Q]])
// CHECK: "tt.splat"(%[[H]])
// CHECK: "tt.splat"(%[[B]])
// CHECK: "tt.store"
// CHECK: "tt.return"
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
module attributes {mlirc.target = "cuda"} {
  func.func @group_0(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>, %q: tensor<3001xf32>, %h: tensor<3001xf32>) -> (tensor<7x33xf32>, tensor<3001xf32>) attributes {mlirc.group, mlirc.kernel} {
    %a = call @update_a(%p, %g) : (tensor<7x33xf32>, tensor<7x33xf32>) -> tensor<7x33xf32>
    %b = call @update_b(%q, %h) : (tensor<3001xf32>, tensor<3001xf32>) -> tensor<3001xf32>
    return %a, %b : tensor<7x33xf32>, tensor<3001xf32>
  }
  func.func @update_a(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<7x33xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%p, %g : tensor<7x33xf32>, tensor<7x33xf32>) outs(%e : tensor<7x33xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.subf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<7x33xf32>
    return %r : tensor<7x33xf32>
  }
  func.func @update_b(%p: tensor<3001xf32>, %g: tensor<3001xf32>) -> tensor<3001xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<3001xf32>
    %r = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%p, %g : tensor<3001xf32>, tensor<3001xf32>) outs(%e : tensor<3001xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.subf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<3001xf32>
    return %r : tensor<3001xf32>
  }
  func.func @main(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>, %q: tensor<3001xf32>, %h: tensor<3001xf32>) -> (tensor<7x33xf32>, tensor<3001xf32>) attributes {mlirc.entry} {
    %r:2 = call @group_0(%p, %g, %q, %h) : (tensor<7x33xf32>, tensor<7x33xf32>, tensor<3001xf32>, tensor<3001xf32>) -> (tensor<7x33xf32>, tensor<3001xf32>)
    return %r#0, %r#1 : tensor<7x33xf32>, tensor<3001xf32>
  }
}
