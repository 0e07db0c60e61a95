// RUN: mlirc-opt %s -p mlirc-gpu-lower-to-tt | FileCheck %s

// A scatter kernel (mlirc.in_place: its result buffer already holds x) adds tiles
// of [32 updates, 64 columns] with relaxed atomics: a 2-D grid over the updates
// and the columns, i64 offsets, the row index clamped into the rows (the host
// checked it), the index read through its reshape as flat memory.
// CHECK-LABEL: func.func private @kernel_0(tensor<3001x37xf32>, tensor<2x1000xi64>, tensor<2000x37xf32>) -> tensor<3001x37xf32>
// CHECK-SAME: mlirc.gpu.grid = array<i64: 63, 1, 1>, mlirc.gpu.num_warps = 4 : i64, mlirc.gpu.ttir = "kernel_0_ttir", mlirc.in_place
// CHECK: module @kernel_0_ttir
// CHECK: ^bb0(%[[X:.*]]: !tt.ptr<f32>, %[[I:.*]]: !tt.ptr<i64>, %[[V:.*]]: !tt.ptr<f32>, %[[OUT:.*]]: !tt.ptr<f32>):
// CHECK: "tt.make_range"() {end = 32 : i32, start = 0 : i32}
// CHECK: "tt.make_range"() {end = 64 : i32, start = 0 : i32}
// CHECK: %[[IP:.*]] = "tt.splat"(%[[I]])
// CHECK: %[[ROWS:.*]] = "tt.load"
// CHECK: %[[LO:.*]] = arith.maxsi %[[ROWS]]
// CHECK: arith.minsi %[[LO]]
// CHECK: %[[VP:.*]] = "tt.splat"(%[[V]])
// CHECK: %[[VALUES:.*]] = "tt.load"
// CHECK: %[[OP:.*]] = "tt.splat"(%[[OUT]])
// CHECK: %[[TARGETS:.*]] = "tt.addptr"(%[[OP]]
// CHECK: "tt.atomic_rmw"(%[[TARGETS]], %[[VALUES]], %{{.*}}) {atomic_rmw_op = 5 : i32, scope = 1 : i32, sem = 1 : i32}
func.func @kernel_0(%x: tensor<3001x37xf32>, %i: tensor<2x1000xi64>, %v: tensor<2000x37xf32>) -> tensor<3001x37xf32> attributes {mlirc.in_place, mlirc.kernel} {
  %flat = tensor.collapse_shape %i [[0, 1]] : tensor<2x1000xi64> into tensor<2000xi64>
  %s = "mlirc.scatter_add"(%x, %flat, %v) : (tensor<3001x37xf32>, tensor<2000xi64>, tensor<2000x37xf32>) -> tensor<3001x37xf32>
  return %s : tensor<3001x37xf32>
}

// Integers add with the integer atomic (add, not fadd); an i32 index widens to i64.
// CHECK-LABEL: module @kernel_1_ttir
// CHECK: %[[NARROW:.*]] = "tt.load"{{.*}} -> tensor<8xi32>
// CHECK: arith.extsi %[[NARROW]] : tensor<8xi32> to tensor<8xi64>
// CHECK: "tt.atomic_rmw"{{.*}} {atomic_rmw_op = 4 : i32, scope = 1 : i32, sem = 1 : i32} : (tensor<8x1x!tt.ptr<i32>>
func.func @kernel_1(%x: tensor<4x1xi32>, %i: tensor<5xi32>, %v: tensor<5x1xi32>) -> tensor<4x1xi32> attributes {mlirc.in_place, mlirc.kernel} {
  %s = "mlirc.scatter_add"(%x, %i, %v) : (tensor<4x1xi32>, tensor<5xi32>, tensor<5x1xi32>) -> tensor<4x1xi32>
  return %s : tensor<4x1xi32>
}
