// RUN: mlirc-opt %s -p mlirc-lower-to-linalg,mlirc-fuse-elementwise,mlirc-form-kernels | FileCheck %s

// mlirc.scatter_add stays to the backends and is a kernel of its own that writes
// over its destination (mlirc.in_place), which it takes as its first argument
// whatever order its operands are used in.  A destination that is a kernel's
// fresh result read by nothing else is taken as it is ...
// CHECK: func.func @[[SCATTER:kernel_[0-9]+]](%{{.*}}: tensor<9x4xf32>, %{{.*}}: tensor<5xi64>, %{{.*}}: tensor<5x4xf32>) -> tensor<9x4xf32> attributes {mlirc.in_place, mlirc.kernel}
// CHECK-NEXT: "mlirc.scatter_add"
// CHECK-LABEL: func.func @fresh_destination
// CHECK-SAME: (%[[I:.*]]: tensor<5xi64>, %[[V:.*]]: tensor<5x4xf32>, %[[X:.*]]: tensor<9x4xf32>)
// CHECK: %[[D:.*]] = call @kernel_{{[0-9]+}}(%[[X]])
// CHECK-NEXT: %[[S:.*]] = call @[[SCATTER]](%[[D]], %[[I]], %[[V]])
// CHECK-NEXT: return %[[S]]
func.func @fresh_destination(%i: tensor<5xi64>, %v: tensor<5x4xf32>, %x: tensor<9x4xf32>) -> tensor<9x4xf32> attributes {mlirc.entry} {
  %r = "mlirc.relu"(%x) : (tensor<9x4xf32>) -> tensor<9x4xf32>
  %s = "mlirc.scatter_add"(%r, %i, %v) : (tensor<9x4xf32>, tensor<5xi64>, tensor<5x4xf32>) -> tensor<9x4xf32>
  return %s : tensor<9x4xf32>
}

// ... an argument, or a value something else reads too, is copied first (by a
// kernel of its own: the copy is a root like any other; so is the returned
// argument, as every returned argument is).
// CHECK-LABEL: func.func @shared_destination
// CHECK-SAME: (%[[X2:.*]]: tensor<9x4xf32>, %[[I2:.*]]: tensor<5xi64>, %[[V2:.*]]: tensor<5x4xf32>)
// CHECK: %[[C:.*]] = call @kernel_{{[0-9]+}}(%[[X2]])
// CHECK-NEXT: %[[S2:.*]] = call @kernel_{{[0-9]+}}(%[[C]], %[[I2]], %[[V2]])
// CHECK-NEXT: call @kernel_{{[0-9]+}}(%[[X2]])
// CHECK-NEXT: return %[[S2]]
func.func @shared_destination(%x: tensor<9x4xf32>, %i: tensor<5xi64>, %v: tensor<5x4xf32>) -> (tensor<9x4xf32>, tensor<9x4xf32>) attributes {mlirc.entry} {
  %s = "mlirc.scatter_add"(%x, %i, %v) : (tensor<9x4xf32>, tensor<5xi64>, tensor<5x4xf32>) -> tensor<9x4xf32>
  return %s, %x : tensor<9x4xf32>, tensor<9x4xf32>
}
