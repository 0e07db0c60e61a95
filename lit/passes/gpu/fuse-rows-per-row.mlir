// RUN: mlirc-opt %s -p mlirc-gpu-fuse-rows | FileCheck %s

// logsumexp's four kernels: row max, a guard on the maxima (pointwise over the rows
// alone), the sum of exponentials, and the log added back (rows alone again).  On the
// GPU the per-row kernels join the group: one kernel.  A per-row kernel over other
// rows (7 of them, not 5) stays out.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#p = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @rows_0(%{{.*}}: tensor<5x33xf32>) -> tensor<5xf32>
// CHECK-SAME: mlirc.gpu.rows = 1 : i64
// CHECK-COUNT-4: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @kernel_4
// CHECK-LABEL: func.func @main
// CHECK: call @rows_0(%arg0)
// CHECK: call @kernel_4(%arg1)
func.func @kernel_0(%x: tensor<5x33xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<5xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<5x33xf32>) outs(%f : tensor<5xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.maximumf %a, %out : f32
    linalg.yield %m : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @kernel_1(%m: tensor<5xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %inf = arith.constant 0x7F800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#p, #p], iterator_types = ["parallel"]} ins(%m : tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%a: f32, %out: f32):
    %abs = math.absf %a : f32
    %isinf = arith.cmpf oeq, %abs, %inf : f32
    %g = arith.select %isinf, %zero, %a : f32
    linalg.yield %g : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @kernel_2(%x: tensor<5x33xf32>, %m: tensor<5xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<5x33xf32>, tensor<5xf32>) outs(%f : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    %x2 = math.exp %s : f32
    %t = arith.addf %x2, %out : f32
    linalg.yield %t : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @kernel_3(%s: tensor<5xf32>, %m: tensor<5xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#p, #p, #p], iterator_types = ["parallel"]} ins(%s, %m : tensor<5xf32>, tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %l = math.log %a : f32
    %t = arith.addf %l, %b : f32
    linalg.yield %t : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @kernel_4(%y: tensor<7xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7xf32>
  %r = linalg.generic {indexing_maps = [#p, #p], iterator_types = ["parallel"]} ins(%y : tensor<7xf32>) outs(%e : tensor<7xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}
func.func @main(%x: tensor<5x33xf32>, %y: tensor<7xf32>) -> (tensor<5xf32>, tensor<7xf32>) attributes {mlirc.entry} {
  %0 = call @kernel_0(%x) : (tensor<5x33xf32>) -> tensor<5xf32>
  %1 = call @kernel_1(%0) : (tensor<5xf32>) -> tensor<5xf32>
  %2 = call @kernel_2(%x, %1) : (tensor<5x33xf32>, tensor<5xf32>) -> tensor<5xf32>
  %3 = call @kernel_3(%2, %1) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %4 = call @kernel_4(%y) : (tensor<7xf32>) -> tensor<7xf32>
  return %3, %4 : tensor<5xf32>, tensor<7xf32>
}
