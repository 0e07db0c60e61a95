// RUN: mlirc-opt %s -p mlirc-split-reductions{assume-short-sums=1} | FileCheck %s
// RUN: mlirc-opt %s -p mlirc-split-reductions{assume-short-sums=1},mlirc-bind-sizes{sizes=3,2048,40,3,1} | FileCheck %s --check-prefix=HOLDS
// RUN: %not mlirc-opt %s -p mlirc-split-reductions{assume-short-sums=1},mlirc-bind-sizes{sizes=3,2049,40,3,1} 2>&1 | FileCheck %s --check-prefix=BROKEN
// RUN: %not mlirc-opt %s -p mlirc-split-reductions{assume-short-sums=1},mlirc-bind-sizes{sizes=8,3,129,3,2} 2>&1 | FileCheck %s --check-prefix=BROKEN

// Sums over `?` lengths compiled unsplit, each under an assertion that no split was
// due: a softmax's row sum (contiguous: up to 2048 values), and a sum over a dim
// with `?` dims after it (short as a strided sum, up to 128, or contiguous where
// those dims are all 1).  mlirc-bind-sizes erases the assertions that hold and
// refuses sizes that break one.
// CHECK-LABEL: func.func @rows_and_columns
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[ROW:.*]] = arith.cmpi ule, %[[N]], %c2048
// CHECK: cf.assert %[[ROW]]
// CHECK: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = true}
// CHECK: %[[K:.*]] = tensor.dim %arg1, %c1
// CHECK: %[[LATER:.*]] = arith.muli
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[LATER]], %c1
// CHECK: %[[LONG:.*]] = arith.cmpi ule, %[[K]], %c2048
// CHECK: %[[CONTIGUOUS:.*]] = arith.andi %[[ONE]], %[[LONG]]
// CHECK: %[[STRIDED:.*]] = arith.cmpi ule, %[[K]], %c128
// CHECK: %[[SHORT:.*]] = arith.ori %[[STRIDED]], %[[CONTIGUOUS]]
// CHECK: cf.assert %[[SHORT]]
// CHECK-NOT: mlirc.deferred
// HOLDS-LABEL: func.func @rows_and_columns
// HOLDS-NOT: cf.assert
// HOLDS: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = true} : (tensor<3x2048xf32>)
// HOLDS: "mlirc.reduce_sum"(%arg1) {dims = array<i64: 1>, keepdim = false} : (tensor<2x40x3x1xf32>)
// BROKEN: 'mlirc-bind-sizes' failed: at sizes [{{.*}}]: mlirc-split-reductions: a sum of symbolic length was compiled unsplit
func.func @rows_and_columns(%a: tensor<?x?xf32>, %b: tensor<2x?x?x?xf32>)
    -> (tensor<?x1xf32>, tensor<2x?x?xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
  %1 = "mlirc.reduce_sum"(%b) {dims = array<i64: 1>, keepdim = false} : (tensor<2x?x?x?xf32>) -> tensor<2x?x?xf32>
  return %0, %1 : tensor<?x1xf32>, tensor<2x?x?xf32>
}
