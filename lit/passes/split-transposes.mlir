// RUN: mlirc-opt %s -p mlirc-split-transposes | FileCheck %s

// A cast written transposed for a GEMM (autocast's weight: mm(x, w.to(bf16).t()))
// computes in the weight's order, and a pure transpose kernel follows for the GEMM;
// a transpose back of the same result (the weight saved for the backward) reads the
// cast directly.  A kernel a generated kernel also reads stays as it is.
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// CHECK-LABEL: func.func @kernel_cast_t_transposed
// CHECK-SAME: (%{{.*}}: tensor<8x16xbf16>) -> tensor<16x8xbf16>
// CHECK: linalg.yield %in : bf16

// CHECK-LABEL: func.func @kernel_cast_t
// CHECK-SAME: (%{{.*}}: tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK: indexing_maps = [#[[ID:.*]], #[[ID]]]
// CHECK: arith.truncf
func.func @kernel_cast_t(%w: tensor<8x16xf32>) -> tensor<16x8xbf16> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xbf16>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %c = arith.truncf %in : f32 to bf16
    linalg.yield %c : bf16
  } -> tensor<16x8xbf16>
  return %t : tensor<16x8xbf16>
}

// CHECK-NOT: func.func @kernel_back
func.func @kernel_back(%a: tensor<16x8xbf16>) -> tensor<8x16xbf16> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<8x16xbf16>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x8xbf16>) outs(%e : tensor<8x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<8x16xbf16>
  return %t : tensor<8x16xbf16>
}

// CHECK-LABEL: func.func @kernel_also_read
// CHECK-SAME: -> tensor<16x8xbf16>
// CHECK: indexing_maps = [#{{.*}}, #{{.*}}]
func.func @kernel_also_read(%w: tensor<8x16xf32>) -> tensor<16x8xbf16> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xbf16>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %c = arith.truncf %in : f32 to bf16
    linalg.yield %c : bf16
  } -> tensor<16x8xbf16>
  return %t : tensor<16x8xbf16>
}

func.func @kernel_neg(%a: tensor<16x8xbf16>) -> tensor<16x8xbf16> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xbf16>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x8xbf16>) outs(%e : tensor<16x8xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %n = arith.negf %in : bf16
    linalg.yield %n : bf16
  } -> tensor<16x8xbf16>
  return %t : tensor<16x8xbf16>
}

func.func @library_0(%a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>) -> tensor<4x8xbf16> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x8xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%f : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %c : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = call @kernel_cast_t(%{{.*}}) : (tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK-NEXT: %[[WT:.*]] = call @kernel_cast_t_transposed(%[[W]])
// CHECK-NEXT: %[[Y:.*]] = call @library_0(%{{.*}}, %[[WT]])
// CHECK-NOT: call @kernel_back
// CHECK: %[[A:.*]] = call @kernel_also_read(%{{.*}}) : (tensor<8x16xf32>) -> tensor<16x8xbf16>
// CHECK: return %[[Y]], %[[W]],
func.func @main(%x: tensor<4x16xbf16>, %w: tensor<8x16xf32>, %v: tensor<8x16xf32>) -> (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x8xbf16>, tensor<16x8xbf16>) attributes {mlirc.entry} {
  %wt = call @kernel_cast_t(%w) : (tensor<8x16xf32>) -> tensor<16x8xbf16>
  %y = call @library_0(%x, %wt) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %saved = call @kernel_back(%wt) : (tensor<16x8xbf16>) -> tensor<8x16xbf16>
  %vt = call @kernel_also_read(%v) : (tensor<8x16xf32>) -> tensor<16x8xbf16>
  %z = call @library_0(%x, %vt) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %n = call @kernel_neg(%vt) : (tensor<16x8xbf16>) -> tensor<16x8xbf16>
  return %y, %saved, %z, %n : tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<4x8xbf16>, tensor<16x8xbf16>
}

// A pure transpose is no elementwise body: mlirc-transpose-views makes it a view as it is.
// CHECK-LABEL: func.func @kernel_pure
// CHECK-SAME: -> tensor<16x8xf32>
// CHECK-NOT: func.func @kernel_pure_transposed
func.func @kernel_pure(%w: tensor<8x16xf32>) -> tensor<16x8xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x8xf32>
  return %t : tensor<16x8xf32>
}

func.func @library_1(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

func.func @pure(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> attributes {mlirc.entry} {
  %wt = call @kernel_pure(%w) : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = call @library_1(%x, %wt) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
