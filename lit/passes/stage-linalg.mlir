// RUN: mlirc-opt %s -p mlirc-stage-linalg | FileCheck %s

// The whole mlirc -> linalg stage on a softmax as the importer emits it: reductions
// are linalg.generic with a reduction iterator over a filled init (-inf for max,
// 0 for sum) of the reduced shape, reshaped to keepdim's shape afterwards (the
// split-reduction schedule needs plain dims in the output map); the keepdim
// broadcast is folded into the consumers' indexing maps.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[RED:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[MAX_INIT:.*]] = linalg.fill ins(%[[NEG_INF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[RED]]], iterator_types = ["parallel", "reduction"]}
// CHECK:   arith.maximumf
// CHECK: %[[MAX_KEPT:.*]] = tensor.expand_shape %[[MAX]] {{\[\[}}0, 1]] output_shape [3, 1]
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %[[MAX_KEPT]]
// CHECK:   arith.subf
// CHECK: math.exp
// CHECK: linalg.fill ins(%[[ZERO]] : f32)
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK-NOT: mlirc.
func.func @main(%arg0: tensor<3x5xf32>) -> tensor<3x5xf32> attributes {mlirc.entry} {
  %0 = "mlirc.reduce_max"(%arg0) {dims = array<i64: 1>, keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %1 = "mlirc.sub"(%arg0, %0) : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %2 = "mlirc.exp"(%1) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %3 = "mlirc.reduce_sum"(%2) {dims = array<i64: 1>, keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %4 = "mlirc.div"(%2, %3) : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  return %4 : tensor<3x5xf32>
}
