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

// A write outside the loop (the fill) stays in the kernel, on the caller's thread,
// before the parallel call that replaces the loop: chunks never re-run it, and the
// call starts after it is done.
// CHECK-LABEL: func.func private @filled_chunk
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK-LABEL: func.func @filled(
// CHECK: linalg.fill
// CHECK-NEXT: arith.constant 0
// CHECK-NEXT: arith.constant 256
// CHECK-NEXT: call @filled_parallel
// CHECK-NEXT: return
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

// Scalar math on a 0-d input before the loop (mlirc-cpu-hoist-invariant-scalars:
// an optimizer's bias correction) writes nothing: each chunk computes it again.
// CHECK-LABEL: func.func private @scaled_chunk
// CHECK: memref.load %arg0[]
// CHECK: math.powf
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-LABEL: func.func @scaled(
// CHECK-NOT: math.powf
// CHECK: call @scaled_parallel(%arg0, %arg1, %arg2, %c0{{.*}}, %c256{{.*}})
func.func @scaled(%step: memref<f32>, %a: memref<256x512xf32>, %out: memref<256x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %beta = arith.constant 0.9 : f32
  %t = memref.load %step[] : memref<f32>
  %power = math.powf %beta, %t : f32
  scf.for %i = %c0 to %c256 step %c1 {
    scf.for %j = %c0 to %c512 step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x512xf32>
      %y = arith.mulf %x, %power : f32
      memref.store %y, %out[%i, %j] : memref<256x512xf32>
    }
  } {mlirc.parallel_loop}
  return
}

// Two marked loops (a row group whose reduction reads the rows the first loop
// wrote): one chunk function each, cloning only what its loop reads (the first
// loop's scratch row stays with it), run in one parallel region: each thread takes
// its share of the first loop, waits at a barrier for the others, then takes its
// share of the second (one fork and join, not two; the region's end joins them).
// CHECK-LABEL: func.func private @two_loops_part0_chunk
// CHECK: memref.alloca() : memref<512xf32>
// CHECK-NOT: memref.load %arg1
// CHECK: return
// CHECK-LABEL: func.func private @two_loops_part1_chunk
// CHECK-NOT: memref.alloca
// CHECK: return
// CHECK-DAG: func.func private @omp_get_thread_num() -> i32
// CHECK-DAG: func.func private @omp_get_num_threads() -> i32
// CHECK-DAG: func.func private @GOMP_barrier()
// CHECK-LABEL: func.func private @two_loops_region_chunk(
// CHECK: %[[T32:.*]] = call @omp_get_thread_num()
// CHECK-NEXT: %[[T:.*]] = arith.index_cast %[[T32]]
// CHECK-NEXT: %[[N32:.*]] = call @omp_get_num_threads()
// CHECK-NEXT: %[[N:.*]] = arith.index_cast %[[N32]]
// CHECK: %[[TRIPS:.*]] = arith.ceildivsi
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[TRIPS]], %[[T]]
// CHECK-NEXT: arith.divsi %[[FIRST]], %[[N]]
// CHECK: call @two_loops_part0_chunk(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}})
// CHECK-NEXT: call @GOMP_barrier()
// CHECK: call @two_loops_part1_chunk(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}})
// CHECK-NEXT: return
// CHECK: func.func private @two_loops_region_parallel({{.*}}) attributes {mlirc.parallel = array<i64: 1>}
// CHECK-LABEL: func.func @two_loops(
// CHECK-NEXT: arith.constant 0
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: call @two_loops_region_parallel(%arg0, %arg1, %arg2, %c0{{.*}}, %c1{{.*}})
// CHECK-NEXT: return
// CHECK-NOT: @two_loops_part{{.}}_parallel
func.func @two_loops(%a: memref<256x512xf32>, %rows: memref<256x512xf32>, %sums: memref<256xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  %scratch = memref.alloca() : memref<512xf32>
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %scratch : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32>
    memref.copy %scratch, %dst : memref<512xf32> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c256 step %c1 {
    %sum = scf.for %j = %c0 to %c512 step %c1 iter_args(%acc = %zero) -> f32 {
      %x = memref.load %rows[%i, %j] : memref<256x512xf32>
      %next = arith.addf %acc, %x : f32
      scf.yield %next : f32
    }
    memref.store %sum, %sums[%i] : memref<256xf32>
  } {mlirc.parallel_loop}
  return
}

// Two loops passing data through a buffer allocated outside them: a chunk of the
// second would read its own, unwritten copy.  Serial.
// CHECK-LABEL: func.func @shared_scratch(
// CHECK-NOT: call
// CHECK: memref.alloc()
// CHECK: scf.for
// CHECK: scf.for
func.func @shared_scratch(%a: memref<256x512xf32>, %out: memref<256x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %tmp = memref.alloc() : memref<256x512xf32>
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %tmp[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %tmp[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %out[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  memref.dealloc %tmp : memref<256x512xf32>
  return
}

// A vector loop's tail, after the loop, runs on the caller's thread once the
// parallel call returns (155617 = 16 * 9726 + 1: one element left over).
// CHECK-LABEL: func.func private @tail_chunk
// CHECK-NOT: vector.transfer_write
// CHECK: scf.for
// CHECK: vector.transfer_write
// CHECK-NOT: vector.transfer_write
// CHECK: return
// CHECK-LABEL: func.func @tail(
// CHECK-NOT: scf.for
// CHECK: call @tail_parallel(%arg0, %arg1, %c0{{.*}}, %c155616{{.*}})
// CHECK: vector.transfer_read %{{.*}} : memref<1xf32, strided<[1], offset: 155616>>, vector<1xf32>
// CHECK: vector.transfer_write
// CHECK-NEXT: return
func.func @tail(%a: memref<155617xf32>, %out: memref<155617xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c155616 = arith.constant 155616 : index
  %pad = ub.poison : f32
  scf.for %i = %c0 to %c155616 step %c16 {
    %x = vector.transfer_read %a[%i], %pad {in_bounds = [true]} : memref<155617xf32>, vector<16xf32>
    %y = math.exp %x : vector<16xf32>
    vector.transfer_write %y, %out[%i] {in_bounds = [true]} : vector<16xf32>, memref<155617xf32>
  } {mlirc.parallel_loop}
  %last = memref.subview %a[155616] [1] [1] : memref<155617xf32> to memref<1xf32, strided<[1], offset: 155616>>
  %dst = memref.subview %out[155616] [1] [1] : memref<155617xf32> to memref<1xf32, strided<[1], offset: 155616>>
  %x = vector.transfer_read %last[%c0], %pad {in_bounds = [true]} : memref<1xf32, strided<[1], offset: 155616>>, vector<1xf32>
  %y = math.exp %x : vector<1xf32>
  vector.transfer_write %y, %dst[%c0] {in_bounds = [true]} : vector<1xf32>, memref<1xf32, strided<[1], offset: 155616>>
  return
}

// A serial op that reads what a loop's scratch buffer holds would see another
// chunk's copy: a buffer both use keeps the kernel serial.
// CHECK-LABEL: func.func @scratch_read_after(
// CHECK-NOT: call
// CHECK: scf.for
// CHECK: memref.copy
func.func @scratch_read_after(%a: memref<256x512xf32>, %out: memref<256x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %tmp = memref.alloc() : memref<256x512xf32>
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %tmp[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  memref.copy %tmp, %out : memref<256x512xf32> to memref<256x512xf32>
  memref.dealloc %tmp : memref<256x512xf32>
  return
}

// Of several loops (merged kernels: an optimizer's weight and its bias), only one
// that moves 128 KiB itself is chunked; a fork/join for the 16-element bias would
// cost more than its loop: it runs in place, on the caller's thread.
// CHECK-LABEL: func.func private @weight_and_bias_chunk
// CHECK-NOT: func.func private @weight_and_bias_part
// CHECK-LABEL: func.func @weight_and_bias(
// CHECK: call @weight_and_bias_parallel(%arg0, %arg1, %arg2, %arg3, %c0{{.*}}, %c256{{.*}})
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16
// CHECK-NOT: mlirc.parallel_loop
// CHECK: return
func.func @weight_and_bias(%w: memref<256x512xf32>, %nw: memref<256x512xf32>, %b: memref<16xf32>, %nb: memref<16xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %w[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %nw[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %b[%i] : memref<16xf32>
    memref.store %x, %nb[%i] : memref<16xf32>
  } {mlirc.parallel_loop}
  return
}

// A 0-d load before a write that may change what it read (the output may be its
// input, written in place): a chunk loading again where the loop stood could read
// the new value.  Serial.
// CHECK-LABEL: func.func @load_then_store(
// CHECK-NOT: call
// CHECK: memref.load
// CHECK: memref.store
// CHECK: scf.for
func.func @load_then_store(%step: memref<f32>, %new_step: memref<f32>, %a: memref<256x512xf32>, %out: memref<256x512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %one = arith.constant 1.0 : f32
  %t = memref.load %step[] : memref<f32>
  %t1 = arith.addf %t, %one : f32
  memref.store %t1, %new_step[] : memref<f32>
  scf.for %i = %c0 to %c256 step %c1 {
    scf.for %j = %c0 to %c512 step %c1 {
      %x = memref.load %a[%i, %j] : memref<256x512xf32>
      %y = arith.mulf %x, %t : f32
      memref.store %y, %out[%i, %j] : memref<256x512xf32>
    }
  } {mlirc.parallel_loop}
  return
}

// A serial write between two loops (a merged kernel's small member: a fill, a
// mean) would cost a barrier on each side of it in one region: three barriers and
// a fork where two parallel calls synchronize four times.  Measured on 16 cores, a
// batch norm's five-barrier region was slower than its three forks: left as
// parallel calls, the serial write on the caller's thread between them.
// CHECK-LABEL: func.func @serial_between(
// CHECK-NOT: region
// CHECK: call @serial_between_part0_parallel
// CHECK-NEXT: linalg.fill
// CHECK: call @serial_between_part1_parallel
func.func @serial_between(%a: memref<256x512xf32>, %rows: memref<256x512xf32>, %col: memref<512xf32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  linalg.fill ins(%zero : f32) outs(%col : memref<512xf32>)
  scf.for %j = %c0 to %c512 step %c1 {
    %x = memref.load %rows[%c0, %j] : memref<256x512xf32>
    memref.store %x, %col[%j] : memref<512xf32>
  }
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  return
}

// With a third loop right after the second, one region waits less than three forks
// and joins: the serial step runs on thread 0 alone between barriers (its scratch
// and addresses computed by every thread before it), and a sum it keeps in a
// register for a later serial step is yielded by its `if` (a zero on the other
// threads, which never read it) and stored by thread 0 after the last loop.
// CHECK-LABEL: func.func private @value_across_region_chunk(
// CHECK: %[[T32:.*]] = call @omp_get_thread_num()
// CHECK-NEXT: %[[T:.*]] = arith.index_cast %[[T32]]
// CHECK: call @value_across_part0_chunk
// CHECK-NEXT: call @GOMP_barrier()
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %{{.*}}
// CHECK: %[[SUM:.*]] = scf.if %[[FIRST]] -> (f32) {
// CHECK-NEXT: linalg.fill
// CHECK: %[[PARTIAL:.*]] = scf.for
// CHECK: scf.yield %[[PARTIAL]] : f32
// CHECK-NEXT: } else {
// CHECK: scf.yield %{{.*}} : f32
// CHECK: call @GOMP_barrier()
// CHECK: call @value_across_part1_chunk
// CHECK-NEXT: call @GOMP_barrier()
// CHECK: call @value_across_part2_chunk
// CHECK-NEXT: call @GOMP_barrier()
// CHECK: call @value_across_part3_chunk
// CHECK-NEXT: call @GOMP_barrier()
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[SUM]], %arg3[]
// CHECK-LABEL: func.func @value_across(
// CHECK-NEXT: arith.constant 0
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: call @value_across_region_parallel
// CHECK-NEXT: return
func.func @value_across(%a: memref<256x512xf32>, %rows: memref<256x512xf32>, %col: memref<512xf32>, %total: memref<f32>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  linalg.fill ins(%zero : f32) outs(%col : memref<512xf32>)
  scf.for %j = %c0 to %c512 step %c1 {
    %x = memref.load %rows[%c0, %j] : memref<256x512xf32>
    memref.store %x, %col[%j] : memref<512xf32>
  }
  %sum = scf.for %j = %c0 to %c512 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %rows[%c0, %j] : memref<256x512xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  memref.store %sum, %total[] : memref<f32>
  return
}

// A value thread 0 loads that an op of every thread reads (an index computed
// between loops) cannot be thread 0's alone: parallel calls, as without a region.
// CHECK-LABEL: func.func @per_thread_reader(
// CHECK-NOT: region
// CHECK: call @per_thread_reader_part0_parallel
// CHECK: memref.load
// CHECK: call @per_thread_reader_part2_parallel
// CHECK: arith.addi
// CHECK: call @per_thread_reader_part4_parallel
// CHECK: memref.store
func.func @per_thread_reader(%a: memref<256x512xf32>, %rows: memref<256x512xf32>, %len: memref<i64>, %out: memref<4xi64>) attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  %n = memref.load %len[] : memref<i64>
  memref.store %n, %out[%c0] : memref<4xi64>
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  %one = arith.constant 1 : i64
  %m = arith.addi %n, %one : i64
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  scf.for %i = %c0 to %c256 step %c1 {
    %row = memref.subview %a[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    %dst = memref.subview %rows[%i, 0] [1, 512] [1, 1] : memref<256x512xf32> to memref<512xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<512xf32, strided<[1], offset: ?>> to memref<512xf32, strided<[1], offset: ?>>
  } {mlirc.parallel_loop}
  memref.store %m, %out[%c1] : memref<4xi64>
  return
}
