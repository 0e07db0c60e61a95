// RUN: mlirc-opt %s -p mlirc-cpu-vectorize | FileCheck %s

// The innermost dim is tiled to the vector width and vectorized with masks.
// CHECK-LABEL: func.func @kernel_0
// CHECK: scf.for
// CHECK: vector.transfer_read
// CHECK: math.exp %{{.*}} : vector<{{([0-9]+x)?}}{{[0-9]+}}xf32>
// CHECK: vector.transfer_write
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @kernel_0(%a: tensor<7x129xf32>) -> tensor<7x129xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x129xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<7x129xf32>) outs(%e : tensor<7x129xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<7x129xf32>
  return %r : tensor<7x129xf32>
}
