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

// A reduction over the innermost dim is split: a loop of whole vectors keeps the
// partial sums in registers (loop-carried, not in memory), the peeled partial block
// is vectorized exactly (no masks), and each row's lanes are reduced once, as a tree.
// CHECK-LABEL: func.func @kernel_1
// CHECK-NOT: vector.mask
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<[[N:[0-9]+]]xf32>)
// CHECK: math.exp %{{.*}} : vector<[[N]]xf32>
// CHECK: arith.addf %{{.*}} : vector<[[N]]xf32>
// CHECK: scf.yield %{{.*}} : vector<[[N]]xf32>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
// CHECK-NOT: vector.mask
// CHECK: return
#row = affine_map<(d0, d1) -> (d0)>
func.func @kernel_1(%a: tensor<7x137xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %r = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<7x137xf32>) outs(%f : tensor<7xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = math.exp %x : f32
    %s = arith.addf %y, %acc : f32
    linalg.yield %s : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}
