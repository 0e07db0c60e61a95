// RUN: %not mlirc-opt %s 2>&1 | FileCheck %s
// The context allows unregistered dialects for Triton's `tt` ops only: any other
// unknown op is an error with its location, not silently accepted.
// CHECK: unregistered-op.mlir:7:{{[0-9]+}}: error: unregistered operation 'foo.bar'
func.func @f(%a: f32) -> f32 {
  %t = "tt.get_program_id"() {axis = 0 : i32} : () -> i32
  %0 = "foo.bar"(%a) : (f32) -> f32
  return %0 : f32
}
