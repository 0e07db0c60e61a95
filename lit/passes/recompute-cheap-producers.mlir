// RUN: mlirc-opt %s --split-input-file -p mlirc-recompute-cheap-producers | FileCheck %s
// RUN: mlirc-opt %s --split-input-file -p mlirc-recompute-cheap-producers,mlirc-fuse-elementwise | FileCheck %s --check-prefix=FUSED
// RUN: mlirc-opt %s --split-input-file -p "mlirc-recompute-cheap-producers{fused=1}" | FileCheck %s --check-prefix=FUSED
// A variance's float64 copy of its input, read by the mean's sum and by the sum of
// squared deviations: one copy per reader, and each fuses into its reader (no
// generic is left writing the 4x6 float64 tensor).
// CHECK-LABEL: func.func @float64_copy_read_twice
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xf64>)
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<4x6xf64>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xf64>)
// CHECK: linalg.generic {{.*}} ins(%[[B]], %{{.*}} : tensor<4x6xf64>, tensor<4xf64>)
// FUSED-LABEL: func.func @float64_copy_read_twice
// FUSED-NOT: outs(%{{.*}} : tensor<4x6xf64>)
// FUSED: arith.extf
// FUSED: arith.extf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @float64_copy_read_twice(%x: tensor<4x6xf32>) -> tensor<4xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x6xf64>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf64>) {
  ^bb0(%a: f32, %out: f64):
    %w = arith.extf %a : f32 to f64
    linalg.yield %w : f64
  } -> tensor<4x6xf64>
  %e4 = tensor.empty() : tensor<4xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e4 : tensor<4xf64>) -> tensor<4xf64>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%wide : tensor<4x6xf64>) outs(%f : tensor<4xf64>) {
  ^bb0(%a: f64, %out: f64):
    %r = arith.addf %a, %out : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %squares = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%wide, %sum : tensor<4x6xf64>, tensor<4xf64>) outs(%f : tensor<4xf64>) {
  ^bb0(%a: f64, %m: f64, %out: f64):
    %d = arith.subf %a, %m : f64
    %s = arith.mulf %d, %d : f64
    %r = arith.addf %s, %out : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  return %squares : tensor<4xf64>
}

// -----

// Kept whole: a division is not recomputed per reader, a producer read broadcast
// (each element many times) or returned is written once.
// CHECK-LABEL: func.func @kept_whole
// CHECK-COUNT-1: arith.divf
// CHECK-COUNT-1: arith.negf
// CHECK-COUNT-1: math.absf
// CHECK-NOT: linalg.generic {{.*}} ins(%arg0
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @kept_whole(%x: tensor<4x6xf32>, %v: tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %half = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.divf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %neg = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %abs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.absf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%half, %abs, %neg : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%p: f32, %q: f32, %n: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.addf %s, %n : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %b = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%half, %neg : tensor<4x6xf32>, tensor<4xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%p: f32, %n: f32, %out: f32):
    %r = arith.mulf %p, %n : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  return %a, %b, %abs, %neg : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>
}

// -----

// A sum of two activations read by two generics stays whole: a copy in each would
// read both activations where the reader reads one result back.
// CHECK-LABEL: func.func @residual_sum_stays
// CHECK-COUNT-1: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.addf %in, %in_0
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @residual_sum_stays(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<4x6xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  return %p, %q : tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// A GEMM's bias and GELU (one fused body, erf and all) read by a sum over its rows
// and by the op after it: on the CPU, where kernels can be compute-bound, written
// once and read back by both.
// CHECK-LABEL: func.func @gelu_on_cpu
// CHECK-COUNT-1: math.erf
// CHECK-NOT: math.erf
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @gelu_on_cpu(%x: tensor<4x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %bias : tensor<4x6xf32>, tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %c0 = arith.constant 0.707106769 : f32
    %c1 = arith.constant 1.0 : f32
    %c2 = arith.constant 0.5 : f32
    %y = arith.addf %a, %b : f32
    %s = arith.mulf %y, %c0 : f32
    %erf = math.erf %s : f32
    %p = arith.addf %erf, %c1 : f32
    %h = arith.mulf %y, %c2 : f32
    %r = arith.mulf %h, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%g : tensor<4x6xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %sum : tensor<4x6xf32>, tensor<4xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  return %scaled : tensor<4x6xf32>
}
