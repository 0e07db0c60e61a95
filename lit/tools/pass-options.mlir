// Pass options are written as MLIR writes them, `pass{name=value ...}`; a named
// pipeline hands each option to the passes in it that declare it.
// RUN: mlirc-opt %s -p 'mlirc-cpu-vectorize{vector-bytes=16}' | FileCheck %s --check-prefix=V16
// RUN: mlirc-opt %s -p 'mlirc-cpu-vectorize{vector-bytes=64}' | FileCheck %s --check-prefix=V64
// RUN: mlirc-opt %s -p 'mlirc-stage-cpu-bufferize{vector-bytes=64 parallel-min-kib=-1}' | FileCheck %s --check-prefix=STAGE64
// RUN: mlirc-opt %s -p 'mlirc-cpu-vectorize{vectorize=0}' | FileCheck %s --check-prefix=OFF
// RUN: %not mlirc-opt %s -p 'mlirc-cpu-vectorize{vector-bytes=7}' 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: %not mlirc-opt %s -p 'mlirc-cpu-vectorize{vectorize=maybe}' 2>&1 | FileCheck %s --check-prefix=BOOL
// RUN: %not mlirc-opt %s -p 'mlirc-cpu-vectorize{lanes=8}' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: %not mlirc-opt %s -p 'mlirc-stage-cpu{mode=generated}' 2>&1 | FileCheck %s --check-prefix=STAGE

// V16: math.exp {{.*}} : vector<4xf32>
// V64: math.exp {{.*}} : vector<16xf32>
// (the stage's mlirc-cpu-vector-math expands a vector exp into its polynomial)
// STAGE64: math.fma {{.*}} : vector<16xf32>
// OFF-NOT: vector
// OFF: math.exp {{.*}} : f32
// WIDTH: mlirc-cpu-vectorize{{.*}}vector-bytes=7: 0 (the host's), 16, 32 or 64
// BOOL: option vectorize='maybe' is not a valid bool
// UNKNOWN: unknown option lanes (options: vector-bytes, vectorize)
// STAGE: no pass in the pipeline takes option mode
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @kernel_0(%a: tensor<7x129xf32>) -> tensor<7x129xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x129xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<7x129xf32>) outs(%e : tensor<7x129xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<7x129xf32>
  return %r : tensor<7x129xf32>
}
