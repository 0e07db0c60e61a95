// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise,mlirc-form-kernels | FileCheck %s

// Each op left after fusion becomes a kernel; exp(x - max) has two users, so
// upstream fusion keeps it as its own kernel rather than recomputing it.  The
// reductions' kernels return the reduced shape; keepdim's reshape is a host view.
// CHECK: func.func @kernel_0({{.*}}) -> tensor<7xf32> attributes {mlirc.kernel}
// CHECK: linalg.generic
// CHECK: func.func @kernel_1({{.*}}) -> tensor<7x129xf32> attributes {mlirc.kernel}
// CHECK: math.exp
// CHECK: func.func @kernel_2({{.*}}) -> tensor<7xf32> attributes {mlirc.kernel}
// CHECK: func.func @kernel_3({{.*}}) -> tensor<7x129xf32> attributes {mlirc.kernel}
// CHECK-LABEL: func.func @softmax
// CHECK: call @kernel_0
// CHECK: call @kernel_1
// CHECK: call @kernel_2
// CHECK: call @kernel_3
// CHECK: return
func.func @softmax(%x: tensor<7x129xf32>) -> tensor<7x129xf32> attributes {mlirc.entry} {
  %m = "mlirc.reduce_max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<7x129xf32>) -> tensor<7x1xf32>
  %s = "mlirc.sub"(%x, %m) : (tensor<7x129xf32>, tensor<7x1xf32>) -> tensor<7x129xf32>
  %e = "mlirc.exp"(%s) : (tensor<7x129xf32>) -> tensor<7x129xf32>
  %t = "mlirc.reduce_sum"(%e) {dims = array<i64: 1>, keepdim = true} : (tensor<7x129xf32>) -> tensor<7x1xf32>
  %r = "mlirc.div"(%e, %t) : (tensor<7x129xf32>, tensor<7x1xf32>) -> tensor<7x129xf32>
  return %r : tensor<7x129xf32>
}
