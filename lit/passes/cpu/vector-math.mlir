// RUN: mlirc-opt %s -p mlirc-cpu-vector-math | FileCheck %s

// Vector transcendental ops become SLEEF calls of the host width (libtorch_cpu's
// SLEEF, as eager uses), except f32 exp, tanh and erf, expanded inline (the last
// cases); a vector that no SLEEF width divides ends in a chunk padded
// with ones (a peeled loop's tail keeps SLEEF's accuracy).
// Every x86-64 host mlirc targets has AVX2, so 8 x f32 and 4 x f64 always map.

// CHECK-LABEL: func.func @exact_width
// CHECK: %[[E:.*]] = call @Sleef_logf8_u10(%arg0) : (vector<8xf32>) -> vector<8xf32>
// CHECK: %[[P:.*]] = call @Sleef_powf8_u10(%arg0, %[[E]]) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK: call @Sleef_erfd4_u10(%arg1) : (vector<4xf64>) -> vector<4xf64>
// CHECK-NOT: math.
func.func @exact_width(%a: vector<8xf32>, %b: vector<4xf64>) -> (vector<8xf32>, vector<4xf64>) {
  %e = math.log %a : vector<8xf32>
  %p = math.powf %a, %e : vector<8xf32>
  %r = math.erf %b : vector<4xf64>
  return %p, %r : vector<8xf32>, vector<4xf64>
}

// A 2-D vector is flattened and the call made per chunk of the SLEEF width.
// CHECK-LABEL: func.func @two_dims
// CHECK: vector.shape_cast %arg0 : vector<2x8xf64> to vector<16xf64>
// CHECK: call @Sleef_tanhd{{[48]}}_u10
// CHECK: vector.insert_strided_slice
// CHECK: vector.shape_cast %{{.*}} : vector<16xf64> to vector<2x8xf64>
func.func @two_dims(%a: vector<2x8xf64>) -> vector<2x8xf64> {
  %t = math.tanh %a : vector<2x8xf64>
  return %t : vector<2x8xf64>
}

// CHECK-LABEL: func.func @odd_width
// CHECK: %[[ONES:.*]] = arith.constant dense<1.000000e+00> : vector<8xf32>
// CHECK: %[[PAD:.*]] = vector.insert_strided_slice %arg0, %[[ONES]] {{.*}} : vector<5xf32> into vector<8xf32>
// CHECK: %[[E:.*]] = call @Sleef_logf8_u10(%[[PAD]])
// CHECK: vector.extract_strided_slice %[[E]] {offsets = [0], sizes = [5], strides = [1]}
// CHECK: math.exp %arg1 : f32
func.func @odd_width(%a: vector<5xf32>, %s: f32) -> (vector<5xf32>, f32) {
  %e = math.log %a : vector<5xf32>
  %f = math.exp %s : f32
  return %e, %f : vector<5xf32>, f32
}

// 13 = a full chunk and a padded one of 5.
// CHECK-LABEL: func.func @full_and_partial
// CHECK: vector.extract_strided_slice %arg0 {offsets = [0], sizes = [8], strides = [1]}
// CHECK: call @Sleef_sinf8_u10
// CHECK: vector.extract_strided_slice %arg0 {offsets = [8], sizes = [5], strides = [1]}
// CHECK: call @Sleef_sinf8_u10
// CHECK: vector.insert_strided_slice {{.*}} {offsets = [8], strides = [1]} : vector<5xf32> into vector<13xf32>
func.func @full_and_partial(%a: vector<13xf32>) -> vector<13xf32> {
  %t = math.sin %a : vector<13xf32>
  return %t : vector<13xf32>
}

// f32 erf is a polynomial times exp(-x^2) (ATen's form; SLEEF's erff costs ~3x),
// with Horner steps as fmas and the exponential inline (a call per vector spilled
// every constant); below |x| = 0.5 a series keeps the relative error small.
// CHECK-LABEL: func.func @f32_erf
// CHECK-NOT: call
// CHECK: math.absf %arg0 : vector<8xf32>
// CHECK: math.fma
// CHECK: math.floor
// CHECK: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK: math.copysign %{{.*}}, %arg0 : vector<8xf32>
// CHECK: arith.select
// CHECK: return
func.func @f32_erf(%a: vector<8xf32>) -> vector<8xf32> {
  %r = math.erf %a : vector<8xf32>
  return %r : vector<8xf32>
}

// GELU's erf(x) + 1 hides the rational form's small absolute error: no series.
// CHECK-LABEL: func.func @gelu_erf
// CHECK: math.copysign
// CHECK-NOT: arith.select
// CHECK: arith.addf
// CHECK: return
func.func @gelu_erf(%a: vector<8xf32>) -> vector<8xf32> {
  %one = arith.constant dense<1.0> : vector<8xf32>
  %r = math.erf %a : vector<8xf32>
  %s = arith.addf %r, %one : vector<8xf32>
  return %s : vector<8xf32>
}

// f32 exp is inline over the whole float range: clamped to [-104, 89] (a NaN to
// -104, so fptosi never sees one), 2^n as two powers of two (denormal results
// round once), and a NaN argument passed through at the end.
// CHECK-LABEL: func.func @f32_exp
// CHECK-NOT: call
// CHECK: arith.cmpf ogt, %arg0
// CHECK: arith.cmpf olt
// CHECK: math.floor
// CHECK: arith.shrsi
// CHECK: %[[UNO:.*]] = arith.cmpf uno, %arg0, %arg0 : vector<8xf32>
// CHECK: arith.select %[[UNO]], %arg0, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK: return
func.func @f32_exp(%a: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %a : vector<8xf32>
  return %e : vector<8xf32>
}

// f32 tanh is inline too: an odd polynomial near 0, (1 - e) / (1 + e) with
// e = exp(-2|x|) elsewhere, and x's sign put back last (tanh(-0.0) = -0.0).
// CHECK-LABEL: func.func @f32_tanh
// CHECK-NOT: call
// CHECK: %[[ABS:.*]] = math.absf %arg0 : vector<8xf32>
// CHECK: math.fma
// CHECK: math.floor
// CHECK: arith.divf
// CHECK: %[[NEAR:.*]] = arith.cmpf ult, %[[ABS]]
// CHECK: %[[T:.*]] = arith.select %[[NEAR]]
// CHECK: math.copysign %[[T]], %arg0 : vector<8xf32>
// CHECK: return
func.func @f32_tanh(%a: vector<8xf32>) -> vector<8xf32> {
  %t = math.tanh %a : vector<8xf32>
  return %t : vector<8xf32>
}

// Scalar expm1 is libm's: convert-math-to-llvm's exp(x) - 1 is 0 for tiny x.  Half
// types compute in f32; vectors stay with SLEEF.
// CHECK-LABEL: func.func @scalar_expm1
// CHECK: call @expm1f(%arg0) : (f32) -> f32
// CHECK: call @expm1(%arg1) : (f64) -> f64
// CHECK: %[[W:.*]] = arith.extf %arg2 : bf16 to f32
// CHECK: %[[R:.*]] = call @expm1f(%[[W]]) : (f32) -> f32
// CHECK: arith.truncf %[[R]] : f32 to bf16
// CHECK: call @Sleef_expm1f8_u10
// CHECK-NOT: math.expm1
func.func @scalar_expm1(%a: f32, %b: f64, %c: bf16, %d: vector<8xf32>) -> (f32, f64, bf16, vector<8xf32>) {
  %ea = math.expm1 %a : f32
  %eb = math.expm1 %b : f64
  %ec = math.expm1 %c : bf16
  %ed = math.expm1 %d : vector<8xf32>
  return %ea, %eb, %ec, %ed : f32, f64, bf16, vector<8xf32>
}

// SLEEF is pure: declared readnone (plus nounwind/willreturn), LLVM may CSE and hoist its calls.
// CHECK: func.func private @Sleef_logf8_u10(vector<8xf32>) -> vector<8xf32> attributes {llvm.readnone, passthrough = ["nounwind", "willreturn"]}
