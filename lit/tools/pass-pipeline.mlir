// RUN: mlirc-opt %s --pass-pipeline='builtin.module(mlirc-lower-to-linalg,func.func(canonicalize),mlirc-fuse-elementwise)' | FileCheck %s
// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise | FileCheck %s

// mlirc's Python passes and upstream passes (nested ones too) mix in one pipeline;
// the textual form and the -p list give the same result.
// CHECK-LABEL: func.func @f
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK-NEXT: math.exp
// CHECK-NEXT: linalg.yield
// CHECK-NOT: linalg.generic
func.func @f(%a: tensor<4x7xf32>) -> tensor<4x7xf32> {
  %0 = "mlirc.mul"(%a, %a) : (tensor<4x7xf32>, tensor<4x7xf32>) -> tensor<4x7xf32>
  %1 = "mlirc.exp"(%0) : (tensor<4x7xf32>) -> tensor<4x7xf32>
  return %1 : tensor<4x7xf32>
}
