// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise,mlirc-fuse-multi-output | FileCheck %s

// Momentum's step: the new momentum is returned (it updates the optimizer's state)
// and read by the parameter's update.  Upstream fusion leaves it a generic of its
// own; here it joins its consumer, which yields both: one pass over memory.
// CHECK-LABEL: func.func @momentum_step
// CHECK-SAME: (%[[P:.*]]: tensor<7x33xf32>, %[[G:.*]]: tensor<7x33xf32>, %[[M:.*]]: tensor<7x33xf32>)
// CHECK: %[[F:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%[[M]], %[[G]], %[[P]] : tensor<7x33xf32>, tensor<7x33xf32>, tensor<7x33xf32>)
// CHECK: ^bb0(%[[MV:.*]]: f32, %[[GV:.*]]: f32, %[[PV:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK: %[[DECAY:.*]] = arith.mulf %[[MV]]
// CHECK: %[[NEWM:.*]] = arith.addf %[[DECAY]], %[[GV]]
// CHECK: %[[STEP:.*]] = arith.mulf %[[NEWM]]
// CHECK: %[[NEWP:.*]] = arith.subf %[[PV]], %[[STEP]]
// CHECK: linalg.yield %[[NEWM]], %[[NEWP]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#1, %[[F]]#0
func.func @momentum_step(%p: tensor<7x33xf32>, %g: tensor<7x33xf32>, %m: tensor<7x33xf32>) -> (tensor<7x33xf32>, tensor<7x33xf32>) attributes {mlirc.entry} {
  %decay = "mlirc.constant"() {value = dense<0.9> : tensor<f32>} : () -> tensor<f32>
  %lr = "mlirc.constant"() {value = dense<0.01> : tensor<f32>} : () -> tensor<f32>
  %md = "mlirc.mul"(%m, %decay) : (tensor<7x33xf32>, tensor<f32>) -> tensor<7x33xf32>
  %m2 = "mlirc.add"(%md, %g) : (tensor<7x33xf32>, tensor<7x33xf32>) -> tensor<7x33xf32>
  %s = "mlirc.mul"(%m2, %lr) : (tensor<7x33xf32>, tensor<f32>) -> tensor<7x33xf32>
  %p2 = "mlirc.sub"(%p, %s) : (tensor<7x33xf32>, tensor<7x33xf32>) -> tensor<7x33xf32>
  return %p2, %m2 : tensor<7x33xf32>, tensor<7x33xf32>
}

// Not where the consumer reads the value at other elements (a broadcast row: the
// value would be recomputed per row), nor into a reduction.
// CHECK-LABEL: func.func @other_loops
// CHECK: %[[ROW:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<33xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ROW]] : tensor<7x33xf32>, tensor<33xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
func.func @other_loops(%x: tensor<7x33xf32>, %b: tensor<33xf32>) -> (tensor<33xf32>, tensor<7x33xf32>, tensor<7xf32>) attributes {mlirc.entry} {
  %e = "mlirc.exp"(%b) : (tensor<33xf32>) -> tensor<33xf32>
  %y = "mlirc.add"(%x, %e) : (tensor<7x33xf32>, tensor<33xf32>) -> tensor<7x33xf32>
  %s = "mlirc.reduce_sum"(%y) {dims = array<i64: 1>, keepdim = false} : (tensor<7x33xf32>) -> tensor<7xf32>
  return %e, %y, %s : tensor<33xf32>, tensor<7x33xf32>, tensor<7xf32>
}
