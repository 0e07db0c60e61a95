// RUN: mlirc-opt %s --split-input-file -p mlirc-fold-broadcast-sums | FileCheck %s

// A mean's backward, [B, D] broadcast over T tokens, summed over B and T (a layer
// norm's bias gradient): the sum reads the [B, D] gradient, its T loop goes and the
// summand is multiplied by T.  The broadcast stays for its other reader.
// CHECK-DAG: #[[BD:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[D:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[SPREAD:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x6xf32>) outs({{.*}} : tensor<4x5x6xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[BD]], #[[D]]], iterator_types = ["reduction", "parallel"]} ins(%arg0 : tensor<4x6xf32>)
// CHECK: %[[T:.*]] = arith.constant 5.000000e+00 : f32
// CHECK: %[[TIMES:.*]] = arith.mulf %{{.*}}, %[[T]] : f32
// CHECK: arith.addf %[[TIMES]], %{{.*}} : f32
// CHECK: return {{.*}}, %[[SPREAD]]
#bd = affine_map<(d0, d1, d2) -> (d0, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#d = affine_map<(d0, d1, d2) -> (d2)>
func.func @bias_grad(%g: tensor<4x6xf32>) -> (tensor<6xf32>, tensor<4x5x6xf32>) attributes {mlirc.entry} {
  %e = tensor.empty() : tensor<4x5x6xf32>
  %spread = linalg.generic {indexing_maps = [#bd, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g : tensor<4x6xf32>) outs(%e : tensor<4x5x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4x5x6xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<6xf32>) -> tensor<6xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #d], iterator_types = ["reduction", "reduction", "parallel"]} ins(%spread : tensor<4x5x6xf32>) outs(%init : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  return %sum, %spread : tensor<6xf32>, tensor<4x5x6xf32>
}

// -----

// Only over the broadcast dim: no reduction is left, the init is read as an input.
// CHECK-LABEL: func.func @over_tokens_only
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %{{.*}} : tensor<3x2xi64>, tensor<3x2xi64>)
// CHECK: arith.muli %{{.*}}, %c7_i64
#bd = affine_map<(d0, d1, d2) -> (d0, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @over_tokens_only(%g: tensor<3x2xi64>) -> tensor<3x2xi64> attributes {mlirc.entry} {
  %e = tensor.empty() : tensor<3x7x2xi64>
  %spread = linalg.generic {indexing_maps = [#bd, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g : tensor<3x2xi64>) outs(%e : tensor<3x7x2xi64>) {
  ^bb0(%a: i64, %out: i64):
    linalg.yield %a : i64
  } -> tensor<3x7x2xi64>
  %zero = arith.constant 0 : i64
  %e1 = tensor.empty() : tensor<3x2xi64>
  %init = linalg.fill ins(%zero : i64) outs(%e1 : tensor<3x2xi64>) -> tensor<3x2xi64>
  %sum = linalg.generic {indexing_maps = [#id3, #out], iterator_types = ["parallel", "reduction", "parallel"]} ins(%spread : tensor<3x7x2xi64>) outs(%init : tensor<3x2xi64>) {
  ^bb0(%a: i64, %acc: i64):
    %s = arith.addi %acc, %a : i64
    linalg.yield %s : i64
  } -> tensor<3x2xi64>
  return %sum : tensor<3x2xi64>
}

// -----

// Left alone: a max (not a sum), a sum whose summand reads the summed loop, and an
// empty broadcast dim (the sum is its init, where 0 * inf would be NaN).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: arith.mulf
// CHECK: return
#bd = affine_map<(d0, d1, d2) -> (d0, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#d = affine_map<(d0, d1, d2) -> (d2)>
func.func @kept(%g: tensor<4x6xf32>, %x: tensor<4x5x6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) attributes {mlirc.entry} {
  %e = tensor.empty() : tensor<4x5x6xf32>
  %spread = linalg.generic {indexing_maps = [#bd, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g : tensor<4x6xf32>) outs(%e : tensor<4x5x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4x5x6xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<6xf32>) -> tensor<6xf32>
  %max = linalg.generic {indexing_maps = [#id3, #d], iterator_types = ["reduction", "reduction", "parallel"]} ins(%spread : tensor<4x5x6xf32>) outs(%init : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %dot = linalg.generic {indexing_maps = [#id3, #id3, #d], iterator_types = ["reduction", "reduction", "parallel"]} ins(%spread, %x : tensor<4x5x6xf32>, tensor<4x5x6xf32>) outs(%init : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.subf %a, %b : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  %e0 = tensor.empty() : tensor<4x0x6xf32>
  %none = linalg.generic {indexing_maps = [#bd, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g : tensor<4x6xf32>) outs(%e0 : tensor<4x0x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4x0x6xf32>
  %empty = linalg.generic {indexing_maps = [#id3, #d], iterator_types = ["reduction", "reduction", "parallel"]} ins(%none : tensor<4x0x6xf32>) outs(%init : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  return %max, %dot, %empty : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}
