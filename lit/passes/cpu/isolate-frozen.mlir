// RUN: mlirc-opt %s -p mlirc-cpu-isolate-frozen | FileCheck %s

// A batch norm after a convolution, in inference: %var and %gamma (arguments 1 and
// 2) are frozen.  The per-channel factor rsqrt(var + eps) * gamma reads only them and
// constants: its last op, which the normalization reads, becomes a kernel of its own
// (fusion would recompute it for every element of the activation); the ops before it
// stay its producers, to be kernels of their own.  The broadcast of %gamma to the
// activation's shape (larger than its input) is left to fusion, and so is the
// transpose of %w (pure data movement: a reader folds it into its indexing map) and
// everything that reads the activation.
#id = affine_map<(d0) -> (d0)>
#nhwc = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ch = affine_map<(d0, d1, d2) -> (d2)>
#scalar = affine_map<(d0) -> ()>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#hw = affine_map<(d0, d1, d2) -> (d1, d2)>

// CHECK-LABEL: func.func @frozen_0(
// CHECK-SAME: %{{.*}}: tensor<5xf32>, %{{.*}}: tensor<5xf32>) -> tensor<5xf32>
// CHECK-SAME: mlirc.kernel
// CHECK: arith.mulf
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x4x5xf32>, %[[VAR:[a-z0-9]+]]: tensor<5xf32>, %[[G:[a-z0-9]+]]: tensor<5xf32>, %[[W:[a-z0-9]+]]: tensor<5x4xf32>)
// CHECK: %[[SHIFTED:.*]] = linalg.generic {{.*}} ins(%[[VAR]], %{{.*}} : tensor<5xf32>, tensor<f32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[SHIFTED]] : tensor<5xf32>)
// CHECK: math.rsqrt
// CHECK: %[[S:.*]] = call @frozen_0(%[[R]], %[[G]])
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[S]] : tensor<3x4x5xf32>, tensor<5xf32>)
// CHECK: %[[BIG:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<5xf32>) outs(%{{.*}} : tensor<3x4x5xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[BIG]] : tensor<3x4x5xf32>, tensor<3x4x5xf32>)
// CHECK: %[[WT:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<5x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[WT]] : tensor<3x4x5xf32>, tensor<4x5xf32>)
// CHECK-NOT: call
// CHECK: return
func.func @main(%x: tensor<3x4x5xf32>, %var: tensor<5xf32>, %gamma: tensor<5xf32>, %w: tensor<5x4xf32>) -> (tensor<3x4x5xf32>, tensor<3x4x5xf32>) attributes {mlirc.entry, mlirc.frozen = array<i64: 1, 2, 3>} {
  %eps = arith.constant dense<1.0e-05> : tensor<f32>
  %e5 = tensor.empty() : tensor<5xf32>
  %shifted = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]} ins(%var, %eps : tensor<5xf32>, tensor<f32>) outs(%e5 : tensor<5xf32>) {
  ^bb0(%v: f32, %e: f32, %o: f32):
    %s = arith.addf %v, %e : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%shifted : tensor<5xf32>) outs(%e5 : tensor<5xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = math.rsqrt %v : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %scale = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%r, %gamma : tensor<5xf32>, tensor<5xf32>) outs(%e5 : tensor<5xf32>) {
  ^bb0(%v: f32, %g: f32, %o: f32):
    %s = arith.mulf %v, %g : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %e = tensor.empty() : tensor<3x4x5xf32>
  %y = linalg.generic {indexing_maps = [#nhwc, #ch, #nhwc], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %scale : tensor<3x4x5xf32>, tensor<5xf32>) outs(%e : tensor<3x4x5xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.mulf %a, %s : f32
    linalg.yield %m : f32
  } -> tensor<3x4x5xf32>
  %big = linalg.generic {indexing_maps = [#ch, #nhwc], iterator_types = ["parallel", "parallel", "parallel"]} ins(%gamma : tensor<5xf32>) outs(%e : tensor<3x4x5xf32>) {
  ^bb0(%g: f32, %o: f32):
    linalg.yield %g : f32
  } -> tensor<3x4x5xf32>
  %z = linalg.generic {indexing_maps = [#nhwc, #nhwc, #nhwc], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y, %big : tensor<3x4x5xf32>, tensor<3x4x5xf32>) outs(%e : tensor<3x4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<3x4x5xf32>
  %e45 = tensor.empty() : tensor<4x5xf32>
  %wt = linalg.generic {indexing_maps = [#tr, #id2], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<5x4xf32>) outs(%e45 : tensor<4x5xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %scaled = linalg.generic {indexing_maps = [#nhwc, #hw, #nhwc], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %wt : tensor<3x4x5xf32>, tensor<4x5xf32>) outs(%e : tensor<3x4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<3x4x5xf32>
  return %z, %scaled : tensor<3x4x5xf32>, tensor<3x4x5xf32>
}
