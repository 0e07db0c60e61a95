// RUN: mlirc-opt %s -p 'mlirc-stage-cpu{vector-bytes=32}' --emit-llvm | FileCheck %s
// RUN: %not mlirc-opt %s --emit-llvm 2>&1 | FileCheck %s --check-prefix=NOT-LLVM

// The last step of the CPU backend, re-enterable: LLVM IR as llvmlite gets it (the
// compile driver dumps it as <region>.llvm.ll).  The entry is not compiled.
// CHECK: define void @kernel_0(ptr %0, ptr %1)
// CHECK: fadd <8 x float>
// CHECK-NOT: @main

// Input not yet in the LLVM dialect: a diagnostic naming what is left.
// NOT-LLVM: emit-llvm.mlir:1:1: error: mlirc pass 'mlirc-emit-llvm' failed: ops left unconverted to the LLVM dialect: func.func, tensor.empty, linalg.generic
#map = affine_map<(d0) -> (d0)>
func.func @kernel_0(%a: tensor<16xf32>) -> tensor<16xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @main(%a: tensor<16xf32>) -> tensor<16xf32> attributes {mlirc.entry} {
  %0 = call @kernel_0(%a) : (tensor<16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
