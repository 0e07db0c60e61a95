// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise | FileCheck %s

// A chain of elementwise ops becomes one generic.
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.exp
// CHECK: math.tanh
func.func @chain(%a: tensor<7x33xf32>, %b: tensor<33xf32>) -> tensor<7x33xf32> {
  %0 = "mlirc.add"(%a, %b) : (tensor<7x33xf32>, tensor<33xf32>) -> tensor<7x33xf32>
  %1 = "mlirc.exp"(%0) : (tensor<7x33xf32>) -> tensor<7x33xf32>
  %2 = "mlirc.tanh"(%1) : (tensor<7x33xf32>) -> tensor<7x33xf32>
  return %2 : tensor<7x33xf32>
}
