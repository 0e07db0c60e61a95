// RUN: mlirc-opt %s -p mlirc-cpu-merge-small-kernels | FileCheck %s
// RUN: mlirc-opt %s -p "mlirc-cpu-merge-small-kernels{large=1}" | FileCheck %s --check-prefix=LARGE
// RUN: mlirc-opt %s -p "mlirc-cpu-merge-small-kernels{max-kib=-1}" | FileCheck %s --check-prefix=OFF
// RUN: mlirc-opt %s -p "mlirc-cpu-merge-small-kernels{max-arguments=4}" | FileCheck %s --check-prefix=NARROW
// RUN: mlirc-opt %s -p mlirc-cpu-merge-small-kernels,cse | FileCheck %s --check-prefix=CSE

// A batch norm's statistics in miniature: partial sums (8x16), their sum over the
// partials (16), the mean -- read through a reshape -- and a parameter's update that
// reads none of them.  All four are small: one kernel, their bodies inlined in
// order, what they pass each other its own values; it is called where the last
// member was, after the large kernel (128x256xf32: over 64 KiB, a call of its own
// unless `large`) that reads none of their results.  The library call reads the mean: the run ends
// before it, and the kernel after it is alone (no merge of one).
// CHECK-LABEL: func.func @merged_0
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf64>, %[[P:.*]]: tensor<16xf32>, %[[G:.*]]: tensor<16xf32>) -> (tensor<1x16xf32>, tensor<16xf32>)
// CHECK-SAME: attributes {mlirc.kernel}
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<8x16xf64>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<16xf64>)
// CHECK: %[[ROW:.*]] = tensor.expand_shape %[[MEAN]]
// CHECK: %[[UPD:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[G]] : tensor<16xf32>, tensor<16xf32>)
// CHECK: return %[[ROW]], %[[UPD]]
// CHECK-NOT: func.func @partial_sums(
// CHECK-NOT: func.func @finish_sum(
// CHECK-LABEL: func.func @main
// CHECK: %[[BIG:.*]] = call @large(%arg3)
// CHECK: %[[M:.*]]:2 = call @merged_0(%arg0, %arg1, %arg2)
// CHECK: %[[L:.*]] = call @lib(%[[M]]#0)
// CHECK: %[[A:.*]] = call @update(%arg1, %[[L]])
// CHECK: return %[[M]]#1, %[[BIG]], %[[A]]
// Each member's tensor.empty is marked its own: CSE keeps the mean's and the update's
// (both 16xf32) apart, so that bufferization gives them a buffer each.
// CSE-LABEL: func.func @merged_0
// CSE-COUNT-2: tensor.empty() {mlirc.fresh = {{[0-9]+}} : i64} : tensor<16xf32>
// A contraction (a dot: both operands walk the reduced dim) keeps its own call: its
// vectorization schedule canonicalizes the whole function it is in.  The updates
// around it still merge.
// CHECK-LABEL: func.func @second
// CHECK: %[[D:.*]] = call @dot(%arg1, %arg2)
// CHECK: %[[U:.*]]:2 = call @merged_1(%arg0, %arg1)
// CHECK: return %[[D]], %[[U]]#0, %[[U]]#1
// OFF-NOT: merged_
// With `large` (MLIRC_MERGE_LARGE), larger kernels join too.  What a large member writes stays a result of
// the merged kernel -- a buffer the host passes in, which mlirc-cpu-parallelize's
// chunks write from every thread -- even where only a later member reads it (the
// first negation below); only small members pass each other values of their own.
// LARGE-LABEL: func.func @merged_0
// LARGE-SAME: -> (tensor<1x16xf32>, tensor<128x256xf32>, tensor<16xf32>)
// LARGE-LABEL: func.func @merged_2
// LARGE-SAME: (%[[X:.*]]: tensor<128x256xf32>) -> (tensor<128x256xf32>, tensor<128x256xf32>)
// LARGE: %[[NEG:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<128x256xf32>)
// LARGE: %[[AGAIN:.*]] = linalg.generic {{.*}} ins(%[[NEG]] : tensor<128x256xf32>)
// LARGE: return %[[NEG]], %[[AGAIN]]
// LARGE-LABEL: func.func @main
// LARGE: %[[M:.*]]:3 = call @merged_0(%arg0, %arg3, %arg1, %arg2)
// LARGE: call @lib(%[[M]]#0)
// LARGE-LABEL: func.func @third
// LARGE: %[[T:.*]]:2 = call @merged_2(%arg0)
// LARGE: return %[[T]]#1
// A large member that reads a small member's result through a reshape: the result
// itself (the mean, not its view) is the host's buffer.
// LARGE-LABEL: func.func @fourth
// LARGE: %[[F:.*]]:2 = call @merged_{{[0-9]+}}(%arg0, %arg1) : (tensor<8x16xf64>, tensor<2048x16xf32>) -> (tensor<16xf32>, tensor<2048x16xf32>)
// LARGE: return %[[F]]#1
// With 4 buffers at most, the sums and the mean merge (the reshape after them stays
// a view on the host); the update would make it 7.
// NARROW-LABEL: func.func @merged_0
// NARROW-SAME: (%{{.*}}: tensor<8x16xf64>) -> tensor<16xf32>
// NARROW-LABEL: func.func @main
// NARROW: call @merged_0(%arg0)
// NARROW: call @update(%arg1, %arg2)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0)>
module attributes {mlirc.target = "cpu"} {
  func.func @partial_sums(%x: tensor<8x16xf64>) -> tensor<16xf64> attributes {mlirc.kernel} {
    %zero = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<16xf64>
    %init = linalg.fill ins(%zero : f64) outs(%e : tensor<16xf64>) -> tensor<16xf64>
    %r = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<8x16xf64>) outs(%init : tensor<16xf64>) {
    ^bb0(%a: f64, %o: f64):
      %s = arith.addf %a, %o : f64
      linalg.yield %s : f64
    } -> tensor<16xf64>
    return %r : tensor<16xf64>
  }
  func.func @finish_sum(%s: tensor<16xf64>) -> tensor<16xf32> attributes {mlirc.kernel} {
    %n = arith.constant 8.192000e+03 : f64
    %e = tensor.empty() : tensor<16xf32>
    %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%s : tensor<16xf64>) outs(%e : tensor<16xf32>) {
    ^bb0(%a: f64, %o: f32):
      %d = arith.divf %a, %n : f64
      %t = arith.truncf %d : f64 to f32
      linalg.yield %t : f32
    } -> tensor<16xf32>
    return %r : tensor<16xf32>
  }
  func.func @update(%p: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<16xf32>
    %r = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%p, %g : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.subf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    return %r : tensor<16xf32>
  }
  func.func @large(%x: tensor<128x256xf32>) -> tensor<128x256xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<128x256xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<128x256xf32>) outs(%e : tensor<128x256xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.negf %a : f32
      linalg.yield %s : f32
    } -> tensor<128x256xf32>
    return %r : tensor<128x256xf32>
  }
  func.func @dot(%v: tensor<16xf32>, %m: tensor<4x16xf32>) -> tensor<4xf32> attributes {mlirc.kernel} {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    %r = linalg.generic {indexing_maps = [#col, #id2, #row], iterator_types = ["parallel", "reduction"]} ins(%v, %m : tensor<16xf32>, tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func private @lib(tensor<1x16xf32>) -> tensor<16xf32> attributes {mlirc.kernel, mlirc.library = "relu"}
  func.func @main(%x: tensor<8x16xf64>, %p: tensor<16xf32>, %g: tensor<16xf32>, %big: tensor<128x256xf32>) -> (tensor<16xf32>, tensor<128x256xf32>, tensor<16xf32>) attributes {mlirc.entry} {
    %s = call @partial_sums(%x) : (tensor<8x16xf64>) -> tensor<16xf64>
    %m = call @finish_sum(%s) : (tensor<16xf64>) -> tensor<16xf32>
    %row = tensor.expand_shape %m [[0, 1]] output_shape [1, 16] : tensor<16xf32> into tensor<1x16xf32>
    %b = call @large(%big) : (tensor<128x256xf32>) -> tensor<128x256xf32>
    %u = call @update(%p, %g) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %l = call @lib(%row) : (tensor<1x16xf32>) -> tensor<16xf32>
    %a = call @update(%p, %l) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    return %u, %b, %a : tensor<16xf32>, tensor<128x256xf32>, tensor<16xf32>
  }
  func.func @second(%p: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<4x16xf32>) -> (tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) attributes {mlirc.entry} {
    %u = call @update(%p, %g) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %d = call @dot(%g, %m) : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4xf32>
    %w = call @update(%g, %p) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    return %d, %u, %w : tensor<4xf32>, tensor<16xf32>, tensor<16xf32>
  }
  func.func @shift_rows(%row: tensor<1x16xf32>, %x: tensor<2048x16xf32>) -> tensor<2048x16xf32> attributes {mlirc.kernel} {
    %e = tensor.empty() : tensor<2048x16xf32>
    %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%row, %x : tensor<1x16xf32>, tensor<2048x16xf32>) outs(%e : tensor<2048x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %b, %a : f32
      linalg.yield %d : f32
    } -> tensor<2048x16xf32>
    return %r : tensor<2048x16xf32>
  }
  func.func @third(%x: tensor<128x256xf32>) -> tensor<128x256xf32> attributes {mlirc.entry} {
    %a = call @large(%x) : (tensor<128x256xf32>) -> tensor<128x256xf32>
    %b = call @large(%a) : (tensor<128x256xf32>) -> tensor<128x256xf32>
    return %b : tensor<128x256xf32>
  }
  func.func @fourth(%x8: tensor<8x16xf64>, %x: tensor<2048x16xf32>) -> tensor<2048x16xf32> attributes {mlirc.entry} {
    %s = call @partial_sums(%x8) : (tensor<8x16xf64>) -> tensor<16xf64>
    %m = call @finish_sum(%s) : (tensor<16xf64>) -> tensor<16xf32>
    %row = tensor.expand_shape %m [[0, 1]] output_shape [1, 16] : tensor<16xf32> into tensor<1x16xf32>
    %y = call @shift_rows(%row, %x) : (tensor<1x16xf32>, tensor<2048x16xf32>) -> tensor<2048x16xf32>
    return %y : tensor<2048x16xf32>
  }
}
