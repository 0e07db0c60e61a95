// RUN: mlirc-opt %s -p mlirc-gpu-fuse-rows | FileCheck %s

// Softmax's four kernels over rows of 33 become one row kernel; the row max, the
// exponentials and the row sums stay inside it.  The exponentials are also read
// after the group, so the fused kernel returns them too.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-LABEL: func.func @rows_0(%{{.*}}: tensor<7x33xf32>) -> (tensor<7x33xf32>, tensor<7x33xf32>)
// CHECK-SAME: mlirc.gpu.rows = 1 : i64, mlirc.kernel
// CHECK-COUNT-4: linalg.generic
// CHECK: return
// CHECK-NOT: func.func @kernel_0
// CHECK-NOT: func.func @kernel_3
// CHECK-LABEL: func.func @kernel_4
func.func @kernel_0(%x: tensor<7x33xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<7xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x33xf32>) outs(%f : tensor<7xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.maximumf %a, %out : f32
    linalg.yield %m : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}
func.func @kernel_1(%x: tensor<7x33xf32>, %m: tensor<7xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<7x33xf32>, tensor<7xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    %x2 = math.exp %s : f32
    linalg.yield %x2 : f32
  } -> tensor<7x33xf32>
  return %r : tensor<7x33xf32>
}
func.func @kernel_2(%x: tensor<7x33xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x33xf32>) outs(%f : tensor<7xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}
func.func @kernel_3(%x: tensor<7x33xf32>, %s: tensor<7xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<7x33xf32>, tensor<7xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<7x33xf32>
  return %r : tensor<7x33xf32>
}
// Reads the exponentials transposed: not in place, so it stays its own kernel.
func.func @kernel_4(%x: tensor<7x33xf32>) -> tensor<33x7xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<33x7xf32>
  %r = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x33xf32>) outs(%e : tensor<33x7xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<33x7xf32>
  return %r : tensor<33x7xf32>
}

// CHECK-LABEL: func.func @main
// CHECK: %[[G:.*]]:2 = call @rows_0(%{{.*}}) : (tensor<7x33xf32>) -> (tensor<7x33xf32>, tensor<7x33xf32>)
// CHECK: call @kernel_4(%[[G]]#0)
// CHECK: return %[[G]]#1
func.func @main(%x: tensor<7x33xf32>) -> (tensor<7x33xf32>, tensor<33x7xf32>) attributes {mlirc.entry} {
  %0 = call @kernel_0(%x) : (tensor<7x33xf32>) -> tensor<7xf32>
  %1 = call @kernel_1(%x, %0) : (tensor<7x33xf32>, tensor<7xf32>) -> tensor<7x33xf32>
  %2 = call @kernel_2(%1) : (tensor<7x33xf32>) -> tensor<7xf32>
  %3 = call @kernel_3(%1, %2) : (tensor<7x33xf32>, tensor<7xf32>) -> tensor<7x33xf32>
  %4 = call @kernel_4(%1) : (tensor<7x33xf32>) -> tensor<33x7xf32>
  return %3, %4 : tensor<7x33xf32>, tensor<33x7xf32>
}

// A batch norm's statistics, in small: the per-channel work after a sum joins its
// group though the sum's result is reshaped for the return between them; the reshape
// moves after the group's call.  A member reading a member's result through a reshape
// would not read it where it was written: that one stays out.
// CHECK-LABEL: func.func @rows_1(%{{.*}}: tensor<5x9xf32>) -> (tensor<5xf32>, tensor<5xf32>)
// CHECK-LABEL: func.func @statistics
// CHECK-NEXT: %[[G:.*]]:2 = call @rows_1(%arg0)
// CHECK-NEXT: %[[R:.*]] = tensor.expand_shape %[[G]]#0
// CHECK-NEXT: call @row_of_reshaped(%[[R]])
// CHECK-NEXT: return %[[R]], %[[G]]#1
func.func @channel_sum(%x: tensor<5x9xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<5x9xf32>) outs(%f : tensor<5xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @inverse(%s: tensor<5xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<5xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%a: f32, %out: f32):
    %i = math.rsqrt %a : f32
    linalg.yield %i : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @row_of_reshaped(%s: tensor<5x1xf32>) -> tensor<5xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, 0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<5x1xf32>) outs(%e : tensor<5xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @statistics(%x: tensor<5x9xf32>) -> (tensor<5x1xf32>, tensor<5xf32>) attributes {mlirc.entry} {
  %0 = call @channel_sum(%x) : (tensor<5x9xf32>) -> tensor<5xf32>
  %r = tensor.expand_shape %0 [[0, 1]] output_shape [5, 1] : tensor<5xf32> into tensor<5x1xf32>
  %1 = call @inverse(%0) : (tensor<5xf32>) -> tensor<5xf32>
  %2 = call @row_of_reshaped(%r) : (tensor<5x1xf32>) -> tensor<5xf32>
  return %r, %1 : tensor<5x1xf32>, tensor<5xf32>
}
