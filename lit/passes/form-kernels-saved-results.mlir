// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise,mlirc-form-kernels | FileCheck %s

// A training forward's results from `mlirc.saved_results_from` on are read by the
// backward alone: an argument and a duplicate among them are returned as they are.
// Before that index they are the user's, each in a buffer of its own (copies).
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[R:.*]] = call @kernel_0(%[[X]])
// CHECK-NOT: call
// CHECK: return %[[R]], %[[X]], %[[R]]
func.func @forward(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) attributes {mlirc.entry, mlirc.saved_results_from = 1 : i64} {
  %r = "mlirc.relu"(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r, %x, %r : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// CHECK-LABEL: func.func @inference
// CHECK: %[[R2:.*]] = call @kernel_{{[0-9]+}}(
// CHECK: %[[C1:.*]] = call @kernel_{{[0-9]+}}(
// CHECK: %[[C2:.*]] = call @kernel_{{[0-9]+}}(
// CHECK: return %[[R2]], %[[C1]], %[[C2]]
func.func @inference(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) attributes {mlirc.entry} {
  %r = "mlirc.relu"(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r, %x, %r : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
