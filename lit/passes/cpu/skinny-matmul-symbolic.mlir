// RUN: %not mlirc-opt %s -p mlirc-cpu-skinny-matmul 2>&1 | FileCheck %s

// A linear layer whose weight has a symbolic size: whether it is narrow enough to
// generate is that size, so the pass cannot decide and asks for static sizes (the
// compile driver then binds them before the stage).
// CHECK: error: {{.*}}mlirc-cpu-skinny-matmul{{.*}}a linear layer's weight of symbolic shape [7, None]
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @library_0(%a: tensor<?x7xf32>, %b: tensor<7x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = tensor.dim %a, %c0 : tensor<?x7xf32>
    %n = tensor.dim %b, %c1 : tensor<7x?xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty(%m, %n) : tensor<?x?xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x?xf32>) -> tensor<?x?xf32>
    %2 = linalg.matmul ins(%a, %b : tensor<?x7xf32>, tensor<7x?xf32>) outs(%1 : tensor<?x?xf32>) -> tensor<?x?xf32>
    return %2 : tensor<?x?xf32>
  }
  func.func @symbolic_weight(%x: tensor<?x7xf32>, %w: tensor<?x7xf32>) -> tensor<?x?xf32> attributes {mlirc.entry} {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %w, %c0 : tensor<?x7xf32>
    %e = tensor.empty(%n) : tensor<7x?xf32>
    %wt = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<?x7xf32>) outs(%e : tensor<7x?xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<7x?xf32>
    %y = call @library_0(%x, %wt) : (tensor<?x7xf32>, tensor<7x?xf32>) -> tensor<?x?xf32>
    return %y : tensor<?x?xf32>
  }
}
