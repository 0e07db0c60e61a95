// RUN: mlirc-opt %s -p mlirc-gpu-sibling-reductions | FileCheck %s
// RUN: mlirc-opt %s -p mlirc-gpu-sibling-reductions,mlirc-gpu-fuse-rows | FileCheck %s --check-prefix=FUSED

// A batch norm's backward, in small: two sums over the same rows (4 x 3 rows of 5)
// of the gradient, apart.  The second moves up to the first, with the reshape of the
// weight it reads (placed before both); row fusion then makes one kernel of both and
// the gradient's producer, whose result the kernel also returns.  A sum over the same rows
// of what the call between computes stays after it, as do a sum of other rows and one
// whose rows are too long for a program to hold (8193 > MAX_HELD_ROW).
// CHECK-LABEL: func.func @main
// CHECK: %[[G:.*]] = call @relu_backward(%arg0, %arg1)
// CHECK-NEXT: %[[W:.*]] = tensor.expand_shape %arg2
// CHECK-NEXT: %[[A:.*]] = call @sum(%[[G]])
// CHECK-NEXT: %[[B:.*]] = call @sum_scaled(%[[G]], %[[W]])
// CHECK-NEXT: call @sum_long(%arg3)
// CHECK-NEXT: %[[T:.*]] = call @total(%[[A]])
// CHECK-NEXT: call @sum_shifted(%[[G]], %[[T]])
// CHECK-NEXT: call @sum_other_rows(%[[G]])
// CHECK-NEXT: call @sum_long(%arg3)

// FUSED-LABEL: func.func @main
// FUSED-NEXT: %[[W:.*]] = tensor.expand_shape %arg2
// FUSED-NEXT: %{{.*}}:3 = call @rows_0(%arg0, %arg1, %[[W]]) : {{.*}} -> (tensor<4x3x5xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>
#w = affine_map<(d0, d1, d2) -> (0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
#lead = affine_map<(d0, d1) -> (d0)>
module attributes {mlirc.target = "cuda"} {
  func.func @relu_backward(%x: tensor<4x3x5xf32>, %g: tensor<4x3x5xf32>) -> tensor<4x3x5xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x3x5xf32>
    %r = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %g : tensor<4x3x5xf32>, tensor<4x3x5xf32>) outs(%e : tensor<4x3x5xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %c = arith.cmpf ole, %a, %z : f32
      %s = arith.select %c, %z, %b : f32
      linalg.yield %s : f32
    } -> tensor<4x3x5xf32>
    return %r : tensor<4x3x5xf32>
  }
  func.func @sum(%x: tensor<4x3x5xf32>) -> tensor<4x3xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x3xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
    %r = linalg.generic {indexing_maps = [#id3, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<4x3x5xf32>) outs(%f : tensor<4x3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<4x3xf32>
    return %r : tensor<4x3xf32>
  }
  func.func @sum_scaled(%x: tensor<4x3x5xf32>, %w: tensor<1x3xf32>) -> tensor<4x3xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x3xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
    %r = linalg.generic {indexing_maps = [#id3, #w, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x3x5xf32>, tensor<1x3xf32>) outs(%f : tensor<4x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %m, %o : f32
      linalg.yield %s : f32
    } -> tensor<4x3xf32>
    return %r : tensor<4x3xf32>
  }
  func.func @total(%x: tensor<4x3xf32>) -> tensor<3xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<3xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
    %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #lead], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x3xf32>) outs(%f : tensor<3xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<3xf32>
    return %r : tensor<3xf32>
  }
  func.func @sum_shifted(%x: tensor<4x3x5xf32>, %t: tensor<3xf32>) -> tensor<4x3xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x3xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
    %r = linalg.generic {indexing_maps = [#id3, affine_map<(d0, d1, d2) -> (d1)>, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %t : tensor<4x3x5xf32>, tensor<3xf32>) outs(%f : tensor<4x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %s = arith.addf %d, %o : f32
      linalg.yield %s : f32
    } -> tensor<4x3xf32>
    return %r : tensor<4x3xf32>
  }
  func.func @sum_other_rows(%x: tensor<4x3x5xf32>) -> tensor<4x5xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x5xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
    %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2, d1)>, #rows], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<4x3x5xf32>) outs(%f : tensor<4x5xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<4x5xf32>
    return %r : tensor<4x5xf32>
  }
  func.func @sum_long(%x: tensor<2x8193xf32>) -> tensor<2xf32> attributes {mlirc.kernel} {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
    %r = linalg.generic {indexing_maps = [#id2, #lead], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x8193xf32>) outs(%f : tensor<2xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
    } -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
  func.func @main(%x: tensor<4x3x5xf32>, %g: tensor<4x3x5xf32>, %w: tensor<3xf32>, %long: tensor<2x8193xf32>)
      -> (tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x5xf32>, tensor<2xf32>, tensor<2xf32>) attributes {mlirc.entry} {
    %gr = call @relu_backward(%x, %g) : (tensor<4x3x5xf32>, tensor<4x3x5xf32>) -> tensor<4x3x5xf32>
    %a = call @sum(%gr) : (tensor<4x3x5xf32>) -> tensor<4x3xf32>
    %l1 = call @sum_long(%long) : (tensor<2x8193xf32>) -> tensor<2xf32>
    %t = call @total(%a) : (tensor<4x3xf32>) -> tensor<3xf32>
    %c = call @sum_shifted(%gr, %t) : (tensor<4x3x5xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %o = call @sum_other_rows(%gr) : (tensor<4x3x5xf32>) -> tensor<4x5xf32>
    %wv = tensor.expand_shape %w [[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
    %b = call @sum_scaled(%gr, %wv) : (tensor<4x3x5xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
    %l2 = call @sum_long(%long) : (tensor<2x8193xf32>) -> tensor<2xf32>
    return %a, %t, %b, %c, %o, %l1, %l2 : tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x5xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
