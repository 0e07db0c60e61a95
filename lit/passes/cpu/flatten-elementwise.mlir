// RUN: mlirc-opt %s -p mlirc-cpu-flatten-elementwise | FileCheck %s

// A conv weight's SGD update: every operand read at the element written (the
// learning rate a 0-d scalar), so the four loops become one over 147456 elements:
// full vectors for mlirc-cpu-vectorize instead of 3-lane ones.
// CHECK-LABEL: func.func @weight_update
// CHECK-DAG: %[[P:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2, 3]] : tensor<128x128x3x3xf32> into tensor<147456xf32>
// CHECK-DAG: %[[G:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1, 2, 3]]
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[P]], %[[G]], %arg2 : tensor<147456xf32>, tensor<147456xf32>, tensor<f32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[\[}}0, 1, 2, 3]] output_shape [128, 128, 3, 3]
// CHECK: return %[[E]]
func.func @weight_update(%p: tensor<128x128x3x3xf32>, %g: tensor<128x128x3x3xf32>, %lr: tensor<f32>) -> tensor<128x128x3x3xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<128x128x3x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %g, %lr : tensor<128x128x3x3xf32>, tensor<128x128x3x3xf32>, tensor<f32>) outs(%e : tensor<128x128x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %l: f32, %o: f32):
    %m = arith.mulf %b, %l : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<128x128x3x3xf32>
  return %r : tensor<128x128x3x3xf32>
}

// Two results sharing one init (mlirc-fuse-multi-output): each gets its own, so that
// bufferization writes both straight into their out-parameters.
// CHECK-LABEL: func.func @momentum_step
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<7x5x3xf32>
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<7x5x3xf32>
// CHECK-DAG: tensor.collapse_shape %[[E0]]
// CHECK-DAG: tensor.collapse_shape %[[E1]]
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel"]}
// CHECK: } -> (tensor<105xf32>, tensor<105xf32>)
func.func @momentum_step(%p: tensor<7x5x3xf32>, %g: tensor<7x5x3xf32>, %m: tensor<7x5x3xf32>) -> (tensor<7x5x3xf32>, tensor<7x5x3xf32>) attributes {mlirc.kernel} {
  %c = arith.constant 0.9 : f32
  %e = tensor.empty() : tensor<7x5x3xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p, %g, %m : tensor<7x5x3xf32>, tensor<7x5x3xf32>, tensor<7x5x3xf32>) outs(%e, %e : tensor<7x5x3xf32>, tensor<7x5x3xf32>) {
  ^bb0(%a: f32, %b: f32, %v: f32, %o0: f32, %o1: f32):
    %mv = arith.mulf %v, %c : f32
    %nm = arith.addf %mv, %b : f32
    %np = arith.subf %a, %nm : f32
    linalg.yield %nm, %np : f32, f32
  } -> (tensor<7x5x3xf32>, tensor<7x5x3xf32>)
  return %r#1, %r#0 : tensor<7x5x3xf32>, tensor<7x5x3xf32>
}

// Not a broadcast (the bias is read along one dim only), nor a body that reads its
// loop indices: their loops stay.
// CHECK-LABEL: func.func @bias_add
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-LABEL: func.func @iota
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
func.func @bias_add(%x: tensor<7x33xf32>, %b: tensor<33xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x33xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<7x33xf32>, tensor<33xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<7x33xf32>
  return %r : tensor<7x33xf32>
}
func.func @iota(%x: tensor<7x33xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x33xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x33xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    %s = arith.addf %a, %f : f32
    linalg.yield %s : f32
  } -> tensor<7x33xf32>
  return %r : tensor<7x33xf32>
}
