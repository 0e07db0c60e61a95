// RUN: %not mlirc-opt %s 2>&1 | FileCheck %s

// MLIR's parser asserts (aborts) on an index-typed dense array: mlirc-opt runs each
// input in a child process, so the crash is a diagnostic and exit code 1.
// CHECK: parser-crash.mlir:1:1: error: MLIR crashed (SIGABRT) on this input
func.func @f() {
  "test.op"() {a = array<index: 1>} : () -> ()
  return
}
