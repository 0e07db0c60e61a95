// RUN: mlirc-opt %s -p 'mlirc-stage-cpu{vector-bytes=32}' | FileCheck %s

// Kernels take bare pointers: inputs, then the out-param for the result.
// CHECK: llvm.func @kernel_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// 37 = 4 full vectors, then a peeled tail of 5: plain loads and stores, no masks.
// CHECK-NOT: llvm.intr.masked
// CHECK: llvm.load {{.*}} -> vector<8xf32>
// CHECK: llvm.store {{.*}} : vector<8xf32>
// CHECK: llvm.load {{.*}} -> vector<5xf32>
// CHECK: llvm.store {{.*}} : vector<5xf32>
// CHECK-NOT: func.func
#map = affine_map<(d0) -> (d0)>
func.func @kernel_0(%a: tensor<37xf32>) -> tensor<37xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<37xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<37xf32>) outs(%e : tensor<37xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<37xf32>
  return %r : tensor<37xf32>
}
