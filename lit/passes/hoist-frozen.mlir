// RUN: mlirc-opt %s -p mlirc-hoist-frozen | FileCheck %s

// A conv-like graph in inference: %w (argument 1) and %s (argument 2) are frozen
// (parameters).  The weight's transpose and the per-channel factor read only them
// and move into @main_prepare; the library call reading the input stays, and so does
// the broadcast of %s to the activation's shape (larger than what it comes from:
// caching it would hold memory for nothing), a view at the boundary, and a value
// the entry returns (a caller may modify it).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>
#id1 = affine_map<(d0) -> (d0)>
#bc = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @main_prepare(
// CHECK-SAME: %[[PW:[a-z0-9]+]]: tensor<400x500xf32>, %[[PS:[a-z0-9]+]]: tensor<500xf32>) -> (tensor<500x400xf32>, tensor<500xf32>)
// CHECK-SAME: mlirc.prepare
// CHECK: %[[T:.*]] = call @transpose(%[[PW]])
// CHECK: %[[P:.*]] = call @scale(%[[PS]])
// CHECK: return %[[T]], %[[P]]
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<300x400xf32>, %[[W:[a-z0-9]+]]: tensor<400x500xf32>, %[[S:[a-z0-9]+]]: tensor<500xf32>, %[[WT:[a-z0-9]+]]: tensor<500x400xf32>, %[[F:[a-z0-9]+]]: tensor<500xf32>)
// CHECK-SAME: mlirc.frozen = array<i64: 1, 2>
// CHECK-SAME: mlirc.prepared = array<i64: 1, 2>
// CHECK-NOT: call @transpose
// CHECK: %[[Y:.*]] = call @mm(%[[X]], %[[W]])
// CHECK: %[[B:.*]] = call @broadcast(%[[F]])
// CHECK: %[[Z:.*]] = call @mul(%[[Y]], %[[B]])
// CHECK: %[[V:.*]] = tensor.expand_shape %[[WT]]
// CHECK: %[[R:.*]] = call @scale(%[[S]])
// CHECK: return %[[Z]], %[[V]], %[[R]]

func.func @main(%x: tensor<300x400xf32>, %w: tensor<400x500xf32>, %s: tensor<500xf32>) -> (tensor<300x500xf32>, tensor<5x100x400xf32>, tensor<500xf32>) attributes {mlirc.entry, mlirc.frozen = array<i64: 1, 2>} {
  %y = call @mm(%x, %w) : (tensor<300x400xf32>, tensor<400x500xf32>) -> tensor<300x500xf32>
  %t = call @transpose(%w) : (tensor<400x500xf32>) -> tensor<500x400xf32>
  %f = call @scale(%s) : (tensor<500xf32>) -> tensor<500xf32>
  %b = call @broadcast(%f) : (tensor<500xf32>) -> tensor<300x500xf32>
  %z = call @mul(%y, %b) : (tensor<300x500xf32>, tensor<300x500xf32>) -> tensor<300x500xf32>
  %v = tensor.expand_shape %t [[0, 1], [2]] output_shape [5, 100, 400] : tensor<500x400xf32> into tensor<5x100x400xf32>
  %r = call @scale(%s) : (tensor<500xf32>) -> tensor<500xf32>
  return %z, %v, %r : tensor<300x500xf32>, tensor<5x100x400xf32>, tensor<500xf32>
}

func.func private @mm(tensor<300x400xf32>, tensor<400x500xf32>) -> tensor<300x500xf32> attributes {mlirc.kernel, mlirc.library = "mm"}

func.func @transpose(%w: tensor<400x500xf32>) -> tensor<500x400xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<500x400xf32>
  %t = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<400x500xf32>) outs(%e : tensor<500x400xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<500x400xf32>
  return %t : tensor<500x400xf32>
}

func.func @scale(%s: tensor<500xf32>) -> tensor<500xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<500xf32>
  %t = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%s : tensor<500xf32>) outs(%e : tensor<500xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.rsqrt %in : f32
    linalg.yield %r : f32
  } -> tensor<500xf32>
  return %t : tensor<500xf32>
}

func.func @broadcast(%s: tensor<500xf32>) -> tensor<300x500xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<300x500xf32>
  %t = linalg.generic {indexing_maps = [#bc, #id2], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<500xf32>) outs(%e : tensor<300x500xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<300x500xf32>
  return %t : tensor<300x500xf32>
}

func.func @mul(%a: tensor<300x500xf32>, %b: tensor<300x500xf32>) -> tensor<300x500xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<300x500xf32>
  %t = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<300x500xf32>, tensor<300x500xf32>) outs(%e : tensor<300x500xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %m = arith.mulf %in, %in2 : f32
    linalg.yield %m : f32
  } -> tensor<300x500xf32>
  return %t : tensor<300x500xf32>
}
