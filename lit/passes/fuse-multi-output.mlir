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

// Through channels-last's map (mlirc-channels-last keeps a CNN's loops in NCHW order
// and writes NHWC): a training ReLU is returned (saved) and read by its mask for
// the backward; both come out of one generic, written through that one map.
// CHECK-LABEL: func.func @relu_and_mask_channels_last
// CHECK: %[[F:.*]]:2 = linalg.generic {indexing_maps = [#[[NHWC:map[0-9]*]], #[[NHWC]], #[[NHWC]]]
// CHECK: arith.cmpf ole
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i8
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#0, %[[F]]#1
#nchw_to_nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
func.func @relu_and_mask_channels_last(%x: tensor<2x3x5x7xf32>) -> (tensor<2x3x5x7xf32>, tensor<2x3x5x7xi8>) attributes {mlirc.entry} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x3x5x7xf32>
  %relu = linalg.generic {indexing_maps = [#nchw_to_nhwc, #nchw_to_nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x5x7xf32>) outs(%e0 : tensor<2x3x5x7xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x3x5x7xf32>
  %e1 = tensor.empty() : tensor<2x3x5x7xi8>
  %mask = linalg.generic {indexing_maps = [#nchw_to_nhwc, #nchw_to_nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%relu : tensor<2x3x5x7xf32>) outs(%e1 : tensor<2x3x5x7xi8>) {
  ^bb0(%in: f32, %o: i8):
    %le = arith.cmpf ole, %in, %zero : f32
    %m = arith.extui %le : i1 to i8
    linalg.yield %m : i8
  } -> tensor<2x3x5x7xi8>
  return %relu, %mask : tensor<2x3x5x7xf32>, tensor<2x3x5x7xi8>
}

// Not where the consumer writes through another map than the producer (here it
// transposes): one generic's results share their loops' element.
// CHECK-LABEL: func.func @transposing_reader
// CHECK: linalg.generic
// CHECK: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t2 = affine_map<(d0, d1) -> (d1, d0)>
func.func @transposing_reader(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x4xf32>) attributes {mlirc.entry} {
  %e0 = tensor.empty() : tensor<4x6xf32>
  %n = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e0 : tensor<4x6xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.negf %in : f32
    linalg.yield %v : f32
  } -> tensor<4x6xf32>
  %e1 = tensor.empty() : tensor<6x4xf32>
  %t = linalg.generic {indexing_maps = [#id2, #t2], iterator_types = ["parallel", "parallel"]} ins(%n : tensor<4x6xf32>) outs(%e1 : tensor<6x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<6x4xf32>
  return %n, %t : tensor<4x6xf32>, tensor<6x4xf32>
}
