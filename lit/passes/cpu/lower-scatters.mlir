// RUN: mlirc-opt %s -p mlirc-cpu-lower-scatters | FileCheck %s

// A scatter kernel becomes a function on its buffers (its arguments, then its
// result's, which already holds x): a parallel loop over chunks of 64 columns,
// each running every update in order -- a row index clamped into the rows (the
// host checked it) -- and adding the update's columns of that chunk.  Arguments
// read through reshapes are typed as the scatter reads them (the same memory).
// CHECK-LABEL: func.func @kernel_0
// CHECK-SAME: (%[[X:.*]]: memref<9x100xf32>, %[[I:.*]]: memref<6xi64>, %[[V:.*]]: memref<6x100xf32>, %[[OUT:.*]]: memref<9x100xf32>)
// CHECK-SAME: attributes {mlirc.in_place, mlirc.kernel}
// CHECK: scf.for %[[C:.*]] = %c0 to %c2 step %c1 {
// CHECK: %[[FIRST:.*]] = arith.muli %[[C]], %c64
// CHECK: %[[LAST:.*]] = arith.minsi %{{.*}}, %c100
// CHECK: scf.for %[[K:.*]] = %c0 to %c6 step %c1 {
// CHECK: %[[RAW:.*]] = memref.load %[[I]][%[[K]]]
// CHECK: %[[ROW:.*]] = arith.index_cast %[[RAW]]
// CHECK: %[[LO:.*]] = arith.maxsi %[[ROW]], %c0
// CHECK: %[[R:.*]] = arith.minsi %[[LO]], %c8
// CHECK: scf.for %[[J:.*]] = %[[FIRST]] to %[[LAST]] step %c1 {
// CHECK: %[[A:.*]] = memref.load %[[OUT]][%[[R]], %[[J]]]
// CHECK: %[[B:.*]] = memref.load %[[V]][%[[K]], %[[J]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[A]], %[[B]]
// CHECK: memref.store %[[SUM]], %[[OUT]][%[[R]], %[[J]]]
// CHECK: } {mlirc.parallel_loop}
func.func @kernel_0(%x: tensor<9x100xf32>, %i: tensor<2x3xi64>, %v: tensor<6x100xf32>) -> tensor<9x100xf32> attributes {mlirc.in_place, mlirc.kernel} {
  %flat = tensor.collapse_shape %i [[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
  %s = "mlirc.scatter_add"(%x, %flat, %v) : (tensor<9x100xf32>, tensor<6xi64>, tensor<6x100xf32>) -> tensor<9x100xf32>
  return %s : tensor<9x100xf32>
}

// Half types add in f32 and round after each update (c10::BFloat16's +=);
// integers add as integers.
// CHECK-LABEL: func.func @kernel_1
// CHECK: %[[WA:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[WB:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[WS:.*]] = arith.addf %[[WA]], %[[WB]] : f32
// CHECK: arith.truncf %[[WS]] : f32 to bf16
func.func @kernel_1(%x: tensor<4x3xbf16>, %i: tensor<5xi64>, %v: tensor<5x3xbf16>) -> tensor<4x3xbf16> attributes {mlirc.in_place, mlirc.kernel} {
  %s = "mlirc.scatter_add"(%x, %i, %v) : (tensor<4x3xbf16>, tensor<5xi64>, tensor<5x3xbf16>) -> tensor<4x3xbf16>
  return %s : tensor<4x3xbf16>
}

// CHECK-LABEL: func.func @kernel_2
// CHECK: arith.addi %{{.*}}, %{{.*}} : i32
func.func @kernel_2(%x: tensor<4x1xi32>, %i: tensor<5xi32>, %v: tensor<5x1xi32>) -> tensor<4x1xi32> attributes {mlirc.in_place, mlirc.kernel} {
  %s = "mlirc.scatter_add"(%x, %i, %v) : (tensor<4x1xi32>, tensor<5xi32>, tensor<5x1xi32>) -> tensor<4x1xi32>
  return %s : tensor<4x1xi32>
}
