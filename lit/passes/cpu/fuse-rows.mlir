// RUN: mlirc-opt %s -p mlirc-cpu-fuse-rows | FileCheck %s

// A scaled softmax over rows of 33 (5 x 7 rows): its four kernels become one loop
// over the 35 rows, flattened so that threads can split it.  Each member works on
// one row: the input's row is sliced, the weight (read whole by every row) is not,
// and the row max and row sum are 1-element tensors.  The exponentials are also
// read after the group, so the loop writes both them and the result, row by row.
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>
#w = affine_map<(d0, d1, d2) -> (d2)>
#tr = affine_map<(d0, d1, d2) -> (d0, d2, d1)>

// CHECK-LABEL: func.func @rows_0(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<5x7x33xf32>, %[[W:[a-z0-9]+]]: tensor<33xf32>) -> (tensor<5x7x33xf32>, tensor<5x7x33xf32>)
// CHECK: %[[R:.*]]:2 = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[E:.*]] = %{{.*}}, %[[Y:.*]] = %{{.*}})
// CHECK: %[[J:.*]] = arith.remui %[[I]]
// CHECK: %[[K:.*]] = arith.divui %[[I]]
// CHECK: %[[XR:.*]] = tensor.extract_slice %[[X]][%[[K]], %[[J]], 0] [1, 1, 33] [1, 1, 1]
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[XR]] : tensor<1x1x33xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%[[XR]], %[[MAX]] : tensor<1x1x33xf32>, tensor<1x1xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] : tensor<1x1x33xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]], %[[W]] : tensor<1x1x33xf32>, tensor<1x1xf32>, tensor<33xf32>)
// CHECK: %[[E2:.*]] = tensor.insert_slice %[[EXP]] into %[[E]][%[[K]], %[[J]], 0] [1, 1, 33]
// CHECK: %[[Y2:.*]] = tensor.insert_slice %[[OUT]] into %[[Y]][%[[K]], %[[J]], 0] [1, 1, 33]
// CHECK: scf.yield %[[E2]], %[[Y2]]
// CHECK: } {mlirc.parallel_loop}
// CHECK: return %[[R]]#0, %[[R]]#1
// CHECK-NOT: func.func @kernel_0
// CHECK-NOT: func.func @kernel_3
// CHECK-LABEL: func.func @kernel_4
func.func @kernel_0(%x: tensor<5x7x33xf32>) -> tensor<5x7xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<5x7xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<5x7x33xf32>) outs(%f : tensor<5x7xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.maximumf %a, %out : f32
    linalg.yield %m : f32
  } -> tensor<5x7xf32>
  return %r : tensor<5x7xf32>
}
func.func @kernel_1(%x: tensor<5x7x33xf32>, %m: tensor<5x7xf32>) -> tensor<5x7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5x7x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m : tensor<5x7x33xf32>, tensor<5x7xf32>) outs(%e : tensor<5x7x33xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    %x2 = math.exp %s : f32
    linalg.yield %x2 : f32
  } -> tensor<5x7x33xf32>
  return %r : tensor<5x7x33xf32>
}
func.func @kernel_2(%x: tensor<5x7x33xf32>) -> tensor<5x7xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<5x7x33xf32>) outs(%f : tensor<5x7xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<5x7xf32>
  return %r : tensor<5x7xf32>
}
func.func @kernel_3(%x: tensor<5x7x33xf32>, %s: tensor<5x7xf32>, %w: tensor<33xf32>) -> tensor<5x7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5x7x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #w, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %s, %w : tensor<5x7x33xf32>, tensor<5x7xf32>, tensor<33xf32>) outs(%e : tensor<5x7x33xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %out: f32):
    %d = arith.divf %a, %b : f32
    %y = arith.mulf %d, %c : f32
    linalg.yield %y : f32
  } -> tensor<5x7x33xf32>
  return %r : tensor<5x7x33xf32>
}
// Reads the exponentials transposed: not in place, so it stays its own kernel.
func.func @kernel_4(%x: tensor<5x7x33xf32>) -> tensor<5x33x7xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5x33x7xf32>
  %r = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<5x7x33xf32>) outs(%e : tensor<5x33x7xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<5x33x7xf32>
  return %r : tensor<5x33x7xf32>
}

// CHECK-LABEL: func.func @main
// CHECK: %[[G:.*]]:2 = call @rows_0(%{{.*}}, %{{.*}}) : (tensor<5x7x33xf32>, tensor<33xf32>) -> (tensor<5x7x33xf32>, tensor<5x7x33xf32>)
// CHECK: call @kernel_4(%[[G]]#0)
// CHECK: return %[[G]]#1
func.func @main(%x: tensor<5x7x33xf32>, %w: tensor<33xf32>) -> (tensor<5x7x33xf32>, tensor<5x33x7xf32>) attributes {mlirc.entry} {
  %0 = call @kernel_0(%x) : (tensor<5x7x33xf32>) -> tensor<5x7xf32>
  %1 = call @kernel_1(%x, %0) : (tensor<5x7x33xf32>, tensor<5x7xf32>) -> tensor<5x7x33xf32>
  %2 = call @kernel_2(%1) : (tensor<5x7x33xf32>) -> tensor<5x7xf32>
  %3 = call @kernel_3(%1, %2, %w) : (tensor<5x7x33xf32>, tensor<5x7xf32>, tensor<33xf32>) -> tensor<5x7x33xf32>
  %4 = call @kernel_4(%1) : (tensor<5x7x33xf32>) -> tensor<5x33x7xf32>
  return %3, %4 : tensor<5x7x33xf32>, tensor<5x33x7xf32>
}

// A classifier head: a narrow linear layer (13 rows of 3 logits, K = 17, as
// mlirc-cpu-skinny-matmul leaves it) with its bias add and row max.  The
// contraction starts the group: each row computes its 3 dot products from its
// row of x and the whole weight, then the bias and the max, in one loop.
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#wt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#rowv = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @rows_1(
// CHECK-SAME: %[[HX:[a-z0-9]+]]: tensor<13x17xf32>, %[[HW:[a-z0-9]+]]: tensor<3x17xf32>, %[[HB:[a-z0-9]+]]: tensor<3xf32>) -> tensor<13xf32>
// CHECK: scf.for %[[HI:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[HXR:.*]] = tensor.extract_slice %[[HX]][%[[HI]], 0] [1, 17] [1, 1]
// CHECK: %[[DOT:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[HXR]], %[[HW]] : tensor<1x17xf32>, tensor<3x17xf32>) outs(%{{.*}} : tensor<1x3xf32>)
// CHECK: %[[BIASED:.*]] = linalg.generic {{.*}} ins(%[[DOT]], %[[HB]] : tensor<1x3xf32>, tensor<3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[BIASED]] : tensor<1x3xf32>) outs(%{{.*}} : tensor<1xf32>)
// CHECK: } {mlirc.parallel_loop}
// CHECK-NOT: func.func @kernel_10
// CHECK-NOT: func.func @kernel_11
// CHECK-NOT: func.func @kernel_12
func.func @kernel_10(%x: tensor<13x17xf32>, %w: tensor<3x17xf32>) -> tensor<13x3xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<13x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<13x3xf32>) -> tensor<13x3xf32>
  %r = linalg.generic {indexing_maps = [#a, #wt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<13x17xf32>, tensor<3x17xf32>) outs(%f : tensor<13x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<13x3xf32>
  return %r : tensor<13x3xf32>
}
func.func @kernel_11(%y: tensor<13x3xf32>, %b: tensor<3xf32>) -> tensor<13x3xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<13x3xf32>
  %r = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%y, %b : tensor<13x3xf32>, tensor<3xf32>) outs(%e : tensor<13x3xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<13x3xf32>
  return %r : tensor<13x3xf32>
}
func.func @kernel_12(%y: tensor<13x3xf32>) -> tensor<13xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<13xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<13xf32>) -> tensor<13xf32>
  %r = linalg.generic {indexing_maps = [#id2, #rowv], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<13x3xf32>) outs(%f : tensor<13xf32>) {
  ^bb0(%p: f32, %out: f32):
    %m = arith.maximumf %p, %out : f32
    linalg.yield %m : f32
  } -> tensor<13xf32>
  return %r : tensor<13xf32>
}

// CHECK-LABEL: func.func @head
// CHECK: %[[HR:.*]] = call @rows_1(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<13x17xf32>, tensor<3x17xf32>, tensor<3xf32>) -> tensor<13xf32>
// CHECK: return %[[HR]]
func.func @head(%x: tensor<13x17xf32>, %w: tensor<3x17xf32>, %b: tensor<3xf32>) -> tensor<13xf32> attributes {mlirc.entry} {
  %0 = call @kernel_10(%x, %w) : (tensor<13x17xf32>, tensor<3x17xf32>) -> tensor<13x3xf32>
  %1 = call @kernel_11(%0, %b) : (tensor<13x3xf32>, tensor<3xf32>) -> tensor<13x3xf32>
  %2 = call @kernel_12(%1) : (tensor<13x3xf32>) -> tensor<13xf32>
  return %2 : tensor<13xf32>
}

// Rows of a collapsed slice (a loss over logits[:, :-1], 3 x 7 of 3 x 8 rows): each
// row is sliced from the slice before the collapse, its index delinearized, and
// collapsed alone.  Cut after the collapse, bufferization copied the whole slice
// before the loop (no view merges its strided dims), and that copy kept the kernel
// off threads.
// CHECK-LABEL: func.func @rows_2(
// CHECK: %[[S:.*]] = tensor.extract_slice %arg0[0, 0, 0] [3, 7, 11] [1, 1, 1]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c21
// CHECK: %[[T:.*]] = arith.remui %[[I]], %c7
// CHECK: %[[Q:.*]] = arith.divui %[[I]], %c7
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[S]][%[[Q]], %[[T]], 0] [1, 1, 11] [1, 1, 1]
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[ROW]] {{\[}}[0, 1], [2]] : tensor<1x1x11xf32> into tensor<1x11xf32>
// CHECK: linalg.generic {{.*}} ins(%[[R]] : tensor<1x11xf32>)
// CHECK: } {mlirc.parallel_loop}
func.func @kernel_20(%l: tensor<3x8x11xf32>) -> tensor<21xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %s = tensor.extract_slice %l[0, 0, 0] [3, 7, 11] [1, 1, 1] : tensor<3x8x11xf32> to tensor<3x7x11xf32>
  %c = tensor.collapse_shape %s [[0, 1], [2]] : tensor<3x7x11xf32> into tensor<21x11xf32>
  %e = tensor.empty() : tensor<21xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<21xf32>) -> tensor<21xf32>
  %r = linalg.generic {indexing_maps = [#id2, #rowv], iterator_types = ["parallel", "reduction"]} ins(%c : tensor<21x11xf32>) outs(%f : tensor<21xf32>) {
  ^bb0(%p: f32, %out: f32):
    %m = arith.maximumf %p, %out : f32
    linalg.yield %m : f32
  } -> tensor<21xf32>
  return %r : tensor<21xf32>
}
func.func @kernel_21(%l: tensor<3x8x11xf32>, %m: tensor<21xf32>) -> tensor<21x11xf32> attributes {mlirc.kernel} {
  %s = tensor.extract_slice %l[0, 0, 0] [3, 7, 11] [1, 1, 1] : tensor<3x8x11xf32> to tensor<3x7x11xf32>
  %c = tensor.collapse_shape %s [[0, 1], [2]] : tensor<3x7x11xf32> into tensor<21x11xf32>
  %e = tensor.empty() : tensor<21x11xf32>
  %r = linalg.generic {indexing_maps = [#id2, #rowv, #id2], iterator_types = ["parallel", "parallel"]} ins(%c, %m : tensor<21x11xf32>, tensor<21xf32>) outs(%e : tensor<21x11xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %d = arith.subf %p, %q : f32
    linalg.yield %d : f32
  } -> tensor<21x11xf32>
  return %r : tensor<21x11xf32>
}
func.func @shifted(%l: tensor<3x8x11xf32>) -> tensor<21x11xf32> attributes {mlirc.entry} {
  %0 = call @kernel_20(%l) : (tensor<3x8x11xf32>) -> tensor<21xf32>
  %1 = call @kernel_21(%l, %0) : (tensor<3x8x11xf32>, tensor<21xf32>) -> tensor<21x11xf32>
  return %1 : tensor<21x11xf32>
}
