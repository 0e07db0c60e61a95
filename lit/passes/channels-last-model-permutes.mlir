// RUN: mlirc-opt %s -p mlirc-channels-last,canonicalize,cse | FileCheck %s

// A channels-first layer norm written as permute, norm over C, permute back
// (timm's LayerNorm2d, ConvNeXt's stem): the model's own "back to NCHW" permute
// seeds the propagation as a convolution's result does.  The residual add that
// reads it writes NHWC, and the per-channel sum reads that NHWC value: no kernel
// transposes the image (ConvNeXt-V2's first stage wrote its residual adds NCHW
// through transposed reads, then copied them back to NHWC for the next convolution).

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[NHWC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-DAG: #[[CHAN:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x5x7x3xf32>)
// CHECK: %[[N:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]]{{.*}} ins(%[[X]] : {{.*}}) outs(%{{.*}} : tensor<2x5x7x3xf32>)
// CHECK: math.exp
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[NHWC]], #[[NHWC]], #[[NHWC]]]{{.*}} ins(%[[N]], %[[X]] : {{.*}}) outs(%{{.*}} : tensor<2x5x7x3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[NHWC]], #[[CHAN]]]{{.*}} ins(%[[R]] : tensor<2x5x7x3xf32>)
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#to_nchw = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
module {
  func.func @main(%x: tensor<2x5x7x3xf32>) -> tensor<3xf32> attributes {mlirc.entry} {
    %zero = arith.constant 0.000000e+00 : f32
    %e0 = tensor.empty() : tensor<2x5x7x3xf32>
    %norm = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x5x7x3xf32>) outs(%e0 : tensor<2x5x7x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %n = math.exp %in : f32
      linalg.yield %n : f32
    } -> tensor<2x5x7x3xf32>
    %e1 = tensor.empty() : tensor<2x3x5x7xf32>
    %back = linalg.generic {indexing_maps = [#to_nchw, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%norm : tensor<2x5x7x3xf32>) outs(%e1 : tensor<2x3x5x7xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x3x5x7xf32>
    %e2 = tensor.empty() : tensor<2x3x5x7xf32>
    %shortcut = linalg.generic {indexing_maps = [#to_nchw, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x5x7x3xf32>) outs(%e2 : tensor<2x3x5x7xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<2x3x5x7xf32>
    %e3 = tensor.empty() : tensor<2x3x5x7xf32>
    %residual = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%back, %shortcut : tensor<2x3x5x7xf32>, tensor<2x3x5x7xf32>) outs(%e3 : tensor<2x3x5x7xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x3x5x7xf32>
    %e4 = tensor.empty() : tensor<3xf32>
    %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<3xf32>) -> tensor<3xf32>
    %sum = linalg.generic {indexing_maps = [#id, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%residual : tensor<2x3x5x7xf32>) outs(%f4 : tensor<3xf32>) {
    ^bb0(%in: f32, %out: f32):
      %add = arith.addf %in, %out : f32
      linalg.yield %add : f32
    } -> tensor<3xf32>
    return %sum : tensor<3xf32>
  }
}
