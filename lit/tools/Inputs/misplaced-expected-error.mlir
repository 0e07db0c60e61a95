// The annotation points at the func, not at the op that fails.
// expected-error @+1 {{op expects exactly 2 operands, but got 1}}
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  // (one line below the annotation's target)
  %0 = "mlirc.mul"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
