// RUN: mlirc-opt --verify-diagnostics %s
// expected-error {{op expects exactly 2 operands, but got 1}}
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "mlirc.mul"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
