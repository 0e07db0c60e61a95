// RUN: mlirc-opt %s -p mlirc-cpu-hoist-invariant-scalars | FileCheck %s
// RUN: mlirc-opt %s -p mlirc-cpu-hoist-invariant-scalars,mlirc-stage-cpu > /dev/null

// An AdamW step's bias corrections, from the 0-d step count: read once, the powers,
// the square root and the divisions before the loop; the per-element math stays.
// CHECK-LABEL: func.func @kernel_bias_correction
// CHECK: %[[STEP:.*]] = tensor.extract %arg2[] : tensor<f32>
// CHECK: math.powf %{{.*}}, %[[STEP]]
// CHECK: math.sqrt %{{.*}} : f32
// CHECK: linalg.generic
// CHECK-NOT: math.powf
// CHECK: math.sqrt %{{.*}} : f32
// CHECK: arith.divf
// CHECK: linalg.yield
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @kernel_bias_correction(%v: tensor<13x40xf32>, %m: tensor<13x40xf32>, %step: tensor<f32>) -> tensor<13x40xf32> attributes {mlirc.kernel} {
  %beta1 = arith.constant 0.9 : f32
  %beta2 = arith.constant 0.999 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<13x40xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%v, %m, %step : tensor<13x40xf32>, tensor<13x40xf32>, tensor<f32>) outs(%e : tensor<13x40xf32>) {
  ^bb0(%vi: f32, %mi: f32, %s: f32, %o: f32):
    %p1 = math.powf %beta1, %s : f32
    %c1 = arith.subf %one, %p1 : f32
    %p2 = math.powf %beta2, %s : f32
    %c2 = arith.subf %one, %p2 : f32
    %r2 = math.sqrt %c2 : f32
    %denom = math.sqrt %vi : f32
    %d = arith.divf %denom, %r2 : f32
    %num = arith.divf %mi, %c1 : f32
    %u = arith.divf %num, %d : f32
    linalg.yield %u : f32
  } -> tensor<13x40xf32>
  return %r : tensor<13x40xf32>
}

// An integer division by a 0-d divisor stays in the loop: hoisted, a zero divisor
// would trap where the loop (here over no elements) never divides.  Its product
// cannot trap, and moves.
// CHECK-LABEL: func.func @kernel_integer_division
// CHECK: %[[D:.*]] = tensor.extract %arg1[] : tensor<i32>
// CHECK: arith.muli %[[D]]
// CHECK: linalg.generic
// CHECK: arith.divsi %{{.*}}, %[[D]]
// CHECK: linalg.yield
func.func @kernel_integer_division(%x: tensor<0x5xi32>, %d: tensor<i32>) -> tensor<0x5xi32> attributes {mlirc.kernel} {
  %c7 = arith.constant 7 : i32
  %e = tensor.empty() : tensor<0x5xi32>
  %r = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %d : tensor<0x5xi32>, tensor<i32>) outs(%e : tensor<0x5xi32>) {
  ^bb0(%xi: i32, %di: i32, %o: i32):
    %k = arith.divsi %c7, %di : i32
    %t = arith.muli %di, %c7 : i32
    %q = arith.addi %k, %t : i32
    %y = arith.addi %xi, %q : i32
    linalg.yield %y : i32
  } -> tensor<0x5xi32>
  return %r : tensor<0x5xi32>
}

// A 0-d constant operand (a graph bound from a symbolic import keeps them) becomes
// the scalar constant a statically traced graph has, so both compile alike.
// CHECK-LABEL: func.func @kernel_constant_operand
// CHECK-NOT: tensor.extract
// CHECK: %[[C:.*]] = arith.constant 3.000000e+01 : f32
// CHECK: linalg.generic
// CHECK: arith.divf %{{.*}}, %[[C]]
func.func @kernel_constant_operand(%x: tensor<6x8xf32>) -> tensor<6x8xf32> attributes {mlirc.kernel} {
  %c = arith.constant dense<3.0e+01> : tensor<f32>
  %e = tensor.empty() : tensor<6x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %c : tensor<6x8xf32>, tensor<f32>) outs(%e : tensor<6x8xf32>) {
  ^bb0(%xi: f32, %ci: f32, %o: f32):
    %y = arith.divf %xi, %ci : f32
    linalg.yield %y : f32
  } -> tensor<6x8xf32>
  return %r : tensor<6x8xf32>
}
