// RUN: mlirc-opt %s -p mlirc-library-calls | FileCheck %s

// A plain f32 GEMM kernel runs through torch.mm; the transpose feeding only GEMMs
// becomes a host view; a GEMM with a fused epilogue, or an integer one, stays generated.
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
// CHECK-SAME: mlirc.library = "torch.mm", mlirc.operands = array<i64: 0, 1>
func.func @kernel_1(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @kernel_2
// CHECK-NOT: mlirc.library
// CHECK: linalg.matmul
func.func @kernel_2(%a: tensor<4x16xi64>, %b: tensor<16x8xi64>) -> tensor<4x8xi64> attributes {mlirc.kernel} {
  %zero = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4x8xi64>
  %f = linalg.fill ins(%zero : i64) outs(%e : tensor<4x8xi64>) -> tensor<4x8xi64>
  %c = linalg.matmul ins(%a, %b : tensor<4x16xi64>, tensor<16x8xi64>) outs(%f : tensor<4x8xi64>) -> tensor<4x8xi64>
  return %c : tensor<4x8xi64>
}

// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> attributes {mlirc.entry} {
  %wt = call @kernel_0(%w) : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = call @kernel_1(%x, %wt) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
