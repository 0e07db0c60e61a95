// RUN: mlirc-opt %s -p 'mlirc-bind-sizes{sizes=4,4,5,5 keep-kernel-arguments=1}' | FileCheck %s
// RUN: mlirc-opt %s -p 'mlirc-bind-sizes{sizes=4,4,5,5}' | FileCheck %s --check-prefix=OWN

// A kernel called at two sizes is copied for its second caller.  Bound for kernels
// compiled for every size (keep-kernel-arguments), the copy names its original,
// which the host wrapper calls, and every kernel keeps the arguments it reads only
// for sizes; bound for a size's own kernels, the copy is a kernel of its own and
// such arguments go.
// CHECK-LABEL: func.func private @copy_rows(%{{.*}}: tensor<5x16xf32>, %{{.*}}: tensor<5x8xf32>)
// CHECK-NOT: mlirc.origin
// CHECK-LABEL: func.func @two_callers
// CHECK: call @copy_rows_1(%{{.*}}, %{{.*}}) : (tensor<4x16xf32>, tensor<4x8xf32>)
// CHECK: call @copy_rows(%{{.*}}, %{{.*}}) : (tensor<5x16xf32>, tensor<5x8xf32>)
// CHECK-LABEL: func.func private @copy_rows_1(%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<4x8xf32>)
// CHECK-SAME: mlirc.origin = "copy_rows"
// OWN-LABEL: func.func private @copy_rows(%{{.*}}: tensor<5x16xf32>) -> tensor<5x16xf32>
// OWN: call @copy_rows_1(%{{.*}}) : (tensor<4x16xf32>)
// OWN-LABEL: func.func private @copy_rows_1(
// OWN-NOT: mlirc.origin
func.func private @copy_rows(%a: tensor<?x16xf32>, %size: tensor<?x8xf32>) -> tensor<?x16xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %size, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%rows) : tensor<?x16xf32>
  %r = linalg.copy ins(%a : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
func.func @two_callers(%x: tensor<?x16xf32>, %sx: tensor<?x8xf32>, %y: tensor<?x16xf32>, %sy: tensor<?x8xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) attributes {mlirc.entry} {
  %0 = call @copy_rows(%x, %sx) : (tensor<?x16xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  %1 = call @copy_rows(%y, %sy) : (tensor<?x16xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}
