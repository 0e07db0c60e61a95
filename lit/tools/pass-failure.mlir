// RUN: %not mlirc-opt %s -p mlirc-lower-to-linalg 2>&1 | FileCheck %s
// RUN: %not mlirc-opt %s -p no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// A pass that cannot handle its input (valid for the dialect verifier: the importer
// never makes an integer reciprocal, but nothing forbids one) fails with a
// diagnostic at the op and exit 1.
// CHECK: pass-failure.mlir:[[@LINE+5]]:8: error: mlirc-lower-to-linalg: mlirc cannot lower mlirc.reciprocal: no scalar lowering for element type i64
// CHECK-NOT: Traceback

// UNKNOWN: error: 'no-such-pass' does not refer to a registered pass or pass pipeline
func.func @f(%a: tensor<2xi64>) -> tensor<2xi64> {
  %0 = "mlirc.reciprocal"(%a) : (tensor<2xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
