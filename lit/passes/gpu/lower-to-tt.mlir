// RUN: mlirc-opt %s -p mlirc-gpu-lower-to-tt | FileCheck %s
// RUN: mlirc-opt %s -p mlirc-stage-gpu --mlir-print-generic | FileCheck %s --check-prefix=GENERIC

// Each kernel becomes a declaration with its launch, and its TTIR in a nested module.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// Pointwise: 1-D blocks of 256 over the 7x33 points; the row vector is read
// through (flat % 33), the contiguous operands through the flat index itself.  The
// product rounds before the add (mul.rn: ptxas must not contract them into an FMA).
// CHECK-LABEL: func.func private @kernel_0(tensor<7x33xf32>, tensor<33xf32>) -> tensor<7x33xf32>
// CHECK-SAME: mlirc.gpu.grid = array<i64: 1, 1, 1>, mlirc.gpu.num_warps = 1 : i64, mlirc.gpu.ttir = "kernel_0_ttir"
func.func @kernel_0(%x: tensor<7x33xf32>, %b: tensor<33xf32>) -> tensor<7x33xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<7x33xf32>, tensor<33xf32>) outs(%e : tensor<7x33xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %t = math.tanh %a : f32
    %p = arith.mulf %t, %c : f32
    %s = arith.addf %p, %c : f32
    linalg.yield %s : f32
  } -> tensor<7x33xf32>
  return %r : tensor<7x33xf32>
}

// Row max: [8 rows x 64] tiles, masked lanes hold -inf, one tt.reduce per row.
// CHECK-LABEL: func.func private @kernel_1(tensor<7x33xf32>) -> tensor<7xf32>
// CHECK-SAME: mlirc.gpu.grid = array<i64: 1, 1, 1>, mlirc.gpu.num_warps = 2 : i64
func.func @kernel_1(%x: tensor<7x33xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<7xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<7x33xf32>) outs(%f : tensor<7xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.maximumf %a, %out : f32
    linalg.yield %m : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}

// Integer max of a negation: ptxas 12.8/12.9 drops negations it folds into a
// three-input min/max, so min/max operands (not constants) pass through `x + ctaid.z`.
// CHECK-LABEL: func.func private @kernel_2(tensor<7x33xi32>) -> tensor<7x33xi32>
func.func @kernel_2(%x: tensor<7x33xi32>) -> tensor<7x33xi32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x33xi32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<7x33xi32>) outs(%e : tensor<7x33xi32>) {
  ^bb0(%a: i32, %out: i32):
    %zero = arith.constant 0 : i32
    %three = arith.constant 3 : i32
    %n = arith.subi %zero, %a : i32
    %m = arith.maxsi %n, %three : i32
    linalg.yield %m : i32
  } -> tensor<7x33xi32>
  return %r : tensor<7x33xi32>
}

// A kernel of `?` dims (a symbolic graph's, compiled once for every size) takes its
// buffers' `?` sizes after its pointers (inputs, then results: n0 is %x's rows, n1
// the result's); the two are one size (the generic's loop dim), the grid is their
// expression for the host, and offsets are i64.
// CHECK-LABEL: func.func private @kernel_3(tensor<?x33xf32>, tensor<33xf32>) -> tensor<?x33xf32>
// CHECK-SAME: mlirc.gpu.grid_size = "(1023 + 33*n0) // 1024, 1, 1"
// CHECK-SAME: mlirc.size_args = array<i64: 0, 0, 2, 0>
func.func @kernel_3(%x: tensor<?x33xf32>, %b: tensor<33xf32>) -> tensor<?x33xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x33xf32>
  %e = tensor.empty(%n) : tensor<?x33xf32>
  %r = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x33xf32>, tensor<33xf32>) outs(%e : tensor<?x33xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x33xf32>
  return %r : tensor<?x33xf32>
}

// Rows of run-time length: the loop over a row runs to its length, in 512-wide steps.
// CHECK-LABEL: func.func private @kernel_4(tensor<?x?xf32>) -> tensor<?xf32>
// CHECK-SAME: mlirc.gpu.grid_size = "(7 + n0) // 8, 1, 1"
// CHECK-SAME: mlirc.size_args = array<i64: 0, 0, 0, 1, 1, 0>
func.func @kernel_4(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// A static slice of a buffer of run-time size: the generic's loops are static, but
// the row stride is the size argument, so offsets are i64 too.
// CHECK-LABEL: func.func private @kernel_5(tensor<16x?xf32>) -> tensor<16x4xf32>
// CHECK-SAME: mlirc.gpu.grid_size = "1, 1, 1"
// CHECK-SAME: mlirc.size_args = array<i64: 0, 1>
func.func @kernel_5(%x: tensor<16x?xf32>) -> tensor<16x4xf32> attributes {mlirc.kernel} {
  %s = tensor.extract_slice %x[0, 2] [16, 4] [1, 1] : tensor<16x?xf32> to tensor<16x4xf32>
  %e = tensor.empty() : tensor<16x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<16x4xf32>) outs(%e : tensor<16x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<16x4xf32>
  return %r : tensor<16x4xf32>
}

// A row group over rows of run-time length (x - max(x) per row): a pass folds each
// row's chunks into its max, a second pass subtracts it and stores.
// CHECK-LABEL: func.func private @rows_9(tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK-SAME: mlirc.gpu.grid_size = "(7 + n0) // 8, 1, 1"
func.func @rows_9(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel, mlirc.gpu.rows = 1 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %d : tensor<?x?xf32>
}

// Two reductions, stored members before, between and after them: a pass per
// reduction (each recomputing what comes before it), then one pass that stores the
// three tile results; the row results are stored after their passes.
// CHECK-LABEL: func.func private @rows_10(tensor<?x?xf32>)
func.func @rows_10(%x: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>) attributes {mlirc.kernel, mlirc.gpu.rows = 1 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e0 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x?xf32>) outs(%e0 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    %s = math.exp %r : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %fz = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%d, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%fz : tensor<?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %t = arith.mulf %a, %b : f32
    %r = arith.addf %t, %out : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %e3 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %o = linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %sum, %max : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%e3 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    %s = arith.addf %r, %c : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %y, %max, %d, %sum, %o : tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>
}

// Softmax over rows of run-time length: the max and the sum of exp(x - max) fold in
// one loop (online softmax: each lane's sum rescaled by exp(old max - new max) as its
// max grows, lanes that have seen only -inf hold 0), then one loop stores.
// CHECK-LABEL: func.func private @rows_11(tensor<?x?xf32>) -> tensor<?x?xf32>
func.func @rows_11(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel, mlirc.gpu.rows = 1 : i64} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    %s = math.exp %r : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %fz = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%d : tensor<?x?xf32>) outs(%fz : tensor<?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  %e3 = tensor.empty(%n, %m) : tensor<?x?xf32>
  %o = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%d, %sum : tensor<?x?xf32>, tensor<?xf32>) outs(%e3 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// Static rows longer than a tile holds (16384 > 8192): one row per program walked in
// 2048-wide chunks by 32 warps (two programs fill an SM: 100% of copy bandwidth on the
// H100 for softmax over 4096 x 16384, against 91% with 16 warps).
// CHECK-LABEL: func.func private @rows_12(tensor<3x16384xf32>) -> tensor<3xf32>
// CHECK-SAME: mlirc.gpu.grid = array<i64: 3, 1, 1>, mlirc.gpu.num_warps = 32 : i64
func.func @rows_12(%x: tensor<3x16384xf32>) -> tensor<3xf32> attributes {mlirc.kernel, mlirc.gpu.rows = 1 : i64} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x16384xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %out : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  return %sum : tensor<3xf32>
}

// A pooling window (3 x 3, stride 2, padding 1, over NHWC): one output per lane, the
// window walked in a loop of 9 on a [512, 1] tile.  The row and column clamps are
// 64-bit min/max whose operands pass through `x + %ctaid.z` (passes/gpu/tt/numerics.py:
// ptxas packed two narrowed clamps into a VIMNMX.S16x2 that came out wrong).
// CHECK-LABEL: func.func private @kernel_6(tensor<2x8x8x16xf32>) -> tensor<2x4x4x16xf32>
// CHECK-SAME: mlirc.gpu.grid = array<i64: 1, 1, 1>
#pool_window = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#pool_out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
func.func @kernel_6(%x: tensor<2x8x8x16xf32>) -> tensor<2x4x4x16xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %ninf = arith.constant 0xFF800000 : f32
  %window = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x4x4x16xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32>
  %r = linalg.generic {indexing_maps = [#pool_window, #pool_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%window : tensor<3x3xf32>) outs(%init : tensor<2x4x4x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 3 : index
    %oh = linalg.index 1 : index
    %ow = linalg.index 2 : index
    %kh = linalg.index 4 : index
    %kw = linalg.index 5 : index
    %h2 = affine.apply affine_map<()[s0, s1] -> (s0 * 2 + s1)>()[%oh, %kh]
    %w2 = affine.apply affine_map<()[s0, s1] -> (s0 * 2 + s1)>()[%ow, %kw]
    %h = arith.subi %h2, %c1 : index
    %hlo = arith.cmpi sge, %h, %c0 : index
    %hhi = arith.cmpi slt, %h, %c8 : index
    %hin = arith.andi %hlo, %hhi : i1
    %hmax = arith.maxsi %h, %c0 : index
    %hc = arith.minsi %hmax, %c7 : index
    %w = arith.subi %w2, %c1 : index
    %wlo = arith.cmpi sge, %w, %c0 : index
    %whi = arith.cmpi slt, %w, %c8 : index
    %win = arith.andi %wlo, %whi : i1
    %in_bounds = arith.andi %hin, %win : i1
    %wmax = arith.maxsi %w, %c0 : index
    %wc = arith.minsi %wmax, %c7 : index
    %v = tensor.extract %x[%n, %hc, %wc, %c] : tensor<2x8x8x16xf32>
    %kept = arith.select %in_bounds, %v, %ninf : f32
    %m = arith.maximumf %out, %kept : f32
    linalg.yield %m : f32
  } -> tensor<2x4x4x16xf32>
  return %r : tensor<2x4x4x16xf32>
}

// The host entry is untouched: it still calls the (now declared) kernels.
// CHECK-LABEL: func.func @main
// CHECK: call @kernel_0
// CHECK: call @kernel_1
func.func @main(%x: tensor<7x33xf32>, %b: tensor<33xf32>) -> (tensor<7x33xf32>, tensor<7xf32>) attributes {mlirc.entry} {
  %0 = call @kernel_0(%x, %b) : (tensor<7x33xf32>, tensor<33xf32>) -> tensor<7x33xf32>
  %1 = call @kernel_1(%0) : (tensor<7x33xf32>) -> tensor<7xf32>
  %i = arith.fptosi %x : tensor<7x33xf32> to tensor<7x33xi32>
  %2 = call @kernel_2(%i) : (tensor<7x33xi32>) -> tensor<7x33xi32>
  return %0, %1 : tensor<7x33xf32>, tensor<7xf32>
}

// CHECK-LABEL: module @kernel_0_ttir
// CHECK: "tt.func"()
// CHECK: ^bb0(%[[X:.*]]: !tt.ptr<f32>, %[[B:.*]]: !tt.ptr<f32>, %[[OUT:.*]]: !tt.ptr<f32>):
// CHECK: %[[PID:.*]] = "tt.get_program_id"() {axis = 0 : i32}
// CHECK: %[[LANES:.*]] = "tt.make_range"() {end = 256 : i32, start = 0 : i32} : () -> tensor<256xi32>
// CHECK: %[[FLAT:.*]] = arith.addi %{{.*}}, %[[LANES]] : tensor<256xi32>
// CHECK: %[[MASK:.*]] = arith.cmpi slt, %[[FLAT]], %{{.*}} : tensor<256xi32>
// CHECK: %[[XP:.*]] = "tt.splat"(%[[X]])
// CHECK: %[[XA:.*]] = "tt.addptr"(%[[XP]], %[[FLAT]])
// CHECK: "tt.load"(%[[XA]], %[[MASK]])
// CHECK: %[[COL:.*]] = arith.remsi %[[FLAT]]
// CHECK: "tt.addptr"(%{{.*}}, %[[COL]])
// CHECK: "tt.extern_elementwise"(%{{.*}}) {libname = "", libpath = "", pure = true, symbol = "__nv_tanhf"}
// CHECK: %[[P:.*]] = "tt.extern_elementwise"(%{{.*}}, %{{.*}}) {libname = "", libpath = "", pure = true, symbol = "__nv_fmul_rn"}
// CHECK: arith.addf %[[P]]
// CHECK: "tt.store"(%{{.*}}, %{{.*}}, %[[MASK]])
// CHECK: "tt.return"()

// CHECK-LABEL: module @kernel_1_ttir
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[ACC0:.*]] = "tt.splat"(%{{.*}}) : (f32) -> tensor<8x64xf32>
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]]) -> (tensor<8x64xf32>)
// CHECK:   %[[V:.*]] = "tt.load"
// CHECK:   %[[KEPT:.*]] = arith.select %{{.*}}, %[[V]], %{{.*}} : tensor<8x64xi1>, tensor<8x64xf32>
// CHECK:   arith.maximumf %[[ACC]], %[[KEPT]] : tensor<8x64xf32>
// CHECK: "tt.reduce"
// CHECK:   arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK:   "tt.reduce.return"
// CHECK: {axis = 1 : i32} : (tensor<8x64xf32>) -> tensor<8xf32>
// CHECK: "tt.store"

// CHECK-LABEL: module @kernel_2_ttir
// CHECK: %[[Z:.*]] = "tt.get_program_id"() {axis = 2 : i32}
// CHECK: %[[N:.*]] = arith.subi %{{.*}}, %{{.*}} : tensor<256xi32>
// CHECK: %[[ZS:.*]] = "tt.splat"(%[[Z]]) : (i32) -> tensor<256xi32>
// CHECK: %[[SHIELDED:.*]] = arith.addi %[[N]], %[[ZS]] : tensor<256xi32>
// CHECK: %[[THREE:.*]] = "tt.splat"(%c3_i32)
// CHECK: arith.maxsi %[[SHIELDED]], %[[THREE]] : tensor<256xi32>

// CHECK-LABEL: module @kernel_3_ttir
// CHECK: ^bb0(%{{.*}}: !tt.ptr<f32>, %{{.*}}: !tt.ptr<f32>, %{{.*}}: !tt.ptr<f32>, %[[N0:.*]]: i64, %{{.*}}: i64):
// CHECK: arith.muli %{{.*}}, %[[N0]] : i64
// CHECK: "tt.make_range"() {end = 1024 : i32, start = 0 : i32}
// CHECK: arith.extsi %{{.*}} : tensor<1024xi32> to tensor<1024xi64>
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : tensor<1024xi64>
// CHECK: {arg_attrs = [{tt.divisibility = 16 : i32}, {tt.divisibility = 16 : i32}, {tt.divisibility = 16 : i32}, {}, {}]

// CHECK-LABEL: module @kernel_4_ttir
// CHECK: ^bb0(%{{.*}}: !tt.ptr<f32>, %{{.*}}: !tt.ptr<f32>, %{{.*}}: i64, %[[COLS:.*]]: i64, %{{.*}}: i64):
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[COLS]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<8x512xf32>)  : i64

// CHECK-LABEL: module @kernel_5_ttir
// CHECK: ^bb0(%{{.*}}: !tt.ptr<f32>, %{{.*}}: !tt.ptr<f32>, %[[COLS5:.*]]: i64):
// CHECK: %[[STRIDE:.*]] = "tt.splat"(%[[COLS5]]) : (i64) -> tensor<64xi64>
// CHECK: arith.muli %{{.*}}, %[[STRIDE]] : tensor<64xi64>

// CHECK-LABEL: module @rows_9_ttir
// CHECK: ^bb0(%{{.*}}: !tt.ptr<f32>, %{{.*}}: !tt.ptr<f32>, %{{.*}}: i64, %[[LEN:.*]]: i64, %{{.*}}: i64, %{{.*}}: i64):
// CHECK: %[[MAX:.*]] = scf.for %{{.*}} = %{{.*}} to %[[LEN]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<8x512xf32>)  : i64
// CHECK: "tt.reduce"(%[[MAX]])
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LEN]] step %{{.*}}  : i64 {
// CHECK: arith.subf
// CHECK: "tt.store"

// CHECK-LABEL: module @rows_10_ttir
// CHECK: scf.for {{.*}} -> (tensor<8x512xf32>)
// CHECK: "tt.reduce"
// CHECK: "tt.store"
// CHECK: scf.for {{.*}} -> (tensor<8x512xf32>)
// CHECK: "tt.reduce"
// CHECK: "tt.store"
// CHECK: scf.for
// CHECK-COUNT-3: "tt.store"
// CHECK-NOT: "tt.store"
// CHECK: "tt.return"

// GENERIC: "builtin.module"() <{sym_name = "{{(kernel|rows)_0_ttir}}"}>
// GENERIC: "tt.func"()

// CHECK-LABEL: module @rows_11_ttir
// CHECK: %[[FOLD:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %[[LEN11:.*]] step %{{.*}} iter_args(%[[LMAX:.*]] = %{{.*}}, %[[LSUM:.*]] = %{{.*}}) -> (tensor<8x512xf32>, tensor<8x512xf32>)  : i64
// CHECK:   "tt.load"
// CHECK:   %[[NEWMAX:.*]] = arith.maximumf %[[LMAX]], %{{.*}} : tensor<8x512xf32>
// CHECK:   math.exp
// CHECK:   %[[OLD:.*]] = arith.subf %[[LMAX]], %[[NEWMAX]] : tensor<8x512xf32>
// CHECK:   %[[SCALE:.*]] = math.exp %[[OLD]]
// CHECK:   %[[RESCALED:.*]] = arith.mulf %[[LSUM]], %[[SCALE]]
// CHECK:   %[[TOTAL:.*]] = arith.addf %[[RESCALED]], %{{.*}} : tensor<8x512xf32>
// CHECK:   %[[EMPTY:.*]] = arith.cmpf oeq, %[[NEWMAX]], %{{.*}} : tensor<8x512xf32>
// CHECK:   %[[KEPT:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[TOTAL]]
// CHECK:   scf.yield %[[NEWMAX]], %[[KEPT]]
// CHECK-NOT: "tt.load"
// CHECK: %[[ROWMAX:.*]] = "tt.reduce"(%[[FOLD]]#0)
// CHECK: arith.subf %[[FOLD]]#0, %{{.*}} : tensor<8x512xf32>
// CHECK: arith.mulf %[[FOLD]]#1
// CHECK: "tt.reduce"
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LEN11]] step %{{.*}}  : i64 {
// CHECK:   "tt.load"
// CHECK:   math.exp
// CHECK:   "tt.store"
// CHECK-NOT: scf.for
// CHECK: "tt.return"

// CHECK-LABEL: module @rows_12_ttir
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<1x2048xf32>)

// CHECK-LABEL: module @kernel_6_ttir
// CHECK: %[[Z6:.*]] = "tt.get_program_id"() {axis = 2 : i32}
// CHECK: %[[Z64:.*]] = arith.extsi %[[Z6]] : i32 to i64
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<512x1xf32>)
// CHECK:   arith.andi %{{.*}}, %{{.*}} : tensor<512x1xi1>
// CHECK-NEXT:   %[[ZS6:.*]] = "tt.splat"(%[[Z64]]) : (i64) -> tensor<512x1xi64>
// CHECK-NEXT:   %[[ROW:.*]] = arith.addi %[[H:.*]], %[[ZS6]] : tensor<512x1xi64>
// CHECK-NEXT:   "tt.splat"(%c0_i64)
// CHECK-NEXT:   %[[LOW:.*]] = arith.maxsi %[[ROW]], %{{.*}} : tensor<512x1xi64>
// CHECK-NEXT:   %[[ZS7:.*]] = "tt.splat"(%[[Z64]]) : (i64) -> tensor<512x1xi64>
// CHECK-NEXT:   %[[LOWZ:.*]] = arith.addi %[[LOW]], %[[ZS7]] : tensor<512x1xi64>
// CHECK-NEXT:   "tt.splat"(%c7_i64)
// CHECK-NEXT:   arith.minsi %[[LOWZ]], %{{.*}} : tensor<512x1xi64>
// CHECK:   "tt.load"
// CHECK:   arith.maximumf %{{.*}}, %{{.*}} : tensor<512x1xf32>
