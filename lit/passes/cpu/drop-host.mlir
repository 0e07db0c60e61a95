// RUN: mlirc-opt %s -p mlirc-cpu-drop-host | FileCheck %s

// The CPU compiles the kernels: the entry (run by the host wrapper) and library
// calls (made by it) are dropped, so mlirc-stage-cpu takes a whole kernels module.
// CHECK-NOT: @main
// CHECK-NOT: @mm_0
// CHECK: func.func @kernel_0
// CHECK-NOT: func.func
#map = affine_map<(d0) -> (d0)>
func.func @kernel_0(%a: tensor<8xf32>) -> tensor<8xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func private @mm_0(tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> attributes {mlirc.kernel, mlirc.library = "mm"}
func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> attributes {mlirc.entry} {
  %0 = call @kernel_0(%a) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
