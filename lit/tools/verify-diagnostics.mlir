// RUN: mlirc-opt --verify-diagnostics %s
// RUN: %not mlirc-opt --verify-diagnostics %S/Inputs/misplaced-expected-error.mlir 2>&1 | FileCheck %s

// An annotation names its line: its own, or @+N / @-N / @above / @below, as mlir-opt.
// expected-error @+2 {{op expects exactly 2 operands, but got 1}}
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "mlirc.mul"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// The right message on the wrong line is two failures.
// CHECK: line 3: expected error not produced: op expects exactly 2 operands, but got 1
// CHECK: line 5: unexpected error: {{.*}}op expects exactly 2 operands, but got 1
