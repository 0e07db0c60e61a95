// RUN: mlirc-opt %s --split-input-file -p mlirc-resolve-call-dims | FileCheck %s

// A library bmm's result is sized by its first operand's dims 0 and 1 (through the
// fill and the empty it writes into): the sizes read off the result are read off
// that operand at the call.  A static dim is never a `tensor.dim` to resolve.
// CHECK-LABEL: func.func @sizes_of_a_call
// CHECK: %[[R:.*]] = call @library_0(%arg0, %arg1)
// CHECK-NOT: tensor.dim %[[R]]
// CHECK: %[[N:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x?x?xf32>
// CHECK: %[[M:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x?x?xf32>
// CHECK: return %[[N]], %[[M]]
func.func private @library_0(%a: tensor<?x?x?xf32>, %b: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> attributes {mlirc.kernel, mlirc.library = "bmm"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %d0 = tensor.dim %a, %c0 : tensor<?x?x?xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<?x?x?xf32>, tensor<?x?x16xf32>) outs(%f : tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %r : tensor<?x?x16xf32>
}
func.func @sizes_of_a_call(%a: tensor<?x?x?xf32>, %b: tensor<?x?x16xf32>) -> (index, index) attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = call @library_0(%a, %b) : (tensor<?x?x?xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %n = tensor.dim %r, %c0 : tensor<?x?x16xf32>
  %m = tensor.dim %r, %c1 : tensor<?x?x16xf32>
  return %n, %m : index, index
}

// -----

// A size the callee computes (a sum of two dims) is not an operand's dim: the read
// stays on the result.
// CHECK-LABEL: func.func @computed_size
// CHECK: %[[R:.*]] = call @concat
// CHECK: tensor.dim %[[R]]
func.func private @concat(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %m = tensor.dim %b, %c0 : tensor<?xf32>
  %s = arith.addi %n, %m : index
  %e = tensor.empty(%s) : tensor<?xf32>
  return %e : tensor<?xf32>
}
func.func @computed_size(%a: tensor<?xf32>, %b: tensor<?xf32>) -> index attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %r = call @concat(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %n = tensor.dim %r, %c0 : tensor<?xf32>
  return %n : index
}
