// RUN: mlirc-opt %s -p mlirc-cpu-size-args | FileCheck %s

// A bufferized kernel of run-time sizes: each buffer with `?` dims becomes a
// pointer, its sizes follow every buffer as index arguments (each `?` dim of each
// buffer, in argument order), and the kernel rebuilds its buffers from them.  The
// sizes it read with memref.dim are now the arguments.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %[[A:.*]]: memref<f32>, %[[B:.*]]: memref<37xf32>, %[[OUT:.*]]: memref<f32>, %[[N:.*]]: index, %[[N2:.*]]: index)
// CHECK-SAME: mlirc.size_args = array<i64: 0, 0, 2, 0>
// CHECK: %[[ROWS:.*]] = memref.reinterpret_cast %[[A]] to offset: [0], sizes: [%[[N]], 37], strides: [37, 1] : memref<f32> to memref<?x37xf32>
// CHECK: memref.reinterpret_cast %[[OUT]] to offset: [0], sizes: [%[[N2]], 37], strides: [37, 1]
// CHECK-NOT: memref.dim
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
func.func @rows(%a: memref<?x37xf32>, %b: memref<37xf32>, %out: memref<?x37xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x37xf32>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i, %c0] : memref<?x37xf32>
    memref.store %x, %out[%i, %c0] : memref<?x37xf32>
  }
  return
}

// Two `?` dims of one buffer: the outer stride is the product of the inner sizes.
// CHECK-LABEL: func.func @plane(
// CHECK-SAME: %[[P:.*]]: memref<f32>, %[[D0:.*]]: index, %[[D1:.*]]: index)
// CHECK: %[[STRIDE:.*]] = arith.muli %{{.*}}, %[[D1]]
// CHECK: memref.reinterpret_cast %[[P]] to offset: [0], sizes: [%[[D0]], %[[D1]], 8], strides: [%[[STRIDE]], 8, 1]
func.func @plane(%a: memref<?x?x8xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %a[%c0, %c0, %c0] : memref<?x?x8xf32>
  return
}

// A GEMM's rows split back into (batch, sequence): MLIR's strided-metadata
// expansion takes one `?` dim per group, so the expansion of the contiguous buffer
// is rebuilt from its pointer with the output's sizes.
// CHECK-LABEL: func.func @unflatten(
// CHECK-SAME: %[[S:.*]]: memref<f32>, %[[B:.*]]: index, %[[T:.*]]: index, %[[ROWS:.*]]: index)
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[S]] to offset: [0], sizes: [%[[ROWS]], 48]
// CHECK-NOT: memref.expand_shape
// CHECK: memref.reinterpret_cast %[[FLAT]] to offset: [0], sizes: [%[[B]], %[[T]], 48]
func.func @unflatten(%a: memref<?x48xf32>, %b: index, %t: index) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %u = memref.expand_shape %a [[0, 1], [2]] output_shape [%b, %t, 48] : memref<?x48xf32> into memref<?x?x48xf32>
  %x = memref.load %u[%c0, %c0, %c0] : memref<?x?x48xf32>
  memref.store %x, %u[%c0, %c0, %c0] : memref<?x?x48xf32>
  return
}

// Static kernels, and library kernels (called by the host), are left alone.
// CHECK-LABEL: func.func @static(
// CHECK-SAME: %{{.*}}: memref<4x8xf32>)
// CHECK-NOT: mlirc.size_args
// CHECK-LABEL: func.func @library(
// CHECK-SAME: memref<?x8xf32>
func.func @static(%a: memref<4x8xf32>) attributes {mlirc.kernel} {
  return
}
func.func @library(%a: memref<?x8xf32>) attributes {mlirc.kernel, mlirc.library = "mm"} {
  return
}
