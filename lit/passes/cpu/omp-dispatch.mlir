// RUN: mlirc-opt %s -p mlirc-cpu-omp-dispatch | FileCheck %s

// A kernel's parallel form, declared by mlirc-cpu-parallelize with its loop's step,
// is defined here: its arguments, lo and hi go into a context array of 8-byte
// slots (pointers and sizes alike), each thread derives its share of [lo, hi) from
// its number and runs the chunk on it; the team is torch's (num_threads 0 =
// omp_get_max_threads()), never resized to the trip count: resizing the team slowed
// torch's next GEMMs 2x.
// The kernel itself is untouched: it calls the parallel form over its range.
// CHECK-LABEL: llvm.func @k(
// CHECK: llvm.call @k_parallel
// CHECK: llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-LABEL: llvm.func internal @k_worker(%{{.*}}: !llvm.ptr)
// CHECK: %[[N:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[LO:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[HI:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: llvm.call @omp_get_thread_num()
// CHECK: llvm.mlir.constant(4 : i64)
// CHECK: llvm.sub %[[HI]], %[[LO]]
// CHECK: llvm.call @k_chunk(%{{.*}}, %{{.*}}, %[[N]], %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
// CHECK-LABEL: llvm.func internal @k_parallel(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64)
// CHECK: llvm.alloca
// CHECK: llvm.mlir.addressof @k_worker
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32)
// CHECK: llvm.call @GOMP_parallel(%{{.*}}, %{{.*}}, %[[ZERO]], %{{.*}})
// CHECK-NOT: llvm.call @k_chunk
// CHECK: llvm.return
llvm.func @k_chunk(%a: !llvm.ptr, %b: !llvm.ptr, %n: i64, %lo: i64, %hi: i64) attributes {sym_visibility = "private"} {
  llvm.return
}
llvm.func @k_parallel(!llvm.ptr, !llvm.ptr, i64, i64, i64) attributes {sym_visibility = "private", mlirc.parallel = array<i64: 4>}
llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr, %n: i64) attributes {mlirc.kernel} {
  %lb = llvm.mlir.constant(0 : i64) : i64
  llvm.call @k_parallel(%a, %b, %n, %lb, %n) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  llvm.return
}
