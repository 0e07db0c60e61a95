// RUN: mlirc-opt %s -p mlirc-cpu-omp-dispatch | FileCheck %s

// A kernel marked by mlirc-cpu-parallelize runs its chunk function on libgomp's
// threads: its arguments go into a context array, each thread derives [lo, hi)
// from its number; the team is torch's (num_threads 0 = omp_get_max_threads()),
// never resized to the trip count: resizing the team slowed torch's next GEMMs 2x.
// CHECK-DAG: llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-LABEL: llvm.func internal @k_worker(%{{.*}}: !llvm.ptr)
// CHECK: llvm.call @omp_get_thread_num()
// CHECK: llvm.mlir.constant(10 : i64)
// CHECK: llvm.call @k_chunk(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-LABEL: llvm.func @k(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {mlirc.kernel}
// CHECK: llvm.alloca
// CHECK: llvm.mlir.addressof @k_worker
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i32)
// CHECK: llvm.call @GOMP_parallel(%{{.*}}, %{{.*}}, %[[ZERO]], %{{.*}})
// CHECK-NOT: llvm.call @k_chunk
// CHECK: llvm.return
llvm.func @k_chunk(%a: !llvm.ptr, %b: !llvm.ptr, %lo: i64, %hi: i64) attributes {sym_visibility = "private"} {
  llvm.return
}
llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr) attributes {mlirc.kernel, mlirc.parallel = array<i64: 0, 40, 4>} {
  %lb = llvm.mlir.constant(0 : i64) : i64
  %ub = llvm.mlir.constant(40 : i64) : i64
  llvm.call @k_chunk(%a, %b, %lb, %ub) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
  llvm.return
}
