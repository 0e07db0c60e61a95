// RUN: mlirc-opt --split-input-file %s -p mlirc-lower-to-linalg | FileCheck %s

// Broadcasting is folded into indexing maps, nothing is materialized.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]]
// CHECK: arith.addf
func.func @add_broadcast(%a: tensor<7x33xf32>, %b: tensor<33xf32>) -> tensor<7x33xf32> {
  %0 = "mlirc.add"(%a, %b) : (tensor<7x33xf32>, tensor<33xf32>) -> tensor<7x33xf32>
  return %0 : tensor<7x33xf32>
}

// -----

// Bool tensors are stored as i8 bytes (torch's layout).
// CHECK-LABEL: func.func @compare(%{{.*}}: tensor<5xi64>, %{{.*}}: tensor<5xi64>) -> tensor<5xi8>
// CHECK: arith.cmpi slt
// CHECK: arith.extui %{{.*}} : i1 to i8
func.func @compare(%a: tensor<5xi64>, %b: tensor<5xi64>) -> tensor<5xi1> {
  %0 = "mlirc.lt"(%a, %b) : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi1>
  return %0 : tensor<5xi1>
}

// -----

// CHECK-LABEL: func.func @convert
// CHECK: arith.sitofp %{{.*}} : i64 to f32
func.func @convert(%a: tensor<3xi64>) -> tensor<3xf32> {
  %0 = "mlirc.convert"(%a) : (tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @where
// CHECK: arith.trunci %{{.*}} : i8 to i1
// CHECK: arith.select
func.func @where(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mlirc.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A fused multiply-add (prims.fma) stays one op, rounded once; its operands broadcast.
// CHECK-LABEL: func.func @fused_multiply_add
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}]
// CHECK: math.fma %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.mulf
func.func @fused_multiply_add(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %c: tensor<3x1xf32>) -> tensor<3x4xf32> {
  %0 = "mlirc.fma"(%a, %b, %c) : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
