// RUN: mlirc-opt %s -p mlirc-cpu-strided-copies | FileCheck %s

// A copy out of a slice of run-time strides would call MLIR's runtime library
// (memrefCopy): it becomes a linalg.copy, lowered to loops later.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.copy
// CHECK: linalg.copy {{.*}}ins(%{{.*}} : memref<?x4x?x64xf32, strided<[?, ?, 64, 1], offset: ?>>) outs(%{{.*}} : memref<?x4x?x64xf32>)
func.func @strided(%a: memref<?x4x?x64xf32, strided<[?, ?, 64, 1], offset: ?>>, %b: memref<?x4x?x64xf32>) {
  memref.copy %a, %b : memref<?x4x?x64xf32, strided<[?, ?, 64, 1], offset: ?>> to memref<?x4x?x64xf32>
  return
}

// Contiguous buffers (identity layouts of any size, static strides of a dense
// row-major buffer) keep their copy: MLIR lowers it to a memcpy.
// CHECK-LABEL: func.func @contiguous
// CHECK-COUNT-2: memref.copy
// CHECK-NOT: linalg.copy
func.func @contiguous(%a: memref<?x64xf32>, %b: memref<?x64xf32>, %c: memref<4x64xf32, strided<[64, 1], offset: 128>>, %d: memref<4x64xf32>) {
  memref.copy %a, %b : memref<?x64xf32> to memref<?x64xf32>
  memref.copy %c, %d : memref<4x64xf32, strided<[64, 1], offset: 128>> to memref<4x64xf32>
  return
}

// MLIR's rule, not a looser one: a unit dim between others with a stride that is not
// row-major's, or no elements at all, is not contiguous for its lowering.
// CHECK-LABEL: func.func @not_row_major
// CHECK-COUNT-2: linalg.copy
// CHECK-NOT: memref.copy
func.func @not_row_major(%a: memref<2x1x4xf32, strided<[4, 7, 1]>>, %b: memref<2x1x4xf32>, %c: memref<0x4xf32, strided<[8, 1]>>, %d: memref<0x4xf32>) {
  memref.copy %a, %b : memref<2x1x4xf32, strided<[4, 7, 1]>> to memref<2x1x4xf32>
  memref.copy %c, %d : memref<0x4xf32, strided<[8, 1]>> to memref<0x4xf32>
  return
}
