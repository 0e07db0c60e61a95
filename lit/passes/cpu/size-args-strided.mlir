// RUN: %not mlirc-opt %s -p mlirc-cpu-size-args 2>&1 | FileCheck %s

// A strided buffer argument cannot be rebuilt from a pointer and its sizes: a
// diagnostic, and mlirc-opt exits non-zero.
// CHECK: mlirc-cpu-size-args{{.*}}@strided argument 0: memref<?x8xf32, strided<[16, 1]>> is not a contiguous buffer
func.func @strided(%a: memref<?x8xf32, strided<[16, 1]>>) attributes {mlirc.kernel} {
  return
}
