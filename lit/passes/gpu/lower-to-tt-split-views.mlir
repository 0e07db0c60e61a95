// RUN: mlirc-opt %s -p mlirc-gpu-lower-to-tt | FileCheck %s

// Kernels reading a reshape of a slice that no strides describe: the shifted
// labels of a language model's loss, `logits[:, :-1].reshape(-1, V)` and
// `ids[:, 1:].reshape(-1)`.  Their flattened rows are [5, 6] rows of a [5, 7]
// buffer: row i is at (i % 6) * stride + (i / 6) * 7 * stride (Memory.splits).
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#flat = affine_map<(d0) -> (d0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// A row group (log-softmax's max and shift) over the 30 rows of 11 logits.
// CHECK-LABEL: module @rows_0_ttir
// CHECK: %[[ROW:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<32xi32>
// CHECK: %[[C6:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6:.*]] = "tt.splat"(%[[C6]])
// CHECK-NEXT: %[[T:.*]] = arith.remsi %[[ROW]], %[[S6]] : tensor<32xi32>
// CHECK-NEXT: %[[C11:.*]] = arith.constant 11 : i32
// CHECK-NEXT: %[[S11:.*]] = "tt.splat"(%[[C11]])
// CHECK-NEXT: %[[TO:.*]] = arith.muli %[[T]], %[[S11]] : tensor<32xi32>
// CHECK-NEXT: %[[C6B:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6B:.*]] = "tt.splat"(%[[C6B]])
// CHECK-NEXT: %[[B:.*]] = arith.divsi %[[ROW]], %[[S6B]] : tensor<32xi32>
// CHECK-NEXT: %[[C77:.*]] = arith.constant 77 : i32
// CHECK-NEXT: %[[S77:.*]] = "tt.splat"(%[[C77]])
// CHECK-NEXT: %[[BO:.*]] = arith.muli %[[B]], %[[S77]] : tensor<32xi32>
// CHECK-NEXT: arith.addi %[[TO]], %[[BO]] : tensor<32xi32>
// CHECK: "tt.load"
// CHECK-NOT: "tt.load"
// CHECK: "tt.store"
func.func @rows_0(%x: tensor<35x11xf32>) -> tensor<30x11xf32> attributes {mlirc.kernel, mlirc.gpu.rows = 1 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [5, 7, 11] : tensor<35x11xf32> into tensor<5x7x11xf32>
  %s = tensor.extract_slice %x3[0, 0, 0] [5, 6, 11] [1, 1, 1] : tensor<5x7x11xf32> to tensor<5x6x11xf32>
  %l = tensor.collapse_shape %s [[0, 1], [2]] : tensor<5x6x11xf32> into tensor<30x11xf32>
  %e = tensor.empty() : tensor<30xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<30xf32>) -> tensor<30xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%l : tensor<30x11xf32>) outs(%f : tensor<30xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.maximumf %a, %out : f32
    linalg.yield %m : f32
  } -> tensor<30xf32>
  %e2 = tensor.empty() : tensor<30x11xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%l, %max : tensor<30x11xf32>, tensor<30xf32>) outs(%e2 : tensor<30x11xf32>) {
  ^bb0(%a: f32, %m: f32, %out: f32):
    %t = arith.subf %a, %m : f32
    linalg.yield %t : f32
  } -> tensor<30x11xf32>
  return %d : tensor<30x11xf32>
}

// The labels, from the second column on: the slice's offset moves the base pointer.
// CHECK-LABEL: module @kernel_1_ttir
// CHECK: %[[FLAT:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<32xi32>
// CHECK: %[[C6:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6:.*]] = "tt.splat"(%[[C6]])
// CHECK-NEXT: %[[T:.*]] = arith.remsi %[[FLAT]], %[[S6]] : tensor<32xi32>
// CHECK-NEXT: %[[C6B:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6B:.*]] = "tt.splat"(%[[C6B]])
// CHECK-NEXT: %[[B:.*]] = arith.divsi %[[FLAT]], %[[S6B]] : tensor<32xi32>
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[S7:.*]] = "tt.splat"(%[[C7]])
// CHECK-NEXT: %[[BO:.*]] = arith.muli %[[B]], %[[S7]] : tensor<32xi32>
// CHECK-NEXT: %[[OFF:.*]] = arith.addi %[[T]], %[[BO]] : tensor<32xi32>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[BASE:.*]] = "tt.addptr"(%arg0, %[[ONE]])
// CHECK-NEXT: %[[PTRS:.*]] = "tt.splat"(%[[BASE]])
// CHECK-NEXT: "tt.addptr"(%[[PTRS]], %[[OFF]])
func.func @kernel_1(%ids: tensor<5x7xi64>) -> tensor<30xi64> attributes {mlirc.kernel} {
  %s = tensor.extract_slice %ids[0, 1] [5, 6] [1, 1] : tensor<5x7xi64> to tensor<5x6xi64>
  %l = tensor.collapse_shape %s [[0, 1]] : tensor<5x6xi64> into tensor<30xi64>
  %e = tensor.empty() : tensor<30xi64>
  %r = linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]} ins(%l : tensor<30xi64>) outs(%e : tensor<30xi64>) {
  ^bb0(%a: i64, %out: i64):
    %t = arith.addi %a, %a : i64
    linalg.yield %t : i64
  } -> tensor<30xi64>
  return %r : tensor<30xi64>
}

// Expanded again in other factors ([30] -> [5, 2, 3]: 2 x 3 are the 6 labels of a
// row), the labels have strides again, [7, 3, 1]: the inner two dims are one run
// of the flat index (flat % 6), the outer one is flat / 6 times 7.
// CHECK-LABEL: module @kernel_2_ttir
// CHECK: %[[FLAT:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<32xi32>
// CHECK: %[[C6:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6:.*]] = "tt.splat"(%[[C6]])
// CHECK-NEXT: %[[D0:.*]] = arith.divsi %[[FLAT]], %[[S6]] : tensor<32xi32>
// CHECK-NEXT: %[[C6B:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6B:.*]] = "tt.splat"(%[[C6B]])
// CHECK-NEXT: %[[IN:.*]] = arith.remsi %[[FLAT]], %[[S6B]] : tensor<32xi32>
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[S7:.*]] = "tt.splat"(%[[C7]])
// CHECK-NEXT: %[[OUT:.*]] = arith.muli %[[D0]], %[[S7]] : tensor<32xi32>
// CHECK-NEXT: arith.addi %[[IN]], %[[OUT]] : tensor<32xi32>
func.func @kernel_2(%ids: tensor<5x7xi64>) -> tensor<5x2x3xi64> attributes {mlirc.kernel} {
  %s = tensor.extract_slice %ids[0, 1] [5, 6] [1, 1] : tensor<5x7xi64> to tensor<5x6xi64>
  %l = tensor.collapse_shape %s [[0, 1]] : tensor<5x6xi64> into tensor<30xi64>
  %l3 = tensor.expand_shape %l [[0, 1, 2]] output_shape [5, 2, 3] : tensor<30xi64> into tensor<5x2x3xi64>
  %e = tensor.empty() : tensor<5x2x3xi64>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%l3 : tensor<5x2x3xi64>) outs(%e : tensor<5x2x3xi64>) {
  ^bb0(%a: i64, %out: i64):
    %t = arith.addi %a, %a : i64
    linalg.yield %t : i64
  } -> tensor<5x2x3xi64>
  return %r : tensor<5x2x3xi64>
}

// A GEMM reads its A operand's rows the same way (the tile's rows wrap modulo 30).
// CHECK-LABEL: module @kernel_3_ttir
// CHECK: %[[FLAT:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<32xi32>
// CHECK: %[[M:.*]] = arith.remsi %[[FLAT]], %{{.*}} : tensor<32xi32>
// CHECK: scf.for
// CHECK: %[[C6:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6:.*]] = "tt.splat"(%[[C6]])
// CHECK-NEXT: arith.remsi %[[M]], %[[S6]] : tensor<32xi32>
// CHECK: %[[C6B:.*]] = arith.constant 6 : i32
// CHECK-NEXT: %[[S6B:.*]] = "tt.splat"(%[[C6B]])
// CHECK-NEXT: %[[B:.*]] = arith.divsi %[[M]], %[[S6B]] : tensor<32xi32>
// CHECK-NEXT: %[[C77:.*]] = arith.constant 77 : i32
// CHECK-NEXT: %[[S77:.*]] = "tt.splat"(%[[C77]])
// CHECK-NEXT: arith.muli %[[B]], %[[S77]] : tensor<32xi32>
// CHECK: "tt.dot"
func.func @kernel_3(%x: tensor<35x11xf32>, %w: tensor<11x13xf32>) -> tensor<30x13xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [5, 7, 11] : tensor<35x11xf32> into tensor<5x7x11xf32>
  %s = tensor.extract_slice %x3[0, 0, 0] [5, 6, 11] [1, 1, 1] : tensor<5x7x11xf32> to tensor<5x6x11xf32>
  %l = tensor.collapse_shape %s [[0, 1], [2]] : tensor<5x6x11xf32> into tensor<30x11xf32>
  %e = tensor.empty() : tensor<30x13xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<30x13xf32>) -> tensor<30x13xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%l, %w : tensor<30x11xf32>, tensor<11x13xf32>) outs(%f : tensor<30x13xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %m = arith.mulf %p, %q : f32
    %a = arith.addf %out, %m : f32
    linalg.yield %a : f32
  } -> tensor<30x13xf32>
  return %r : tensor<30x13xf32>
}
