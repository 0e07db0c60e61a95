// RUN: mlirc-opt %s -p mlirc-cpu-reread-stored --split-input-file | FileCheck %s

// The serial code stores a vector into an output buffer (a batch norm's rstd tail)
// and the loop used the vector itself: the loop reads it back from the buffer, at
// the top of its body, and the serial store stays.
// CHECK-LABEL: func.func @tail
// CHECK: %[[V:.*]] = math.rsqrt
// CHECK: vector.transfer_write %[[V]], %[[DST:[a-z0-9_]+]][%c0]
// CHECK: scf.for
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: %[[R:.*]] = vector.transfer_read %[[DST]][%c0], %{{.*}} {in_bounds = [true]} : memref<8xf32, strided<[1], offset: 16>>, vector<8xf32>
// CHECK-NOT: math.rsqrt
// CHECK: arith.mulf %{{.*}}, %[[R]]
// CHECK: mlirc.parallel_loop
func.func @tail(%x: memref<64x24xf32>, %var: memref<24xf32>, %rstd: memref<24xf32>, %y: memref<64x24xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %src = memref.subview %var[16] [8] [1] : memref<24xf32> to memref<8xf32, strided<[1], offset: 16>>
  %v = vector.transfer_read %src[%c0], %pad {in_bounds = [true]} : memref<8xf32, strided<[1], offset: 16>>, vector<8xf32>
  %r = math.rsqrt %v : vector<8xf32>
  %dst = memref.subview %rstd[16] [8] [1] : memref<24xf32> to memref<8xf32, strided<[1], offset: 16>>
  vector.transfer_write %r, %dst[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32, strided<[1], offset: 16>>
  scf.for %i = %c0 to %c64 step %c1 {
    %row = memref.subview %x[%i, 16] [1, 8] [1, 1] : memref<64x24xf32> to memref<8xf32, strided<[1], offset: ?>>
    %out = memref.subview %y[%i, 16] [1, 8] [1, 1] : memref<64x24xf32> to memref<8xf32, strided<[1], offset: ?>>
    %a = vector.transfer_read %row[%c0], %pad {in_bounds = [true]} : memref<8xf32, strided<[1], offset: ?>>, vector<8xf32>
    %b = arith.mulf %a, %r : vector<8xf32>
    vector.transfer_write %b, %out[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  return
}

// -----

// Where the buffer is written again before the loop, or inside it, the stored value
// is no longer there to read: the loop keeps the SSA value.  A scalar's memref.store
// is read back with memref.load where nothing writes its buffer after it.
// CHECK-LABEL: func.func @overwritten
// CHECK: scf.for
// CHECK-NOT: vector.transfer_read %arg2
// CHECK: arith.mulf %{{.*}}, %[[V:[0-9a-z_]+]] : vector<8xf32>
// CHECK: scf.for
// CHECK-NEXT: %[[S:.*]] = memref.load %arg3[%c0]
// CHECK: arith.mulf %{{.*}}, %[[S]] : f32
func.func @overwritten(%x: memref<64x8xf32>, %v: vector<8xf32>, %rstd: memref<8xf32>, %s: memref<1xf32>, %y: memref<64x8xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %r = math.rsqrt %v : vector<8xf32>
  vector.transfer_write %r, %rstd[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32>
  %t = vector.reduction <add>, %r : vector<8xf32> into f32
  memref.store %t, %s[%c0] : memref<1xf32>
  %zero = arith.constant dense<0.0> : vector<8xf32>
  vector.transfer_write %zero, %rstd[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32>
  scf.for %i = %c0 to %c64 step %c1 {
    %row = memref.subview %x[%i, 0] [1, 8] [1, 1] : memref<64x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %out = memref.subview %y[%i, 0] [1, 8] [1, 1] : memref<64x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %a = vector.transfer_read %row[%c0], %pad {in_bounds = [true]} : memref<8xf32, strided<[1], offset: ?>>, vector<8xf32>
    %b = arith.mulf %a, %r : vector<8xf32>
    vector.transfer_write %b, %out[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c64 step %c1 {
    %e = memref.load %x[%i, %c0] : memref<64x8xf32>
    %m = arith.mulf %e, %t : f32
    memref.store %m, %y[%i, %c0] : memref<64x8xf32>
  } {mlirc.parallel_loop}
  return
}
