// RUN: mlirc-opt %s -p mlirc-cpu-fuse-rows | FileCheck %s

// A training layer norm's forward over 3 x 5 rows of 37: the sum of deviations from
// each row's first element, the mean (per-row work: one element per row), the sum of
// squared deviations, the rstd (per row again) and the normalization.  The forward
// returns the mean and rstd for the backward, reshaped to [3, 5, 1] between the
// kernels.  On the CPU the five kernels are one row loop writing all three results,
// the reshapes moved after its call.
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#first = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
#w = affine_map<(d0, d1, d2) -> (d2)>
#p = affine_map<(d0, d1) -> (d0, d1)>
#pfirst = affine_map<(d0, d1) -> (d0, d1, 0)>

// CHECK-LABEL: func.func @rows_0(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<3x5x37xf32>, %{{.*}}: tensor<37xf32>, %{{.*}}: tensor<37xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5x37xf32>)
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[XR:.*]] = tensor.extract_slice %[[X]][%{{.*}}, %{{.*}}, 0] [1, 1, 37] [1, 1, 1]
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[XR]], %[[XR]] : tensor<1x1x37xf32>, tensor<1x1x37xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[XR]], %[[S]] : tensor<1x1x37xf32>, tensor<1x1xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[XR]], %[[MEAN]] : tensor<1x1x37xf32>, tensor<1x1xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: %[[RSTD:.*]] = linalg.generic {{.*}} ins(%[[SQ]] : tensor<1x1xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: math.rsqrt
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[XR]], %[[MEAN]], %[[RSTD]], %{{.*}}, %{{.*}} : tensor<1x1x37xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<37xf32>, tensor<37xf32>)
// CHECK: tensor.insert_slice %[[MEAN]]
// CHECK: tensor.insert_slice %[[RSTD]]
// CHECK: tensor.insert_slice %[[Y]]
// CHECK: } {mlirc.parallel_loop}
// CHECK-NOT: func.func @kernel_
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]]:3 = call @rows_0(%arg0, %arg1, %arg2)
// CHECK: %[[M3:.*]] = tensor.expand_shape %[[R]]#0
// CHECK: %[[R3:.*]] = tensor.expand_shape %[[R]]#1
// CHECK: return %[[R]]#2, %[[M3]], %[[R3]]
func.func @kernel_0(%x: tensor<3x5x37xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #first, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %x : tensor<3x5x37xf32>, tensor<3x5x37xf32>) outs(%f : tensor<3x5xf32>) {
  ^bb0(%a: f32, %k: f32, %out: f32):
    %d = arith.subf %a, %k : f32
    %s = arith.addf %d, %out : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
func.func @kernel_1(%x: tensor<3x5x37xf32>, %s: tensor<3x5xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel} {
  %n = arith.constant 37.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#pfirst, #p, #p], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<3x5x37xf32>, tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%k: f32, %a: f32, %out: f32):
    %q = arith.divf %a, %n : f32
    %m = arith.addf %k, %q : f32
    linalg.yield %m : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
func.func @kernel_2(%x: tensor<3x5x37xf32>, %m: tensor<3x5xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %m : tensor<3x5x37xf32>, tensor<3x5xf32>) outs(%f : tensor<3x5xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %sq = arith.mulf %d, %d : f32
    %s = arith.addf %sq, %out : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
func.func @kernel_3(%v: tensor<3x5xf32>) -> tensor<3x5xf32> attributes {mlirc.kernel} {
  %n = arith.constant 37.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#p, #p], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%a: f32, %out: f32):
    %q = arith.divf %a, %n : f32
    %qe = arith.addf %q, %eps : f32
    %rs = math.rsqrt %qe : f32
    linalg.yield %rs : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
func.func @kernel_4(%x: tensor<3x5x37xf32>, %m: tensor<3x5xf32>, %rs: tensor<3x5xf32>, %g: tensor<37xf32>, %b: tensor<37xf32>) -> tensor<3x5x37xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<3x5x37xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row, #w, #w, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m, %rs, %g, %b : tensor<3x5x37xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<37xf32>, tensor<37xf32>) outs(%e : tensor<3x5x37xf32>) {
  ^bb0(%a: f32, %mm: f32, %r0: f32, %gg: f32, %bb: f32, %out: f32):
    %d = arith.subf %a, %mm : f32
    %n = arith.mulf %d, %r0 : f32
    %s = arith.mulf %n, %gg : f32
    %y = arith.addf %s, %bb : f32
    linalg.yield %y : f32
  } -> tensor<3x5x37xf32>
  return %r : tensor<3x5x37xf32>
}
func.func @main(%x: tensor<3x5x37xf32>, %g: tensor<37xf32>, %b: tensor<37xf32>) -> (tensor<3x5x37xf32>, tensor<3x5x1xf32>, tensor<3x5x1xf32>) attributes {mlirc.entry} {
  %0 = call @kernel_0(%x) : (tensor<3x5x37xf32>) -> tensor<3x5xf32>
  %1 = call @kernel_1(%x, %0) : (tensor<3x5x37xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %m3 = tensor.expand_shape %1 [[0], [1, 2]] output_shape [3, 5, 1] : tensor<3x5xf32> into tensor<3x5x1xf32>
  %2 = call @kernel_2(%x, %1) : (tensor<3x5x37xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %3 = call @kernel_3(%2) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %r3 = tensor.expand_shape %3 [[0], [1, 2]] output_shape [3, 5, 1] : tensor<3x5xf32> into tensor<3x5x1xf32>
  %4 = call @kernel_4(%x, %1, %3, %g, %b) : (tensor<3x5x37xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<37xf32>, tensor<37xf32>) -> tensor<3x5x37xf32>
  return %4, %m3, %r3 : tensor<3x5x37xf32>, tensor<3x5x1xf32>, tensor<3x5x1xf32>
}
