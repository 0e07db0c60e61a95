// RUN: mlirc-opt %s --split-input-file -p mlirc-outline-library-calls | FileCheck %s
// f32/f64 GEMMs and convolutions are outlined into library kernels that carry the
// op's attributes; the entry calls them, so elementwise fusion cannot reach them.
// Integer GEMMs and everything else stay in the entry, to be generated.

// CHECK-LABEL: func.func @library_0(%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-SAME: mlirc.kernel, mlirc.library = "mm", mlirc.library_args = {}
// CHECK-NEXT: "mlirc.matmul"
// CHECK-NEXT: return
// CHECK-LABEL: func.func @library_1
// CHECK-SAME: mlirc.library = "conv2d"
// CHECK-SAME: mlirc.library_args = {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 1, 0>, stride = array<i64: 2, 2>}
// CHECK-NEXT: "mlirc.conv2d"
// CHECK-LABEL: func.func @library_2
// CHECK-SAME: mlirc.library = "bmm"
// CHECK-LABEL: func.func @main
// CHECK: %[[MM:.*]] = call @library_0(%arg0, %arg1)
// CHECK: "mlirc.relu"(%[[MM]])
// CHECK: "mlirc.matmul"(%arg2, %arg3) : (tensor<4x16xi64>, tensor<16x8xi64>)
// CHECK: call @library_1(%arg4, %arg5)
// CHECK: call @library_2(%arg6, %arg6)
func.func @main(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %ia: tensor<4x16xi64>, %ib: tensor<16x8xi64>,
                %x: tensor<1x4x9x9xf64>, %w: tensor<6x2x3x3xf64>, %s: tensor<2x5x5xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xi64>, tensor<1x6x5x4xf64>, tensor<2x5x5xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.matmul"(%a, %b) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %1 = "mlirc.relu"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "mlirc.matmul"(%ia, %ib) : (tensor<4x16xi64>, tensor<16x8xi64>) -> tensor<4x8xi64>
  %3 = "mlirc.conv2d"(%x, %w) {stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf64>, tensor<6x2x3x3xf64>) -> tensor<1x6x5x4xf64>
  %4 = "mlirc.batch_matmul"(%s, %s) : (tensor<2x5x5xf32>, tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  return %1, %2, %3, %4 : tensor<4x8xf32>, tensor<4x8xi64>, tensor<1x6x5x4xf64>, tensor<2x5x5xf32>
}

// -----

// A GEMM of symbolic shape is outlined as a static one is: the host wrapper calls
// the library at the sizes of each call.
// CHECK-LABEL: func.func @library_0(%{{.*}}: tensor<?x16xf32>, %{{.*}}: tensor<16x8xf32>) -> tensor<?x8xf32>
// CHECK-SAME: mlirc.library = "mm"
// CHECK-LABEL: func.func @library_1(%{{.*}}: tensor<16x8xf32>, %{{.*}}: tensor<8x4xf32>) -> tensor<16x4xf32>
// CHECK-LABEL: func.func @symbolic
// CHECK: call @library_0(%arg0, %arg1) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
// CHECK: call @library_1(%arg1, %arg2)
func.func @symbolic(%a: tensor<?x16xf32>, %b: tensor<16x8xf32>, %c: tensor<8x4xf32>) -> (tensor<?x8xf32>, tensor<16x4xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.matmul"(%a, %b) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %1 = "mlirc.matmul"(%b, %c) : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<16x4xf32>
}

// -----

// On the CPU, a half-type GEMM whose only reader adds an aten.addmm's per-column
// bias (mlirc.addmm_bias) takes the add into its kernel ("addmm": the library adds the
// bias before its one rounding, as eager's addmm does).  A float32 GEMM's bias joins
// it only where the add would be a kernel of its own (its result reaches, through
// views, only results and library calls): not where a multiply reads it, nor for a
// narrow result (mlirc-cpu-skinny-matmul generates those, bias fused).  A GEMM whose
// result is read twice, and a user's own `x @ w + b` (two roundings in eager too),
// keep their adds outside.
// CHECK-LABEL: func.func @library_0(%{{.*}}: tensor<4x16xbf16>, %{{.*}}: tensor<16x8xbf16>, %{{.*}}: tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK-SAME: mlirc.library = "addmm"
// CHECK-NEXT: %[[P:.*]] = "mlirc.matmul"(%arg0, %arg1)
// CHECK-NEXT: %[[S:.*]] = "mlirc.add"(%arg2, %[[P]])
// CHECK-NEXT: return %[[S]]
// CHECK-LABEL: func.func @library_1
// CHECK-SAME: mlirc.library = "addmm"
// CHECK-LABEL: func.func @library_2
// CHECK-SAME: mlirc.library = "mm"
// CHECK-LABEL: func.func @library_3
// CHECK-SAME: mlirc.library = "mm"
// CHECK-LABEL: func.func @library_4
// CHECK-SAME: mlirc.library = "mm"
// CHECK-LABEL: func.func @library_5
// CHECK-SAME: mlirc.library = "mm"
// CHECK-LABEL: func.func @biases
// CHECK: %[[A:.*]] = call @library_0(%arg0, %arg1, %arg2)
// CHECK: %[[F:.*]] = call @library_1(%arg3, %arg4, %arg5)
// CHECK: %[[G:.*]] = call @library_2(%arg3, %arg4)
// CHECK: %[[GB:.*]] = "mlirc.add"(%[[G]], %arg5)
// CHECK: "mlirc.mul"(%[[GB]], %[[GB]])
// CHECK: %[[T:.*]] = call @library_3(%arg0, %arg1)
// CHECK: "mlirc.add"(%[[T]], %arg2)
// CHECK: "mlirc.relu"(%[[T]])
// CHECK: %[[U:.*]] = call @library_4(%arg0, %arg1)
// CHECK: "mlirc.add"(%[[U]], %arg2)
// CHECK: %[[N:.*]] = call @library_5(%arg3, %arg6)
// CHECK: "mlirc.add"(%[[N]], %arg7)
func.func @biases(%a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>, %bias: tensor<8xbf16>,
                  %fa: tensor<4x16xf32>, %fb: tensor<16x24xf32>, %fbias: tensor<24xf32>,
                  %nb: tensor<16x8xf32>, %nbias: tensor<8xf32>)
    -> (tensor<4x8xbf16>, tensor<2x48xf32>, tensor<4x24xf32>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.matmul"(%a, %b) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = "mlirc.add"(%bias, %0) {mlirc.addmm_bias} : (tensor<8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %2 = "mlirc.matmul"(%fa, %fb) : (tensor<4x16xf32>, tensor<16x24xf32>) -> tensor<4x24xf32>
  %3 = "mlirc.add"(%2, %fbias) {mlirc.addmm_bias} : (tensor<4x24xf32>, tensor<24xf32>) -> tensor<4x24xf32>
  %r = "mlirc.reshape"(%3) : (tensor<4x24xf32>) -> tensor<2x48xf32>
  %g = "mlirc.matmul"(%fa, %fb) : (tensor<4x16xf32>, tensor<16x24xf32>) -> tensor<4x24xf32>
  %gb = "mlirc.add"(%g, %fbias) {mlirc.addmm_bias} : (tensor<4x24xf32>, tensor<24xf32>) -> tensor<4x24xf32>
  %sq = "mlirc.mul"(%gb, %gb) : (tensor<4x24xf32>, tensor<4x24xf32>) -> tensor<4x24xf32>
  %4 = "mlirc.matmul"(%a, %b) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %5 = "mlirc.add"(%4, %bias) {mlirc.addmm_bias} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %6 = "mlirc.relu"(%4) : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %7 = "mlirc.matmul"(%a, %b) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %8 = "mlirc.add"(%7, %bias) : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %n = "mlirc.matmul"(%fa, %nb) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %nbb = "mlirc.add"(%n, %nbias) {mlirc.addmm_bias} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %1, %r, %sq, %5, %6, %8, %nbb : tensor<4x8xbf16>, tensor<2x48xf32>, tensor<4x24xf32>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>
}
