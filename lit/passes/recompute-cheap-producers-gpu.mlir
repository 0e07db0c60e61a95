// RUN: mlirc-opt %s --split-input-file -p "mlirc-recompute-cheap-producers{recompute-max-ops=24 recompute-divisions=1 recompute-math=1}" | FileCheck %s
// RUN: mlirc-opt %s --split-input-file -p "mlirc-recompute-cheap-producers{recompute-max-ops=24 recompute-divisions=1 recompute-math=1},mlirc-fuse-elementwise" | FileCheck %s --check-prefix=FUSED
// RUN: mlirc-opt %s --split-input-file -p "mlirc-recompute-cheap-producers{recompute-max-ops=24 recompute-divisions=1 recompute-math=1 fused=1}" | FileCheck %s --check-prefix=FUSED
// RUN: mlirc-opt %s --split-input-file -p "mlirc-recompute-cheap-producers{recompute-max-ops=24 recompute-divisions=1 recompute-math=1 fused=1}" | FileCheck %s --check-prefix=GATHERED

// The GPU backend's options for this pass (mlirc.backends.gpu.PASS_OPTIONS).

// On a GPU, where such kernels are memory-bound, computed again in each reader (as
// Inductor inlines pointwise work): after fusion nothing writes the GELU's result,
// and both readers read the GEMM's result and the bias instead (ConvNeXt-V2's
// global response norm).
// CHECK-LABEL: func.func @gelu_on_gpu
// CHECK-COUNT-2: math.erf
// FUSED-LABEL: func.func @gelu_on_gpu
// FUSED: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x6xf32>, tensor<6xf32>) outs(%{{.*}} : tensor<4xf32>)
// FUSED: math.erf
// FUSED: linalg.generic {{.*}} ins(%arg0, %arg1, %{{.*}} : tensor<4x6xf32>, tensor<6xf32>, tensor<4xf32>)
// FUSED: math.erf
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
module attributes {mlirc.target = "cuda"} {
func.func @gelu_on_gpu(%x: tensor<4x6xf32>, %bias: tensor<6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %bias : tensor<4x6xf32>, tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %c0 = arith.constant 0.707106769 : f32
    %c1 = arith.constant 1.0 : f32
    %c2 = arith.constant 0.5 : f32
    %y = arith.addf %a, %b : f32
    %s = arith.mulf %y, %c0 : f32
    %erf = math.erf %s : f32
    %p = arith.addf %erf, %c1 : f32
    %h = arith.mulf %y, %c2 : f32
    %r = arith.mulf %h, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%g : tensor<4x6xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%g, %sum : tensor<4x6xf32>, tensor<4xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x6xf32>
  return %scaled : tensor<4x6xf32>
}
}
// -----
// Cross-entropy's backward on a language model's shifted labels (GPT-2's loss): the
// one-hot gradient [rows, vocab] (a select on the target, scaled by the loss's
// gradient over the weight) is read by log-softmax's row sums through a reshape and
// by slice_backward's padding, a gather.  The padding gets its own copy (with the
// reshape), which mlirc-fuse-gathered-producers computes at the index it gathers:
// the padding reads the targets, not the one-hot, which dies after the sums (the
// one-hot beside the padded gradient was the backward's peak on the H100).  The sums
// keep the one-hot written out: upstream fusion does not fuse a producer into a
// reduction whose reduced dim (the vocabulary) no input of the producer spans.
// CHECK-LABEL: func.func @one_hot_read_by_sum_and_padding
// CHECK: %[[A:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<6x5xf32>)
// CHECK: %[[RA:.*]] = tensor.expand_shape %[[A]]
// CHECK: linalg.generic {{.*}} ins(%[[RA]] : tensor<2x3x5xf32>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<6x5xf32>)
// CHECK: %[[RB:.*]] = tensor.expand_shape %[[B]]
// CHECK: linalg.generic
// CHECK: tensor.extract %[[RB]]
// GATHERED-LABEL: func.func @one_hot_read_by_sum_and_padding
// GATHERED: %[[HOT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3x5xf32>)
// GATHERED: linalg.generic {{.*}} ins(%[[HOT]] : tensor<2x3x5xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// GATHERED: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x5xf32>)
// GATHERED-NOT: tensor.extract %[[HOT]]
// GATHERED: tensor.extract %arg0
// GATHERED: arith.divf
// GATHERED-NOT: tensor.extract %[[HOT]]
// GATHERED: return
#rows = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1)>
module attributes {mlirc.target = "cuda"} {
func.func @one_hot_read_by_sum_and_padding(%target: tensor<6xi64>, %grad: tensor<f32>, %total: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x4x5xf32>) {
  %e = tensor.empty() : tensor<6x5xf32>
  %one_hot = linalg.generic {indexing_maps = [#rows, #scalar, #scalar, #id2], iterator_types = ["parallel", "parallel"]} ins(%target, %grad, %total : tensor<6xi64>, tensor<f32>, tensor<f32>) outs(%e : tensor<6x5xf32>) {
  ^bb0(%t: i64, %g: f32, %n: f32, %out: f32):
    %minus_one = arith.constant -1.0 : f32
    %zero = arith.constant 0.0 : f32
    %col = linalg.index 1 : index
    %c = arith.index_cast %col : index to i64
    %hit = arith.cmpi eq, %t, %c : i64
    %scale = arith.divf %g, %n : f32
    %sign = arith.select %hit, %minus_one, %zero : f32
    %r = arith.mulf %sign, %scale : f32
    linalg.yield %r : f32
  } -> tensor<6x5xf32>
  %shaped = tensor.expand_shape %one_hot [[0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
  %e2 = tensor.empty() : tensor<2x3xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #rows3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%shaped : tensor<2x3x5xf32>) outs(%f : tensor<2x3xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x3xf32>
  %e3 = tensor.empty() : tensor<2x4x5xf32>
  %padded = linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e3 : tensor<2x4x5xf32>) {
  ^bb0(%out: f32):
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %zero_f = arith.constant 0.0 : f32
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %jc = arith.minsi %j, %c2 : index
    %v = tensor.extract %shaped[%i, %jc, %k] : tensor<2x3x5xf32>
    %inside = arith.cmpi slt, %j, %c3 : index
    %r = arith.select %inside, %v, %zero_f : f32
    linalg.yield %r : f32
  } -> tensor<2x4x5xf32>
  return %sum, %padded : tensor<2x3xf32>, tensor<2x4x5xf32>
}
}
