// RUN: mlirc-opt %s -p mlirc-fuse-sibling-reductions | FileCheck %s

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#partial = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>
#channel = affine_map<(d0, d1, d2, d3) -> (d1)>
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A batch norm's backward on channels-last activations: the gradient's column sums
// and the gradient times the centred input's, each cut into partial sums per (N, H)
// row.  With other work between them (the first sum's second stage) and the second
// one's init made after it.  One generic yields both, reading the gradient once; the
// second stage reads its first result.
// CHECK-LABEL: func.func @batch_norm_backward_sums
// CHECK-SAME: (%[[DY:.*]]: tensor<6x5x7x16xf32>, %[[X:.*]]: tensor<6x5x7x16xf32>, %[[MEAN:.*]]: tensor<16xf32>)
// CHECK: %[[BOTH:.*]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[DY]], %[[X]], %[[MEAN]] :
// CHECK-SAME: outs(%[[INIT:.*]], %{{.*}} : tensor<6x5x16xf32>, tensor<6x5x16xf32>)
// CHECK: ^bb0(%[[G:.*]]: f32, %[[XV:.*]]: f32, %[[M:.*]]: f32, %[[ACC0:.*]]: f32, %[[ACC1:.*]]: f32):
// CHECK: %[[S0:.*]] = arith.addf %[[G]], %[[ACC0]]
// CHECK: %[[C:.*]] = arith.subf %[[XV]], %[[M]]
// CHECK: %[[P:.*]] = arith.mulf %[[G]], %[[C]]
// CHECK: %[[S1:.*]] = arith.addf %[[P]], %[[ACC1]]
// CHECK: linalg.yield %[[S0]], %[[S1]]
// CHECK: linalg.generic {{.*}} ins(%[[BOTH]]#0 :
// CHECK-NOT: linalg.generic
// CHECK: return %{{.*}}, %[[BOTH]]#1
func.func @batch_norm_backward_sums(%dy: tensor<6x5x7x16xf32>, %x: tensor<6x5x7x16xf32>, %mean: tensor<16xf32>) -> (tensor<6x16xf32>, tensor<6x5x16xf32>) attributes {mlirc.entry} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<6x5x16xf32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<6x5x16xf32>) -> tensor<6x5x16xf32>
  %s0 = linalg.generic {indexing_maps = [#nhwc, #partial], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%dy : tensor<6x5x7x16xf32>) outs(%i0 : tensor<6x5x16xf32>) {
  ^bb0(%g: f32, %acc: f32):
    %a = arith.addf %g, %acc : f32
    linalg.yield %a : f32
  } -> tensor<6x5x16xf32>
  %e1 = tensor.empty() : tensor<6x16xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<6x16xf32>) -> tensor<6x16xf32>
  %stage2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%s0 : tensor<6x5x16xf32>) outs(%i1 : tensor<6x16xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %a = arith.addf %p, %acc : f32
    linalg.yield %a : f32
  } -> tensor<6x16xf32>
  %e2 = tensor.empty() : tensor<6x5x16xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<6x5x16xf32>) -> tensor<6x5x16xf32>
  %s1 = linalg.generic {indexing_maps = [#nhwc, #nhwc, #channel, #partial], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%dy, %x, %mean : tensor<6x5x7x16xf32>, tensor<6x5x7x16xf32>, tensor<16xf32>) outs(%i2 : tensor<6x5x16xf32>) {
  ^bb0(%g: f32, %xv: f32, %m: f32, %acc: f32):
    %c = arith.subf %xv, %m : f32
    %p = arith.mulf %g, %c : f32
    %a = arith.addf %p, %acc : f32
    linalg.yield %a : f32
  } -> tensor<6x5x16xf32>
  return %stage2, %s1 : tensor<6x16xf32>, tensor<6x5x16xf32>
}

// Two sums along a row's contiguous dim (a layer norm's): row fusion's to group.
// CHECK-LABEL: func.func @row_sums_stay_apart
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @row_sums_stay_apart(%x: tensor<8x33xf32>) -> (tensor<8xf32>, tensor<8xf32>) attributes {mlirc.entry} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x33xf32>) outs(%i : tensor<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %v, %acc : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  %q = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<8x33xf32>) outs(%i : tensor<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %a = arith.addf %sq, %acc : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  return %s, %q : tensor<8xf32>, tensor<8xf32>
}

// A sum that reads the other's result (two-pass variance: the deviations from the
// mean) stays apart from it.  A third one reads a value computed after both (an
// exp): not with the first, whose result the second reads before it, but with the
// second, in the third one's place.
// CHECK-LABEL: func.func @dependent_sums_stay_apart
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<6x5x7x16xf32>)
// CHECK: %[[E:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: %{{.*}}:2 = linalg.generic {{.*}} ins(%{{.*}}, %[[S]], %[[E]] :
// CHECK-NOT: linalg.generic
func.func @dependent_sums_stay_apart(%x: tensor<6x5x7x16xf32>) -> (tensor<6x5x16xf32>, tensor<6x5x16xf32>, tensor<6x5x16xf32>) attributes {mlirc.entry} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5x16xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<6x5x16xf32>) -> tensor<6x5x16xf32>
  %s = linalg.generic {indexing_maps = [#nhwc, #partial], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<6x5x7x16xf32>) outs(%i : tensor<6x5x16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %v, %acc : f32
    linalg.yield %a : f32
  } -> tensor<6x5x16xf32>
  %d = linalg.generic {indexing_maps = [#nhwc, #partial, #partial], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %s : tensor<6x5x7x16xf32>, tensor<6x5x16xf32>) outs(%i : tensor<6x5x16xf32>) {
  ^bb0(%v: f32, %m: f32, %acc: f32):
    %c = arith.subf %v, %m : f32
    %a = arith.addf %c, %acc : f32
    linalg.yield %a : f32
  } -> tensor<6x5x16xf32>
  %ex = tensor.empty() : tensor<6x5x7x16xf32>
  %exp = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<6x5x7x16xf32>) outs(%ex : tensor<6x5x7x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = math.exp %v : f32
    linalg.yield %y : f32
  } -> tensor<6x5x7x16xf32>
  %t = linalg.generic {indexing_maps = [#nhwc, #nhwc, #partial], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %exp : tensor<6x5x7x16xf32>, tensor<6x5x7x16xf32>) outs(%i : tensor<6x5x16xf32>) {
  ^bb0(%v: f32, %w: f32, %acc: f32):
    %p = arith.mulf %v, %w : f32
    %a = arith.addf %p, %acc : f32
    linalg.yield %a : f32
  } -> tensor<6x5x16xf32>
  return %s, %d, %t : tensor<6x5x16xf32>, tensor<6x5x16xf32>, tensor<6x5x16xf32>
}

// The second sum reads a value computed after the first (a batch of one's backward
// centres its input between them), and the first's result is read only after the
// second: the fused op takes the second one's place.
// CHECK-LABEL: func.func @fused_where_the_second_was
// CHECK: %[[C:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: %[[BOTH:.*]]:2 = linalg.generic {{.*}} ins(%{{.*}}, %[[C]] :
// CHECK: linalg.generic {{.*}} ins(%[[BOTH]]#0, %[[BOTH]]#1 :
func.func @fused_where_the_second_was(%dy: tensor<1x5x7x16xf32>, %x: tensor<1x5x7x16xf32>, %mean: tensor<16xf32>) -> tensor<16xf32> attributes {mlirc.entry} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %s0 = linalg.generic {indexing_maps = [#nhwc, #channel], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%dy : tensor<1x5x7x16xf32>) outs(%i : tensor<16xf32>) {
  ^bb0(%g: f32, %acc: f32):
    %a = arith.addf %g, %acc : f32
    linalg.yield %a : f32
  } -> tensor<16xf32>
  %ec = tensor.empty() : tensor<1x5x7x16xf32>
  %c = linalg.generic {indexing_maps = [#nhwc, #channel, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mean : tensor<1x5x7x16xf32>, tensor<16xf32>) outs(%ec : tensor<1x5x7x16xf32>) {
  ^bb0(%xv: f32, %m: f32, %o: f32):
    %d = arith.subf %xv, %m : f32
    linalg.yield %d : f32
  } -> tensor<1x5x7x16xf32>
  %s1 = linalg.generic {indexing_maps = [#nhwc, #nhwc, #channel], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%dy, %c : tensor<1x5x7x16xf32>, tensor<1x5x7x16xf32>) outs(%i : tensor<16xf32>) {
  ^bb0(%g: f32, %cv: f32, %acc: f32):
    %p = arith.mulf %g, %cv : f32
    %a = arith.addf %p, %acc : f32
    linalg.yield %a : f32
  } -> tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s0, %s1 : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
