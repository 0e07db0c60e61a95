// RUN: mlirc-opt %s --split-input-file -p "mlirc-outline-library-calls{bias-in-gemm=0}" | FileCheck %s

// The GPU backend's options for this pass (mlirc.backends.gpu.PASS_OPTIONS).

// The GPU keeps a half-type GEMM's bias add outside (its epilogues are fused there).
// CHECK-LABEL: func.func @library_0
// CHECK-SAME: mlirc.library = "mm"
// CHECK-LABEL: func.func @on_the_gpu
// CHECK: "mlirc.add"
module attributes {mlirc.target = "cuda"} {
  func.func @on_the_gpu(%a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>, %bias: tensor<8xbf16>) -> tensor<4x8xbf16> attributes {mlirc.entry} {
    %0 = "mlirc.matmul"(%a, %b) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
    %1 = "mlirc.add"(%0, %bias) {mlirc.addmm_bias} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
    return %1 : tensor<4x8xbf16>
  }
}
