// RUN: mlirc-opt %s -p mlirc-cpu-parallelize | FileCheck %s

// A kernel whose only writes are in its marked outermost loop, moving >= 128 KiB,
// becomes a chunk function over [lo, hi) and a call over the whole range of its
// parallel form, declared with the loop's step for mlirc-cpu-omp-dispatch.
// CHECK-LABEL: func.func private @big_chunk
// CHECK-SAME: %[[LO:[a-z0-9]+]]: index, %[[HI:[a-z0-9]+]]: index)
// CHECK: scf.for %{{.*}} = %[[LO]] to %[[HI]] step %{{.*}} {
// CHECK-NOT: mlirc.parallel_loop
// CHECK: func.func private @big_parallel(memref<256x512xf32>, memref<256x512xf32>, index, index)
// CHECK-SAME: mlirc.parallel = array<i64: 1>
// CHECK-LABEL: func.func @big(
// CHECK-NOT: scf.for
// CHECK: call @big_parallel(%arg0, %arg1, %c0{{.*}}, %c256{{.*}})
// CHECK-NEXT: return
func.func @big(%a: memref<256x512xf32>, %out: memref<256x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  return
}

// A write outside the loop (the fill) would race between chunks: stays serial.
// CHECK-LABEL: func.func @filled(
// CHECK-NOT: mlirc.parallel
// CHECK: linalg.fill
// CHECK: scf.for
func.func @filled(%a: memref<256x512xf32>, %out: memref<256x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<256x512xf32>)
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  return
}

// Too little data for a fork/join: stays serial, and the mark is dropped.
// CHECK-LABEL: func.func @small(
// CHECK-NOT: mlirc.parallel
// CHECK: return
func.func @small(%a: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<8xf32, strided<[1], offset: ?>> to memref<8xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  return
}

// An outermost loop too short to share among threads (3 trips) merges with the
// marked loops it runs, until 64 or more trips: one loop over 3 * 4 * 32 = 384,
// its indices recovered by div/rem, the address ops in between moved inside.
// CHECK-LABEL: func.func private @short_outer_chunk
// CHECK: scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: arith.divui
// CHECK: arith.remui
// CHECK: memref.subview
// CHECK-NOT: scf.for
// CHECK: memref.copy
// CHECK-LABEL: func.func @short_outer(
// CHECK: call @short_outer_parallel(%arg0, %arg1, %c0{{.*}}, %c384{{.*}})
func.func @short_outer(%a: memref<3x4x32x512xf32>, %out: memref<3x4x32x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c3 step %c1 {
    %ai = memref.subview %a[%i, 0, 0, 0] [1, 4, 32, 512] [1, 1, 1, 1] : memref<3x4x32x512xf32> to memref<4x32x512xf32, strided<[16384, 512, 1], offset: ?>>
    scf.for %j = %c0 to %c4 step %c1 {
      scf.for %k = %c0 to %c32 step %c1 {
        %row = memref.subview %ai[%j, %k, 0] [1, 1, 512] [1, 1, 1] : memref<4x32x512xf32, strided<[16384, 512, 1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
        %dst = memref.subview %out[%i, %j, %k, 0] [1, 1, 1, 512] [1, 1, 1, 1] : memref<3x4x32x512xf32> to memref<512xf32, strided<[1], offset: ?>>
        memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
      } {mlirc.parallel_loop}
    } {mlirc.parallel_loop}
  } {mlirc.parallel_loop}
  return
}

// A kernel of run-time sizes (mlirc-cpu-size-args: pointers, then sizes): its loop
// runs to a size argument, and whether it moves 128 KiB is known only at run time:
// a small call runs its one chunk on the caller's thread.
// CHECK-LABEL: func.func private @sized_chunk
// CHECK-SAME: %[[LO:[a-z0-9]+]]: index, %[[HI:[a-z0-9]+]]: index)
// CHECK: scf.for %{{.*}} = %[[LO]] to %[[HI]]
// CHECK-LABEL: func.func @sized(
// CHECK: %[[LARGE:.*]] = arith.cmpi uge, %{{.*}}, %c131072
// CHECK: scf.if %[[LARGE]] {
// CHECK: call @sized_parallel(%arg0, %arg1, %arg2, %c0{{.*}}, %arg2)
// CHECK: } else {
// CHECK: call @sized_chunk(%arg0, %arg1, %arg2, %c0{{.*}}, %arg2)
func.func @sized(%pa: memref<f32>, %pout: memref<f32>, %n: index) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.reinterpret_cast %pa to offset: [0], sizes: [%n, 512], strides: [512, 1] : memref<f32> to memref<?x512xf32>
  %out = memref.reinterpret_cast %pout to offset: [0], sizes: [%n, 512], strides: [512, 1] : memref<f32> to memref<?x512xf32>
  scf.for %i = %c0 to %n step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<?x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [1, 512] [1, 1] : memref<?x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  return
}

// Loops of run-time length merge whatever their length (a batch of 1 would
// otherwise leave threads idle): the merged loop runs to the product of the sizes.
// Its width is a run-time size, so a chunk runs its [lo, hi) as rows of that width
// instead of dividing its index on every trip.
// CHECK-LABEL: func.func private @sized_nest_chunk
// CHECK-SAME: %[[LO:[a-z0-9]+]]: index, %[[HI:[a-z0-9]+]]: index)
// CHECK: scf.if
// CHECK: %[[FIRST:.*]] = arith.divui %[[LO]], %arg3
// CHECK: %[[END:.*]] = arith.ceildivui %[[HI]], %arg3
// CHECK: scf.for %[[Q:.*]] = %[[FIRST]] to %[[END]]
// CHECK: scf.for %[[R:[a-z0-9]+]] =
// CHECK-NOT: arith.divui
// CHECK: memref.subview %{{.*}}[%[[Q]], %[[R]], 0]
// CHECK-LABEL: func.func @sized_nest(
// CHECK: %[[TRIPS:.*]] = arith.muli %arg2, %arg3
// CHECK: call @sized_nest_parallel(%arg0, %arg1, %arg2, %arg3, %c0{{.*}}, %[[TRIPS]])
func.func @sized_nest(%pa: memref<f32>, %pout: memref<f32>, %n: index, %m: index) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.reinterpret_cast %pa to offset: [0], sizes: [%n, %m, 64], strides: [%m, 64, 1] : memref<f32> to memref<?x?x64xf32, strided<[?, 64, 1]>>
  %out = memref.reinterpret_cast %pout to offset: [0], sizes: [%n, %m, 64], strides: [%m, 64, 1] : memref<f32> to memref<?x?x64xf32, strided<[?, 64, 1]>>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      %row = memref.subview %a[%i, %j, 0] [1, 1, 64] [1, 1, 1] : memref<?x?x64xf32, strided<[?, 64, 1]>> to memref<64xf32, strided<[1], offset: ?>>
      %dst = memref.subview %out[%i, %j, 0] [1, 1, 64] [1, 1, 1] : memref<?x?x64xf32, strided<[?, 64, 1]>> to memref<64xf32, strided<[1], offset: ?>>
      memref.copy %row, %dst : memref<64xf32, strided<[1], offset: ?>> to memref<64xf32, strided<[1], offset: ?>>
    } {mlirc.parallel_loop}
  } {mlirc.parallel_loop}
  return
}
