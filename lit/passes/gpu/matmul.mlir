// RUN: mlirc-opt %s -p 'mlirc-gpu-matmul{mode=generated}' | FileCheck %s
// RUN: mlirc-opt %s -p 'mlirc-gpu-matmul{mode=extern}' | FileCheck %s --check-prefix=EXTERN
// RUN: mlirc-opt %s -p mlirc-gpu-matmul | FileCheck %s --check-prefix=EXTERN
// RUN: mlirc-opt %s -p 'mlirc-stage-gpu-fusion{mode=generated},mlirc-stage-gpu' --mlir-print-generic | FileCheck %s --check-prefix=TT

// A bf16 linear layer, GELU and a residual: the weight's transpose view, the GEMM
// and its epilogue kernel become one kernel @matmul_0 (M = 2x5 split by a reshape).
// CHECK-LABEL: func.func @matmul_0(%arg0: tensor<48x64xbf16>, %arg1: tensor<10x64xbf16>, %arg2: tensor<2x5x64xbf16>, %arg3: tensor<48xbf16>) -> tensor<2x5x48xbf16>
// CHECK:   %[[WT:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<48x64xbf16>) outs(%{{.*}} : tensor<64x48xbf16>)
// CHECK:   %[[MM:.*]] = linalg.matmul ins(%arg1, %[[WT]] : tensor<10x64xbf16>, tensor<64x48xbf16>)
// CHECK:   %[[E:.*]] = tensor.expand_shape %[[MM]] {{\[\[}}0, 1], [2]]
// CHECK:   linalg.generic {{.*}} ins(%[[E]], %arg3, %{{.*}} : tensor<2x5x48xbf16>, tensor<48xbf16>, tensor<2x5x48xbf16>)
// CHECK:     math.erf
// CHECK-NOT: func.func @library_0
// CHECK-NOT: func.func @kernel_1
// CHECK-LABEL: func.func @main
// CHECK-NEXT:  tensor.collapse_shape
// CHECK-NEXT:  %[[R:.*]] = call @matmul_0(%arg0, %collapsed, %arg2, %arg1)
// CHECK-NEXT:  return %[[R]]

// EXTERN-NOT: @matmul_
// EXTERN: call @library_0

// The GEMM is a tt.dot loop over K with 16x64 (M x N) tiles, clamped from 128x128
// to the problem; the epilogue runs on the f32 accumulator, then one bf16 store.
// TT: mlirc.gpu.num_stages = 3 : i64, mlirc.gpu.num_warps = 4 : i64, mlirc.gpu.ttir = "matmul_0_ttir"
// TT: "builtin.module"() <{sym_name = "matmul_0_ttir"}>
// TT: "scf.for"
// TT: "tt.load"
// TT: "tt.load"
// TT: "tt.dot"(%{{.*}}, %{{.*}}, %{{.*}}) {inputPrecision = 2 : i32, maxNumImpreciseAcc = 0 : i32} : (tensor<16x64xbf16>, tensor<64x64xbf16>, tensor<16x64xf32>) -> tensor<16x64xf32>
// TT: "scf.yield"
// TT: "math.erf"
// TT: "arith.truncf"
// TT: "tt.store"
// TT: arg_attrs = [{tt.divisibility = 16 : i32}

#map = affine_map<(d0, d1) -> (d1, d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d2)>
module {
  func.func @library_0(%arg0: tensor<10x64xbf16>, %arg1: tensor<64x48xbf16>) -> tensor<10x48xbf16> attributes {mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}} {
    %cst = arith.constant 0.000000e+00 : bf16
    %0 = tensor.empty() : tensor<10x48xbf16>
    %1 = linalg.fill ins(%cst : bf16) outs(%0 : tensor<10x48xbf16>) -> tensor<10x48xbf16>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<10x64xbf16>, tensor<64x48xbf16>) outs(%1 : tensor<10x48xbf16>) -> tensor<10x48xbf16>
    return %2 : tensor<10x48xbf16>
  }
  func.func @kernel_0(%arg0: tensor<48x64xbf16>) -> tensor<64x48xbf16> attributes {mlirc.kernel, mlirc.library = "permute", mlirc.perm = array<i64: 1, 0>} {
    %0 = tensor.empty() : tensor<64x48xbf16>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<48x64xbf16>) outs(%0 : tensor<64x48xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      linalg.yield %in : bf16
    } -> tensor<64x48xbf16>
    return %1 : tensor<64x48xbf16>
  }
  func.func @kernel_1(%arg0: tensor<10x48xbf16>, %arg1: tensor<2x5x64xbf16>, %arg2: tensor<48xbf16>) -> tensor<2x5x48xbf16> attributes {mlirc.kernel} {
    %cst = arith.constant 5.000000e-01 : bf16
    %cst_0 = arith.constant 1.000000e+00 : bf16
    %cst_1 = arith.constant 7.070310e-01 : bf16
    %expanded = tensor.expand_shape %arg0 [[0, 1], [2]] output_shape [2, 5, 48] : tensor<10x48xbf16> into tensor<2x5x48xbf16>
    %0 = tensor.empty() : tensor<2x5x48xbf16>
    %extracted_slice = tensor.extract_slice %arg1[0, 0, 0] [2, 5, 48] [1, 1, 1] : tensor<2x5x64xbf16> to tensor<2x5x48xbf16>
    %1 = linalg.generic {indexing_maps = [#map2, #map3, #map2, #map2], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded, %arg2, %extracted_slice : tensor<2x5x48xbf16>, tensor<48xbf16>, tensor<2x5x48xbf16>) outs(%0 : tensor<2x5x48xbf16>) {
    ^bb0(%in: bf16, %in_2: bf16, %in_3: bf16, %out: bf16):
      %2 = arith.addf %in, %in_2 : bf16
      %3 = arith.mulf %2, %cst_1 : bf16
      %4 = math.erf %3 : bf16
      %5 = arith.addf %4, %cst_0 : bf16
      %6 = arith.mulf %2, %5 : bf16
      %7 = arith.mulf %6, %cst : bf16
      %8 = arith.addf %7, %in_3 : bf16
      linalg.yield %8 : bf16
    } -> tensor<2x5x48xbf16>
    return %1 : tensor<2x5x48xbf16>
  }
  func.func @main(%arg0: tensor<48x64xbf16>, %arg1: tensor<48xbf16>, %arg2: tensor<2x5x64xbf16>) -> tensor<2x5x48xbf16> attributes {mlirc.entry} {
    %collapsed = tensor.collapse_shape %arg2 [[0, 1], [2]] : tensor<2x5x64xbf16> into tensor<10x64xbf16>
    %0 = call @kernel_0(%arg0) : (tensor<48x64xbf16>) -> tensor<64x48xbf16>
    %1 = call @library_0(%collapsed, %0) : (tensor<10x64xbf16>, tensor<64x48xbf16>) -> tensor<10x48xbf16>
    %2 = call @kernel_1(%1, %arg2, %arg1) : (tensor<10x48xbf16>, tensor<2x5x64xbf16>, tensor<48xbf16>) -> tensor<2x5x48xbf16>
    return %2 : tensor<2x5x48xbf16>
  }
}
