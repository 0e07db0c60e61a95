// RUN: mlirc-opt %s --split-input-file -p mlirc-split-reductions | FileCheck %s
// RUN: mlirc-opt %s --split-input-file -p mlirc-split-reductions{assume-short-sums=1} | FileCheck %s --check-prefix=ASSUME
// A long float sum is a sum of chunk sums plus the leftover's sum: a contiguous dim
// in chunks of 512, any other dim in chunks of 16; short sums and integer sums
// stay as they are.

// CHECK-LABEL: func.func @main
// 5000 = 9 x 512 + 392
// CHECK: %[[HEAD:.*]] = "mlirc.slice"(%arg0) {starts = array<i64: 0>, {{.*}}} : (tensor<5000xf32>) -> tensor<4608xf32>
// CHECK: %[[CHUNKS:.*]] = "mlirc.reshape"(%[[HEAD]]) : (tensor<4608xf32>) -> tensor<9x512xf32>
// CHECK: %[[SUMS:.*]] = "mlirc.reduce_sum"(%[[CHUNKS]]) {dims = array<i64: 1>, keepdim = false} : (tensor<9x512xf32>) -> tensor<9xf32>
// CHECK: %[[TOTAL:.*]] = "mlirc.reduce_sum"(%[[SUMS]]) {dims = array<i64: 0>, keepdim = true}
// CHECK: %[[REST:.*]] = "mlirc.slice"(%arg0) {starts = array<i64: 4608>, {{.*}} -> tensor<392xf32>
// CHECK: %[[RSUM:.*]] = "mlirc.reduce_sum"(%[[REST]])
// CHECK: %[[SUM:.*]] = "mlirc.add"(%[[TOTAL]], %[[RSUM]])
// CHECK: %[[R0:.*]] = "mlirc.reshape"(%[[SUM]]) : (tensor<1xf32>) -> tensor<f32>
// A column sum over 300 rows: 18 chunks of 16 rows, then 12 rows.
// CHECK: "mlirc.reshape"(%{{.*}}) : (tensor<288x7xf64>) -> tensor<18x16x7xf64>
// CHECK: "mlirc.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<18x16x7xf64>) -> tensor<18x7xf64>
// CHECK: "mlirc.slice"(%arg1) {starts = array<i64: 288, 0>, {{.*}} -> tensor<12x7xf64>
// CHECK: %[[R1:.*]] = "mlirc.reshape"(%{{.*}}) : (tensor<1x7xf64>) -> tensor<7xf64>
// CHECK: %[[R2:.*]] = "mlirc.reduce_sum"(%arg2) {dims = array<i64: 1>, keepdim = false} : (tensor<2x1024xf32>) -> tensor<2xf32>
// CHECK: %[[R3:.*]] = "mlirc.reduce_sum"(%arg3) {dims = array<i64: 0>, keepdim = false} : (tensor<5000xi64>) -> tensor<i64>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]]
func.func @main(%a: tensor<5000xf32>, %b: tensor<300x7xf64>, %c: tensor<2x1024xf32>, %d: tensor<5000xi64>)
    -> (tensor<f32>, tensor<7xf64>, tensor<2xf32>, tensor<i64>) attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 0>, keepdim = false} : (tensor<5000xf32>) -> tensor<f32>
  %1 = "mlirc.reduce_sum"(%b) {dims = array<i64: 0>, keepdim = false} : (tensor<300x7xf64>) -> tensor<7xf64>
  %2 = "mlirc.reduce_sum"(%c) {dims = array<i64: 1>, keepdim = false} : (tensor<2x1024xf32>) -> tensor<2xf32>
  %3 = "mlirc.reduce_sum"(%d) {dims = array<i64: 0>, keepdim = false} : (tensor<5000xi64>) -> tensor<i64>
  return %0, %1, %2, %3 : tensor<f32>, tensor<7xf64>, tensor<2xf32>, tensor<i64>
}

// -----

// Adjacent reduced dims merge first (a whole-tensor sum is one long dim); the
// result keeps the op's kept dims.
// CHECK-LABEL: func.func @whole
// CHECK: "mlirc.reshape"(%arg0) : (tensor<300x20xf32>) -> tensor<6000xf32>
// CHECK: "mlirc.slice"(%{{.*}}) {{.*}} : (tensor<6000xf32>) -> tensor<5632xf32>
// CHECK: "mlirc.reshape"(%{{.*}}) : (tensor<5632xf32>) -> tensor<11x512xf32>
// CHECK: -> tensor<1x1xf32>
func.func @whole(%a: tensor<300x20xf32>) -> tensor<1x1xf32> attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 0, 1>, keepdim = true} : (tensor<300x20xf32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// A run of reduced dims whose inner dims alone make a chunk (between an eighth of
// it and all of it) is cut there instead: summed over the inner dims, then the
// outer, with no reshape across dims and no tail slice (through which no producer
// fuses).
// CHECK-LABEL: func.func @at_dim_boundaries
// CHECK-NOT: mlirc.slice
// CHECK: %[[ROWS:.*]] = "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = true} : (tensor<64x300xf32>) -> tensor<64x1xf32>
// CHECK: "mlirc.reduce_sum"(%[[ROWS]]) {dims = array<i64: 0>, keepdim = true} : (tensor<64x1xf32>) -> tensor<1x1xf32>
// CHECK-NOT: mlirc.slice
func.func @at_dim_boundaries(%a: tensor<64x300xf32>) -> tensor<1x1xf32> attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 0, 1>, keepdim = true} : (tensor<64x300xf32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// A bfloat16 sum is split in float32: one conversion in, f32 partial sums, one
// rounding at the end (eager sums halves in float32 and rounds once).
// CHECK-LABEL: func.func @half
// CHECK: %[[WIDE:.*]] = "mlirc.convert"(%arg0) : (tensor<2107xbf16>) -> tensor<2107xf32>
// CHECK: "mlirc.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<4x512xf32>) -> tensor<4xf32>
// CHECK: %[[SUM:.*]] = "mlirc.add"(%{{.*}}, %{{.*}}) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
// CHECK: %[[ROUND:.*]] = "mlirc.convert"(%[[SUM]]) : (tensor<1xf32>) -> tensor<1xbf16>
// CHECK: "mlirc.reshape"(%[[ROUND]]) : (tensor<1xbf16>) -> tensor<bf16>
func.func @half(%a: tensor<2107xbf16>) -> tensor<bf16> attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 0>, keepdim = false} : (tensor<2107xbf16>) -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

// Over a symbolic dim (or before one: a derived `?` dim may be 1), whether and how
// a sum splits depends on the sizes: it is marked deferred and stays as it is, to
// be split when the stage runs again on bound sizes.  A sum over a static dim with
// a symbolic batch before it is decided now (short: unchanged, not deferred).
// CHECK-LABEL: func.func @symbolic
// CHECK: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = false, mlirc.deferred = "mlirc-split-reductions"} : (tensor<4x?xf32>) -> tensor<4xf32>
// CHECK: "mlirc.reduce_sum"(%arg1) {dims = array<i64: 0>, keepdim = false, mlirc.deferred = "mlirc-split-reductions"} : (tensor<5000x?xf32>) -> tensor<?xf32>
// CHECK: "mlirc.reduce_sum"(%arg2) {dims = array<i64: 1>, keepdim = false} : (tensor<?x256xf32>) -> tensor<?xf32>
// With assume-short-sums, the first (a contiguous sum over `?` values) is compiled
// unsplit under an assertion on its length; the second splits at any size (5000
// values, contiguous or not) and waits for its static shape.
// ASSUME-LABEL: func.func @symbolic
// ASSUME: %[[N:.*]] = tensor.dim %arg0, %c1
// ASSUME: %[[SHORT:.*]] = arith.cmpi ule, %[[N]], %c2048
// ASSUME: cf.assert %[[SHORT]], "mlirc-split-reductions: a sum of symbolic length was compiled unsplit
// ASSUME: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = false} : (tensor<4x?xf32>)
// ASSUME: "mlirc.reduce_sum"(%arg1) {{.*}}mlirc.deferred = "mlirc-split-reductions"
// ASSUME-NOT: cf.assert
func.func @symbolic(%a: tensor<4x?xf32>, %b: tensor<5000x?xf32>, %c: tensor<?x256xf32>, %n: index, %m: index)
    -> (tensor<4xf32>, tensor<?xf32>, tensor<?xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x?xf32>) -> tensor<4xf32>
  %1 = "mlirc.reduce_sum"(%b) {dims = array<i64: 0>, keepdim = false} : (tensor<5000x?xf32>) -> tensor<?xf32>
  %2 = "mlirc.reduce_sum"(%c) {dims = array<i64: 1>, keepdim = false} : (tensor<?x256xf32>) -> tensor<?xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

// A long sum over a static dim, with a symbolic dim before it: the split's reshapes
// and slices take static shapes, so it waits for the sizes too.
// CHECK-LABEL: func.func @long_after_symbolic
// CHECK: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = false, mlirc.deferred = "mlirc-split-reductions"} : (tensor<?x5000xf32>) -> tensor<?xf32>
func.func @long_after_symbolic(%a: tensor<?x5000xf32>) -> tensor<?xf32> attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<?x5000xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A deferred sum of a broadcast defers the broadcast too: once the sizes are bound,
// the cascade's slices of it become broadcasts of slices (mlirc-slice-broadcasts),
// as they do in a static graph, not slices of a materialized broadcast.
// CHECK-LABEL: func.func @of_broadcast
// CHECK: "mlirc.broadcast"(%arg0, %arg1) {mlirc.deferred = "mlirc-split-reductions"}
// CHECK: "mlirc.reduce_sum"({{.*}}mlirc.deferred = "mlirc-split-reductions"
func.func @of_broadcast(%a: tensor<4x1x?xf32>, %n: index) -> tensor<4x?xf32> attributes {mlirc.entry} {
  %0 = "mlirc.broadcast"(%a, %n) : (tensor<4x1x?xf32>, index) -> tensor<4x3000x?xf32>
  %1 = "mlirc.reduce_sum"(%0) {dims = array<i64: 1>, keepdim = false} : (tensor<4x3000x?xf32>) -> tensor<4x?xf32>
  return %1 : tensor<4x?xf32>
}
