// RUN: mlirc-opt %s --split-input-file -p "mlirc-split-reductions{contiguous-chunk=512,8192 strided-chunk=256,1024 long-rows=65536,1024}" | FileCheck %s

// The GPU backend's options for this pass (mlirc.backends.gpu.PASS_OPTIONS).

// On a GPU a program reduces a tile as a tree and
// a row group keeps rows up to 8192 whole: a row of 8192 stays unsplit (a softmax
// over it is one kernel); a longer one splits in chunks of 512, as on the CPU; a
// column in chunks of 256 rows, only past 1024.
// CHECK-LABEL: func.func @gpu
// CHECK: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = true} : (tensor<16x8192xf32>) -> tensor<16x1xf32>
// CHECK: "mlirc.reshape"(%arg1) : (tensor<2x20480xf32>) -> tensor<2x40x512xf32>
// CHECK: "mlirc.reduce_sum"(%{{.*}}) {dims = array<i64: 2>, keepdim = false} : (tensor<2x40x512xf32>) -> tensor<2x40xf32>
// CHECK: "mlirc.reduce_sum"(%arg2) {dims = array<i64: 0>, keepdim = false} : (tensor<1024x64xf32>) -> tensor<64xf32>
// CHECK: "mlirc.reshape"(%arg3) : (tensor<16384x64xf32>) -> tensor<64x256x64xf32>
// CHECK: "mlirc.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<64x256x64xf32>) -> tensor<64x64xf32>
module attributes {mlirc.target = "cuda"} {
func.func @gpu(%a: tensor<16x8192xf32>, %b: tensor<2x20480xf32>, %c: tensor<1024x64xf32>, %d: tensor<16384x64xf32>)
    -> (tensor<16x1xf32>, tensor<2xf32>, tensor<64xf32>, tensor<64xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<16x8192xf32>) -> tensor<16x1xf32>
  %1 = "mlirc.reduce_sum"(%b) {dims = array<i64: 1>, keepdim = false} : (tensor<2x20480xf32>) -> tensor<2xf32>
  %2 = "mlirc.reduce_sum"(%c) {dims = array<i64: 0>, keepdim = false} : (tensor<1024x64xf32>) -> tensor<64xf32>
  %3 = "mlirc.reduce_sum"(%d) {dims = array<i64: 0>, keepdim = false} : (tensor<16384x64xf32>) -> tensor<64xf32>
  return %0, %1, %2, %3 : tensor<16x1xf32>, tensor<2xf32>, tensor<64xf32>, tensor<64xf32>
}
}
// -----
// On a GPU, rows up to 65536 also stay whole where there are at least 1024 of them:
// a row group walks each in chunks (passes/gpu/tt/row_loops.py), which fills the GPU
// with programs.  Fewer rows, or longer ones, split as before; runs of reduced dims
// at the end count as one row.
// CHECK-LABEL: func.func @gpu_long_rows
// CHECK: "mlirc.reduce_sum"(%arg0) {dims = array<i64: 1>, keepdim = true} : (tensor<1024x20480xf32>) -> tensor<1024x1xf32>
// CHECK: "mlirc.reduce_sum"(%arg1) {dims = array<i64: 1, 2>, keepdim = false} : (tensor<1024x4x5000xf32>) -> tensor<1024xf32>
// CHECK: "mlirc.reshape"(%arg2) : (tensor<1023x20480xf32>) -> tensor<1023x40x512xf32>
// CHECK: "mlirc.reshape"(%{{.*}}) : (tensor<1024x65536xf32>) -> tensor<1024x128x512xf32>
module attributes {mlirc.target = "cuda"} {
func.func @gpu_long_rows(%a: tensor<1024x20480xf32>, %b: tensor<1024x4x5000xf32>, %c: tensor<1023x20480xf32>, %d: tensor<1024x65537xf32>)
    -> (tensor<1024x1xf32>, tensor<1024xf32>, tensor<1023xf32>, tensor<1024xf32>) attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<1024x20480xf32>) -> tensor<1024x1xf32>
  %1 = "mlirc.reduce_sum"(%b) {dims = array<i64: 1, 2>, keepdim = false} : (tensor<1024x4x5000xf32>) -> tensor<1024xf32>
  %2 = "mlirc.reduce_sum"(%c) {dims = array<i64: 1>, keepdim = false} : (tensor<1023x20480xf32>) -> tensor<1023xf32>
  %3 = "mlirc.reduce_sum"(%d) {dims = array<i64: 1>, keepdim = false} : (tensor<1024x65537xf32>) -> tensor<1024xf32>
  return %0, %1, %2, %3 : tensor<1024x1xf32>, tensor<1024xf32>, tensor<1023xf32>, tensor<1024xf32>
}
}
// -----
// A sum over the pixels of an NHWC image (a global response norm's, 40 x 40 = 1600
// strided values, past the GPU's 1024) is cut between H and W, not into 6 chunks
// of 256 and a tail of 64: the x * x before it fuses into the first sum.
// CHECK-LABEL: func.func @gpu_pixels
// CHECK-NOT: mlirc.slice
// CHECK: %[[W:.*]] = "mlirc.reduce_sum"(%arg0) {dims = array<i64: 2>, keepdim = true} : (tensor<2x40x40x16xf32>) -> tensor<2x40x1x16xf32>
// CHECK: "mlirc.reduce_sum"(%[[W]]) {dims = array<i64: 1>, keepdim = true} : (tensor<2x40x1x16xf32>) -> tensor<2x1x1x16xf32>
module attributes {mlirc.target = "cuda"} {
func.func @gpu_pixels(%a: tensor<2x40x40x16xf32>) -> tensor<2x16xf32> attributes {mlirc.entry} {
  %0 = "mlirc.reduce_sum"(%a) {dims = array<i64: 1, 2>, keepdim = false} : (tensor<2x40x40x16xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
}
