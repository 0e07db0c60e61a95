// RUN: mlirc-opt %s -p mlirc-cpu-masked-reductions | FileCheck %s

// A masked max (min) reduction: the dead lanes take -inf (+inf) by a select and
// the reduction is unmasked (MLIR's own lowering of the mask fills them with a
// denormal: amax of negative values came out as -1.4e-45).  A masked sum stays.

// CHECK-LABEL: func.func @masked
// CHECK: %[[NEG:.*]] = arith.constant dense<0xFF800000> : vector<16xf32>
// CHECK: %[[LIVE:.*]] = arith.select %arg1, %arg0, %[[NEG]] : vector<16xi1>, vector<16xf32>
// CHECK: %[[MAX:.*]] = vector.reduction <maximumf>, %[[LIVE]], %arg2 : vector<16xf32> into f32
// CHECK: %[[POS:.*]] = arith.constant dense<0x7F800000> : vector<16xf32>
// CHECK: %[[LIVE2:.*]] = arith.select %arg1, %arg0, %[[POS]]
// CHECK: vector.reduction <minimumf>, %[[LIVE2]], %[[MAX]]
// CHECK: vector.mask %arg1 { vector.reduction <add>
func.func @masked(%v: vector<16xf32>, %m: vector<16xi1>, %acc: f32) -> f32 {
  %0 = vector.mask %m { vector.reduction <maximumf>, %v, %acc : vector<16xf32> into f32 } : vector<16xi1> -> f32
  %1 = vector.mask %m { vector.reduction <minimumf>, %v, %0 : vector<16xf32> into f32 } : vector<16xi1> -> f32
  %2 = vector.mask %m { vector.reduction <add>, %v, %1 : vector<16xf32> into f32 } : vector<16xi1> -> f32
  return %2 : f32
}
