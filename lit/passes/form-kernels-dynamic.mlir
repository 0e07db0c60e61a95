// RUN: mlirc-opt %s --split-input-file -p mlirc-lower-to-linalg,mlirc-fuse-elementwise,mlirc-form-kernels,canonicalize | FileCheck %s

// `?` dims: a kernel reads its sizes off its own operands (a `tensor.dim` of a value
// it takes is cloned in with the ops that use it), so the entry keeps only calls
// and views, as a static graph's does; a returned value that is not a kernel's own
// buffer is copied into one of its symbolic size.  The sum's size is x's (exp's
// result takes its sizes from x), so its kernel takes x for that alone: bound, the size is a constant and mlirc-bind-sizes drops it.
// CHECK-LABEL: func.func @kernel_0
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK-LABEL: func.func @kernel_1
// CHECK-SAME: (%[[SIZED:.*]]: tensor<?x8xf32>, %{{.*}}: tensor<?x8xf32>) -> tensor<?xf32>
// CHECK: tensor.dim %[[SIZED]], %c0
// CHECK-LABEL: func.func @kernel_2
// CHECK: linalg.copy {{.*}}ins(%{{.*}} : tensor<?x8xf32>) outs(%{{.*}} : tensor<?x8xf32>)
// CHECK-LABEL: func.func @rows
// CHECK-NOT: tensor.dim
// CHECK: %[[E:.*]] = call @kernel_0(%arg0)
// CHECK: %[[S:.*]] = call @kernel_1(%arg0, %[[E]])
// CHECK: %[[C:.*]] = call @kernel_2(%arg0)
// CHECK: return %[[E]], %[[S]], %[[C]]
func.func @rows(%x: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?xf32>, tensor<?x8xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.exp"(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %1 = "mlirc.reduce_sum"(%0) {dims = array<i64: 1>, keepdim = false} : (tensor<?x8xf32>) -> tensor<?xf32>
  return %0, %1, %x : tensor<?x8xf32>, tensor<?xf32>, tensor<?x8xf32>
}

// -----

// A size assertion (mlirc-split-reductions' assume-short-sums) stays on the host
// beside the calls: it has no results, it is there for its effect.
// CHECK-LABEL: func.func @asserted
// CHECK: %[[N:.*]] = tensor.dim %arg0
// CHECK: %[[SHORT:.*]] = arith.cmpi ule, %[[N]]
// CHECK: cf.assert %[[SHORT]], "short rows"
// CHECK: call @kernel_
func.func @asserted(%x: tensor<?x8xf32>) -> tensor<?xf32> attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %short = arith.cmpi ule, %n, %c2048 : index
  cf.assert %short, "short rows"
  %0 = "mlirc.reduce_sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<?x8xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
