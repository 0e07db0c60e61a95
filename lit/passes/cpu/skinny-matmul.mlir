// RUN: mlirc-opt %s -p mlirc-cpu-skinny-matmul,canonicalize,cse | FileCheck %s

// A linear layer with 10 outputs (x @ w.t(), w: 10x7) stops being a library call:
// it becomes a contraction over (m, n, k) that reads the weight as stored, (n, k),
// through the transpose it was given.  Its library kernel is gone.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-NOT: func.func @library_0(
// CHECK-LABEL: func.func @library_1(
// CHECK-LABEL: func.func @library_2(
// CHECK-LABEL: func.func @library_3(
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<5x7xf32>, %[[W:[a-z0-9]+]]: tensor<10x7xf32>
// CHECK: %[[WT:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<10x7xf32>)
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<5x10xf32>
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[WT]] : tensor<5x7xf32>, tensor<7x10xf32>) outs(%[[ZERO]] : tensor<5x10xf32>)
// CHECK: %[[P:.*]] = arith.mulf
// CHECK: arith.addf %{{.*}}, %[[P]]
// Kept as library calls: a right operand that is not a transpose (the dot
// product would stride through it), a result 17 wide, a bf16 GEMM (the library
// accumulates in f32).
// CHECK: call @library_1(%[[X]], %{{.*}}) : (tensor<5x7xf32>, tensor<7x10xf32>)
// CHECK: call @library_2(
// CHECK: call @library_3(
// CHECK: return %[[Y]],
// A symbolic row count decides nothing (Dynamo's symbols are at least 2): the
// contraction's rows are the operand's own.
// CHECK-NOT: func.func @library_4(
// CHECK-LABEL: func.func @dynamic(
// CHECK: %[[M:.*]] = tensor.dim %arg0, %c0 : tensor<?x7xf32>
// CHECK: tensor.empty(%[[M]]) : tensor<?x10xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}} : tensor<?x7xf32>, tensor<7x10xf32>) outs(%{{.*}} : tensor<?x10xf32>)
// CHECK-NOT: call
#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @library_0(%a: tensor<5x7xf32>, %b: tensor<7x10xf32>) -> tensor<5x10xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<5x10xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<5x10xf32>) -> tensor<5x10xf32>
    %2 = linalg.matmul ins(%a, %b : tensor<5x7xf32>, tensor<7x10xf32>) outs(%1 : tensor<5x10xf32>) -> tensor<5x10xf32>
    return %2 : tensor<5x10xf32>
  }
  func.func @library_1(%a: tensor<5x7xf32>, %b: tensor<7x10xf32>) -> tensor<5x10xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<5x10xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<5x10xf32>) -> tensor<5x10xf32>
    %2 = linalg.matmul ins(%a, %b : tensor<5x7xf32>, tensor<7x10xf32>) outs(%1 : tensor<5x10xf32>) -> tensor<5x10xf32>
    return %2 : tensor<5x10xf32>
  }
  func.func @library_2(%a: tensor<5x7xf32>, %b: tensor<7x17xf32>) -> tensor<5x17xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<5x17xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<5x17xf32>) -> tensor<5x17xf32>
    %2 = linalg.matmul ins(%a, %b : tensor<5x7xf32>, tensor<7x17xf32>) outs(%1 : tensor<5x17xf32>) -> tensor<5x17xf32>
    return %2 : tensor<5x17xf32>
  }
  func.func @library_3(%a: tensor<5x7xbf16>, %b: tensor<7x10xbf16>) -> tensor<5x10xbf16> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %cst = arith.constant 0.000000e+00 : bf16
    %0 = tensor.empty() : tensor<5x10xbf16>
    %1 = linalg.fill ins(%cst : bf16) outs(%0 : tensor<5x10xbf16>) -> tensor<5x10xbf16>
    %2 = linalg.matmul ins(%a, %b : tensor<5x7xbf16>, tensor<7x10xbf16>) outs(%1 : tensor<5x10xbf16>) -> tensor<5x10xbf16>
    return %2 : tensor<5x10xbf16>
  }
  func.func @main(%x: tensor<5x7xf32>, %w: tensor<10x7xf32>, %v: tensor<7x10xf32>, %w17: tensor<17x7xf32>, %xh: tensor<5x7xbf16>, %wh: tensor<10x7xbf16>) -> (tensor<5x10xf32>, tensor<5x10xf32>, tensor<5x17xf32>, tensor<5x10xbf16>) attributes {mlirc.entry} {
    %e = tensor.empty() : tensor<7x10xf32>
    %wt = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<10x7xf32>) outs(%e : tensor<7x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<7x10xf32>
    %y = call @library_0(%x, %wt) : (tensor<5x7xf32>, tensor<7x10xf32>) -> tensor<5x10xf32>
    %y1 = call @library_1(%x, %v) : (tensor<5x7xf32>, tensor<7x10xf32>) -> tensor<5x10xf32>
    %e17 = tensor.empty() : tensor<7x17xf32>
    %w17t = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w17 : tensor<17x7xf32>) outs(%e17 : tensor<7x17xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<7x17xf32>
    %y2 = call @library_2(%x, %w17t) : (tensor<5x7xf32>, tensor<7x17xf32>) -> tensor<5x17xf32>
    %eh = tensor.empty() : tensor<7x10xbf16>
    %wht = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%wh : tensor<10x7xbf16>) outs(%eh : tensor<7x10xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      linalg.yield %in : bf16
    } -> tensor<7x10xbf16>
    %y3 = call @library_3(%xh, %wht) : (tensor<5x7xbf16>, tensor<7x10xbf16>) -> tensor<5x10xbf16>
    return %y, %y1, %y2, %y3 : tensor<5x10xf32>, tensor<5x10xf32>, tensor<5x17xf32>, tensor<5x10xbf16>
  }
  func.func @library_4(%a: tensor<?x7xf32>, %b: tensor<7x10xf32>) -> tensor<?x10xf32> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %c0 = arith.constant 0 : index
    %d = tensor.dim %a, %c0 : tensor<?x7xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty(%d) : tensor<?x10xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x10xf32>) -> tensor<?x10xf32>
    %2 = linalg.matmul ins(%a, %b : tensor<?x7xf32>, tensor<7x10xf32>) outs(%1 : tensor<?x10xf32>) -> tensor<?x10xf32>
    return %2 : tensor<?x10xf32>
  }
  func.func @dynamic(%x: tensor<?x7xf32>, %w: tensor<10x7xf32>) -> tensor<?x10xf32> attributes {mlirc.entry} {
    %e = tensor.empty() : tensor<7x10xf32>
    %wt = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<10x7xf32>) outs(%e : tensor<7x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<7x10xf32>
    %y = call @library_4(%x, %wt) : (tensor<?x7xf32>, tensor<7x10xf32>) -> tensor<?x10xf32>
    return %y : tensor<?x10xf32>
  }
}
