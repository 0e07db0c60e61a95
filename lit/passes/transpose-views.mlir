// RUN: mlirc-opt %s -p mlirc-transpose-views | FileCheck %s

// A transpose kernel read only by GEMM library kernels becomes a host view; one that
// a generated kernel also reads, or one that does more than move data, stays a kernel.
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-LABEL: func.func @kernel_0
// CHECK-SAME: mlirc.library = "permute", mlirc.perm = array<i64: 1, 0>
func.func @kernel_0(%w: tensor<8x16xf32>) -> tensor<16x8xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @kernel_1
// CHECK-NOT: mlirc.perm
func.func @kernel_1(%w: tensor<8x16xf32>) -> tensor<16x8xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @kernel_2
// CHECK-NOT: mlirc.perm
func.func @kernel_2(%w: tensor<8x16xf32>) -> tensor<16x8xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

func.func @library_0(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

func.func @kernel_3(%a: tensor<16x8xf32>) -> tensor<16x8xf32> attributes {mlirc.kernel} {
  return %a : tensor<16x8xf32>
}

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<16x8xf32>) attributes {mlirc.entry} {
  %wt = call @kernel_0(%w) : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = call @library_0(%x, %wt) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wn = call @kernel_1(%w) : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %z = call @library_0(%x, %wn) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %wt2 = call @kernel_2(%w) : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %u = call @library_0(%x, %wt2) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %v = call @kernel_3(%wt2) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  return %y, %z, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<16x8xf32>
}

// Formed on `?` dims, a transpose kernel reads its sizes off its argument for its
// result: still a pure transpose, and a view.
// CHECK-LABEL: func.func @kernel_4
// CHECK-SAME: mlirc.library = "permute", mlirc.perm = array<i64: 1, 0>
func.func @kernel_4(%w: tensor<?x16xf32>) -> tensor<16x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %w, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<16x?xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<?x16xf32>) outs(%e : tensor<16x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x?xf32>
  return %t : tensor<16x?xf32>
}

func.func @library_1(%a: tensor<4x16xf32>, %b: tensor<16x?xf32>) -> tensor<4x?xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %b, %c1 : tensor<16x?xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<4x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x?xf32>) -> tensor<4x?xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x?xf32>) outs(%f : tensor<4x?xf32>) -> tensor<4x?xf32>
  return %c : tensor<4x?xf32>
}

func.func @symbolic(%x: tensor<4x16xf32>, %w: tensor<?x16xf32>) -> tensor<4x?xf32> attributes {mlirc.entry} {
  %wt = call @kernel_4(%w) : (tensor<?x16xf32>) -> tensor<16x?xf32>
  %y = call @library_1(%x, %wt) : (tensor<4x16xf32>, tensor<16x?xf32>) -> tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// A transpose of its argument's reshape (a weight gradient's [b, t, k] activations
// read as [b*t, k]): the reshape moves to the caller, a host view, and the kernel
// becomes a permute view too.
// CHECK-LABEL: func.func @kernel_reshaped
// CHECK-SAME: (%{{.*}}: tensor<12x8xf32>) -> tensor<8x12xf32>
// CHECK-SAME: mlirc.library = "permute", mlirc.perm = array<i64: 1, 0>
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
func.func @kernel_reshaped(%x: tensor<3x4x8xf32>) -> tensor<8x12xf32> attributes {mlirc.kernel} {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<3x4x8xf32> into tensor<12x8xf32>
  %e = tensor.empty() : tensor<8x12xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<12x8xf32>) outs(%e : tensor<8x12xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x12xf32>
  return %t : tensor<8x12xf32>
}

func.func @mm_reshaped(%a: tensor<8x12xf32>, %b: tensor<12x5xf32>) -> tensor<8x5xf32> attributes {mlirc.kernel, mlirc.library = "mm"} {
  %e = tensor.empty() : tensor<8x5xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x5xf32>) -> tensor<8x5xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x12xf32>, tensor<12x5xf32>) outs(%f : tensor<8x5xf32>) -> tensor<8x5xf32>
  return %r : tensor<8x5xf32>
}

// CHECK-LABEL: func.func @weight_gradient
// CHECK: %[[V:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<3x4x8xf32> into tensor<12x8xf32>
// CHECK: %[[T:.*]] = call @kernel_reshaped(%[[V]])
// CHECK: call @mm_reshaped(%[[T]]
func.func @weight_gradient(%x: tensor<3x4x8xf32>, %g: tensor<12x5xf32>) -> tensor<8x5xf32> attributes {mlirc.entry} {
  %t = call @kernel_reshaped(%x) : (tensor<3x4x8xf32>) -> tensor<8x12xf32>
  %w = call @mm_reshaped(%t, %g) : (tensor<8x12xf32>, tensor<12x5xf32>) -> tensor<8x5xf32>
  return %w : tensor<8x5xf32>
}

// Its size taken off another argument, placed first (form-kernels after CSE: a weight
// gradient's activations transposed, the batch size read from the loss gradient): a
// "permute" view is of the call's first operand, which is not what it transposes, so
// it stays a kernel.  As a view it had returned [4, s] for a [32, 20] weight gradient.
// CHECK-LABEL: func.func @kernel_sized_by_another
// CHECK-NOT: mlirc.perm
func.func @kernel_sized_by_another(%g: tensor<?x4xf32>, %h: tensor<?x32xf32>) -> tensor<32x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %g, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<32x?xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<?x32xf32>) outs(%e : tensor<32x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<32x?xf32>
  return %t : tensor<32x?xf32>
}

func.func @library_2(%a: tensor<32x?xf32>, %b: tensor<?x20xf32>) -> tensor<32x20xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x20xf32>) -> tensor<32x20xf32>
  %c = linalg.matmul ins(%a, %b : tensor<32x?xf32>, tensor<?x20xf32>) outs(%f : tensor<32x20xf32>) -> tensor<32x20xf32>
  return %c : tensor<32x20xf32>
}

func.func @sized_by_another(%g: tensor<?x4xf32>, %h: tensor<?x32xf32>, %x: tensor<?x20xf32>) -> tensor<32x20xf32> attributes {mlirc.entry} {
  %ht = call @kernel_sized_by_another(%g, %h) : (tensor<?x4xf32>, tensor<?x32xf32>) -> tensor<32x?xf32>
  %w = call @library_2(%ht, %x) : (tensor<32x?xf32>, tensor<?x20xf32>) -> tensor<32x20xf32>
  return %w : tensor<32x20xf32>
}
