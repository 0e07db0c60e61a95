// RUN: mlirc-opt %s -p mlirc-cpu-vector-math | FileCheck %s

// Vector transcendental ops become SLEEF calls of the host width (libtorch_cpu's
// SLEEF, as eager uses); vectors that no SLEEF width divides keep the libm path.
// Every x86-64 host mlirc targets has AVX2, so 8 x f32 and 4 x f64 always map.

// CHECK-LABEL: func.func @exact_width
// CHECK: %[[E:.*]] = call @Sleef_expf8_u10(%arg0) : (vector<8xf32>) -> vector<8xf32>
// CHECK: %[[P:.*]] = call @Sleef_powf8_u10(%arg0, %[[E]]) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK: call @Sleef_erfd4_u10(%arg1) : (vector<4xf64>) -> vector<4xf64>
// CHECK-NOT: math.
func.func @exact_width(%a: vector<8xf32>, %b: vector<4xf64>) -> (vector<8xf32>, vector<4xf64>) {
  %e = math.exp %a : vector<8xf32>
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
// CHECK: math.exp %arg0 : vector<5xf32>
// CHECK: math.exp %arg1 : f32
func.func @odd_width(%a: vector<5xf32>, %s: f32) -> (vector<5xf32>, f32) {
  %e = math.exp %a : vector<5xf32>
  %f = math.exp %s : f32
  return %e, %f : vector<5xf32>, f32
}

// f32 erf is a polynomial times exp(-x^2) (ATen's form; SLEEF's erff costs ~3x):
// only the exponential is a SLEEF call, and the sign is put back with copysign.
// CHECK-LABEL: func.func @f32_erf
// CHECK-NOT: Sleef_erff
// CHECK: math.absf %arg0 : vector<8xf32>
// CHECK: call @Sleef_expf8_u10
// CHECK: math.copysign %{{.*}}, %arg0 : vector<8xf32>
func.func @f32_erf(%a: vector<8xf32>) -> vector<8xf32> {
  %r = math.erf %a : vector<8xf32>
  return %r : vector<8xf32>
}

// CHECK: func.func private @Sleef_expf8_u10(vector<8xf32>) -> vector<8xf32>
