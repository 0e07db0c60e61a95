// RUN: mlirc-opt %s -p 'mlirc-cpu-vectorize{vector-bytes=32}' | FileCheck %s

// The innermost dim is tiled to the vector width and vectorized with masks.
// CHECK-LABEL: func.func @kernel_0
// CHECK: scf.for
// CHECK: vector.transfer_read
// CHECK: math.exp %{{.*}} : vector<{{([0-9]+x)?}}{{[0-9]+}}xf32>
// CHECK: vector.transfer_write
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

// A reduction over the innermost dim is split: a loop of whole vectors keeps the
// partial sums in registers (loop-carried, not in memory), the peeled partial block
// is vectorized exactly (no masks), and each row's lanes are reduced once, as a tree.
// CHECK-LABEL: func.func @kernel_1
// CHECK-NOT: vector.mask
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<[[N:[0-9]+]]xf32>)
// CHECK: math.exp %{{.*}} : vector<[[N]]xf32>
// CHECK: arith.addf %{{.*}} : vector<[[N]]xf32>
// CHECK: scf.yield %{{.*}} : vector<[[N]]xf32>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
// CHECK-NOT: vector.mask
// CHECK: return
#row = affine_map<(d0, d1) -> (d0)>
func.func @kernel_1(%a: tensor<7x137xf32>) -> tensor<7xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %r = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<7x137xf32>) outs(%f : tensor<7xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = math.exp %x : f32
    %s = arith.addf %y, %acc : f32
    linalg.yield %s : f32
  } -> tensor<7xf32>
  return %r : tensor<7xf32>
}

// A channels-last max-pool (mlirc-channels-last's form: loops n, c, h, w, kh, kw).
// The channel loop moves innermost; n, h, w are tiled to 1, the 2x2 window stays
// whole, and the window reduces lane-wise over whole channel vectors (20 channels:
// the last vector is masked).
// CHECK-LABEL: func.func @kernel_window
// CHECK-COUNT-3: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK: scf.for %{{.*}} = %{{.*}} to %c20 step %c8
// CHECK: vector.transfer_read {{.*}} : tensor<2x2x?xf32>, vector<2x2x8xf32>
// CHECK-COUNT-4: arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NOT: vector.reduction
// CHECK: vector.transfer_write {{.*}} : vector<8xf32>, tensor<?xf32>
#win_in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2 * 2 + d4, d3 * 2 + d5, d1)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#win_out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d3, d1)>
func.func @kernel_window(%a: tensor<2x9x7x20xf32>) -> tensor<2x4x3x20xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %w = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<2x4x3x20xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x4x3x20xf32>) -> tensor<2x4x3x20xf32>
  %r = linalg.generic {indexing_maps = [#win_in, #win, #win_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%a, %w : tensor<2x9x7x20xf32>, tensor<2x2xf32>) outs(%f : tensor<2x4x3x20xf32>) {
  ^bb0(%x: f32, %unused: f32, %acc: f32):
    %m = arith.maximumf %acc, %x : f32
    linalg.yield %m : f32
  } -> tensor<2x4x3x20xf32>
  return %r : tensor<2x4x3x20xf32>
}

// An elementwise op on NHWC data with NCHW loops: the channel loop moves innermost,
// so that reads and writes are contiguous vectors.  Its 11 channels are one full
// vector and a peeled tail of 3, both exact (no masks).
// CHECK-LABEL: func.func @kernel_nhwc
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x8xf32>, vector<8xf32>
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x3xf32>, vector<3xf32>
// CHECK: arith.addf {{.*}} : vector<3xf32>
// CHECK-NOT: vector.create_mask
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @kernel_nhwc(%a: tensor<2x5x6x11xf32>, %b: tensor<11xf32>) -> tensor<2x5x6x11xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<2x5x6x11xf32>
  %r = linalg.generic {indexing_maps = [#nhwc, #chan, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : tensor<2x5x6x11xf32>, tensor<11xf32>) outs(%e : tensor<2x5x6x11xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x5x6x11xf32>
  return %r : tensor<2x5x6x11xf32>
}

// A row-broadcast operand's log (log_softmax's log(sum)) is taken once per row:
// f(broadcast(x)) sinks to broadcast(f(x)), so the vector math sees one lane, not
// a vector of copies.
// CHECK-LABEL: func.func @kernel_row_log
// CHECK: math.log %{{.*}} : vector<1xf32>
// CHECK-NOT: math.log %{{.*}} : vector<{{[2-9]|[1-9][0-9]+}}xf32>
// CHECK: return
func.func @kernel_row_log(%a: tensor<64x16xf32>, %s: tensor<64xf32>) -> tensor<64x16xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<64x16xf32>
  %r = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %s : tensor<64x16xf32>, tensor<64xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %l = math.log %t : f32
    %y = arith.subf %x, %l : f32
    linalg.yield %y : f32
  } -> tensor<64x16xf32>
  return %r : tensor<64x16xf32>
}

// An integer division by a tensor stays scalar: masked lanes would read poison
// divisors, and x86 divides integers one lane at a time anyway.  By a constant it
// vectorizes (no divisor can be 0).
// CHECK-LABEL: func.func @int_division
// CHECK-NOT: vector<
// CHECK: arith.floordivsi %{{.*}}, %{{.*}} : i64
// CHECK-LABEL: func.func @int_division_by_constant
// CHECK: arith.remsi %{{.*}}, %{{.*}} : vector<{{[0-9]+}}xi64>
func.func @int_division(%a: tensor<7x5xi64>, %b: tensor<7x5xi64>) -> tensor<7x5xi64> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<7x5xi64>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<7x5xi64>, tensor<7x5xi64>) outs(%e : tensor<7x5xi64>) {
  ^bb0(%x: i64, %y: i64, %o: i64):
    %q = arith.floordivsi %x, %y : i64
    linalg.yield %q : i64
  } -> tensor<7x5xi64>
  return %r : tensor<7x5xi64>
}
func.func @int_division_by_constant(%a: tensor<7x5xi64>) -> tensor<7x5xi64> attributes {mlirc.kernel} {
  %c = arith.constant 3 : i64
  %e = tensor.empty() : tensor<7x5xi64>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<7x5xi64>) outs(%e : tensor<7x5xi64>) {
  ^bb0(%x: i64, %o: i64):
    %q = arith.remsi %x, %c : i64
    linalg.yield %q : i64
  } -> tensor<7x5xi64>
  return %r : tensor<7x5xi64>
}

// A gather (a channels-last padding) that reads along its result's innermost dim:
// the channel loop, which the NHWC result's map puts last, is moved innermost and
// vectorized (5 channels, one vector), each read one contiguous load; the other
// loops are tiled to 1 and may run on threads.
// CHECK-LABEL: func.func @padding_nhwc
// CHECK-NOT: vector.gather
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[V:.*]] = vector.transfer_read %{{.*}} : tensor<2x6x4x5xf32>, vector<5xf32>
// CHECK: vector.transfer_write %[[V]]
// CHECK: } {mlirc.parallel_loop}
func.func @padding_nhwc(%x: tensor<2x6x4x5xf32>) -> tensor<2x7x5x5xf32> attributes {mlirc.kernel} {
  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<2x7x5x5xf32>
  %r = linalg.generic {indexing_maps = [#nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<2x7x5x5xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = linalg.index 2 : index
    %w = linalg.index 3 : index
    %hc = arith.minsi %h, %c5 : index
    %wc = arith.minsi %w, %c3 : index
    %v = tensor.extract %x[%n, %hc, %wc, %c] : tensor<2x6x4x5xf32>
    linalg.yield %v : f32
  } -> tensor<2x7x5x5xf32>
  return %r : tensor<2x7x5x5xf32>
}

// Rows of run-time length: full vectors run unmasked up to the last multiple of
// the vector width, and the tail of run-time length is one masked vector.
// CHECK-LABEL: func.func @kernel_runtime_rows
// CHECK: %[[FULL:.*]] = affine.apply #{{.*}}()[%[[LEN:.*]]]
// CHECK: scf.for %{{.*}} = %c0 to %[[FULL]] step %c8
// CHECK-NOT: vector.create_mask
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: scf.for %{{.*}} = %[[FULL]] to %[[LEN]] step %c8
// CHECK: %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK: vector.transfer_read {{.*}}, %[[MASK]]
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: vector.transfer_write {{.*}}, %[[MASK]]
func.func @kernel_runtime_rows(%a: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// A sum over rows of run-time length: partial sums in registers over whole blocks,
// the block's tail of run-time length added with masks, one tree reduction a row.
// CHECK-LABEL: func.func @kernel_runtime_sum
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
// CHECK-NOT: vector.create_mask
// CHECK: scf.yield %{{.*}} : vector<32xf32>
// CHECK: vector.create_mask %{{.*}} : vector<32xi1>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
func.func @kernel_runtime_sum(%a: tensor<?x?xf32>) -> tensor<?xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%d0) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#map, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// A padded max pool on channels-last (the padding's reads fused in as a gather):
// the channel loop goes innermost and is vectorized (24 channels: whole 8-wide
// vectors), every read one contiguous load, and the window's loops carry the
// running maximum in a register.
// CHECK-LABEL: func.func @kernel_pool
// CHECK-NOT: vector.gather
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8xf32>)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8xf32>)
// CHECK: vector.transfer_read %{{.*}} : tensor<9x7x24xf32>, vector<8xf32>
// CHECK: arith.maximumf %{{.*}} : vector<8xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<8xf32>, tensor<1x1x8xf32>
#window = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
#pooled = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
#strided = affine_map<()[s0, s1] -> (s0 * 2 + s1)>
func.func @kernel_pool(%x: tensor<9x7x24xf32>) -> tensor<5x4x24xf32> attributes {mlirc.kernel} {
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %w = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<5x4x24xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<5x4x24xf32>) -> tensor<5x4x24xf32>
  %r = linalg.generic {indexing_maps = [#window, #pooled], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%w : tensor<3x3xf32>) outs(%init : tensor<5x4x24xf32>) {
  ^bb0(%unused: f32, %acc: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = linalg.index 2 : index
    %kh = linalg.index 3 : index
    %kw = linalg.index 4 : index
    %h0 = affine.apply #strided()[%i, %kh]
    %w0 = affine.apply #strided()[%j, %kw]
    %h = arith.subi %h0, %c1 : index
    %w1 = arith.subi %w0, %c1 : index
    %hlo = arith.cmpi sge, %h, %c0 : index
    %hhi = arith.cmpi slt, %h, %c9 : index
    %wlo = arith.cmpi sge, %w1, %c0 : index
    %whi = arith.cmpi slt, %w1, %c7 : index
    %hin = arith.andi %hlo, %hhi : i1
    %win = arith.andi %wlo, %whi : i1
    %in = arith.andi %hin, %win : i1
    %hc0 = arith.maxsi %h, %c0 : index
    %hc = arith.minsi %hc0, %c8 : index
    %wc0 = arith.maxsi %w1, %c0 : index
    %wc = arith.minsi %wc0, %c6 : index
    %v = tensor.extract %x[%hc, %wc, %c] : tensor<9x7x24xf32>
    %p = arith.select %in, %v, %ninf : f32
    %m = arith.maximumf %acc, %p : f32
    linalg.yield %m : f32
  } -> tensor<5x4x24xf32>
  return %r : tensor<5x4x24xf32>
}

// A gather that reads one element per row (the per-row scale of a shifted
// cross-entropy's gradient, padded back to every position: GPT-2's loss backward)
// beside rows read along the vector loop: the element is one scalar for all lanes,
// broadcast; the loop vectorizes (it stayed scalar, exp and all: 0.85 ms of a step).
// CHECK-LABEL: func.func @kernel_row_scale_gather
// CHECK-NOT: vector.gather
// CHECK: vector.transfer_read %{{.*}} : tensor<6x24xf32>, vector<8xf32>
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: vector.transfer_write
#rows3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @kernel_row_scale_gather(%g: tensor<6x24xf32>, %scale: tensor<6xf32>) -> tensor<2x4x24xf32> attributes {mlirc.kernel} {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x24xf32>
  %r = linalg.generic {indexing_maps = [#rows3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x4x24xf32>) {
  ^bb0(%o: f32):
    %b = linalg.index 0 : index
    %t = linalg.index 1 : index
    %c = linalg.index 2 : index
    %tc = arith.minsi %t, %c2 : index
    %base = arith.muli %b, %c3 : index
    %row = arith.addi %base, %tc : index
    %v = tensor.extract %g[%row, %c] : tensor<6x24xf32>
    %s = tensor.extract %scale[%row] : tensor<6xf32>
    %x = math.exp %v : f32
    %y = arith.mulf %x, %s : f32
    %last = arith.cmpi sge, %t, %c3 : index
    %out = arith.select %last, %zero, %y : f32
    linalg.yield %out : f32
  } -> tensor<2x4x24xf32>
  return %r : tensor<2x4x24xf32>
}

// A gather whose leading index is data (an embedding lookup) reads rows at run-time
// positions: it stays scalar.
// CHECK-LABEL: func.func @kernel_lookup
// CHECK-NOT: vector<
// CHECK: tensor.extract
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0)>
#table = affine_map<(d0, d1) -> (d0, d1)>
func.func @kernel_lookup(%ids: tensor<5xindex>, %t: tensor<11x32xf32>) -> tensor<5x32xf32> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5x32xf32>
  %r = linalg.generic {indexing_maps = [#rows, #table], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<5xindex>) outs(%e : tensor<5x32xf32>) {
  ^bb0(%id: index, %o: f32):
    %c = linalg.index 1 : index
    %v = tensor.extract %t[%id, %c] : tensor<11x32xf32>
    linalg.yield %v : f32
  } -> tensor<5x32xf32>
  return %r : tensor<5x32xf32>
}

// bfloat16 computed in f32 (mlirc-cpu-widen-halves' form: extf at the top, truncf at
// the yield) vectorizes: bf16 vectors are only loaded, stored and cast.
// CHECK-LABEL: func.func @kernel_bf16_widened
// CHECK: vector.transfer_read {{.*}} vector<16xbf16>
// CHECK: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK: math.exp %{{.*}} : vector<16xf32>
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.transfer_write
func.func @kernel_bf16_widened(%a: tensor<5x64xbf16>) -> tensor<5x64xbf16> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<5x64xbf16>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<5x64xbf16>) outs(%e : tensor<5x64xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    %w = arith.extf %x : bf16 to f32
    %y = math.exp %w : f32
    %n = arith.truncf %y : f32 to bf16
    linalg.yield %n : bf16
  } -> tensor<5x64xbf16>
  return %r : tensor<5x64xbf16>
}

// A body that works on bf16 bits (nextafter's) stays scalar: LLVM 20's x86 code
// generation asserts on bf16 vector selects and bitcasts.
// CHECK-LABEL: func.func @kernel_bf16_bits
// CHECK-NOT: vector.transfer_read
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: return
func.func @kernel_bf16_bits(%a: tensor<5x64xbf16>) -> tensor<5x64xbf16> attributes {mlirc.kernel} {
  %one = arith.constant 1 : i16
  %e = tensor.empty() : tensor<5x64xbf16>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<5x64xbf16>) outs(%e : tensor<5x64xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    %i = arith.bitcast %x : bf16 to i16
    %j = arith.addi %i, %one : i16
    %n = arith.bitcast %j : i16 to bf16
    linalg.yield %n : bf16
  } -> tensor<5x64xbf16>
  return %r : tensor<5x64xbf16>
}

// A generic with two results written together (mlirc-fuse-multi-output: a momentum
// step's new state and parameter) vectorizes like one with a single result: one
// vector length for both, each stored as a vector.
// CHECK-LABEL: func.func @kernel_two_results
// CHECK: %[[M:.*]] = arith.addf %{{.*}} : vector<[[W:[0-9]+]]xf32>
// CHECK: arith.subf %{{.*}}, %{{.*}} : vector<[[W]]xf32>
// CHECK-COUNT-2: vector.transfer_write %{{.*}} : vector<[[W]]xf32>
func.func @kernel_two_results(%p: tensor<5x40xf32>, %g: tensor<5x40xf32>, %m: tensor<5x40xf32>) -> (tensor<5x40xf32>, tensor<5x40xf32>) attributes {mlirc.kernel} {
  %e0 = tensor.empty() : tensor<5x40xf32>
  %e1 = tensor.empty() : tensor<5x40xf32>
  %r:2 = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %g, %p : tensor<5x40xf32>, tensor<5x40xf32>, tensor<5x40xf32>) outs(%e0, %e1 : tensor<5x40xf32>, tensor<5x40xf32>) {
  ^bb0(%mv: f32, %gv: f32, %pv: f32, %o0: f32, %o1: f32):
    %nm = arith.addf %mv, %gv : f32
    %np = arith.subf %pv, %nm : f32
    linalg.yield %nm, %np : f32, f32
  } -> (tensor<5x40xf32>, tensor<5x40xf32>)
  return %r#1, %r#0 : tensor<5x40xf32>, tensor<5x40xf32>
}

// Two results of two widths through channels-last's map (a training ReLU and its
// mask, saved for the backward): the loop over channels, contiguous in both, moves
// innermost, and the vector length is the float's lanes, the mask stored as bytes
// of the same count.  They stayed scalar: a 256x1024 ReLU and its mask took 119 us
// a call on 2 cores, 84 vectorized.
// CHECK-LABEL: func.func @kernel_value_and_mask
// CHECK: arith.cmpf ole, %{{.*}} : vector<8xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<8xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<8xi8>
#nchw_to_nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
func.func @kernel_value_and_mask(%x: tensor<2x3x5x16xf32>) -> (tensor<2x3x5x16xf32>, tensor<2x3x5x16xi8>) attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<2x3x5x16xf32>
  %e1 = tensor.empty() : tensor<2x3x5x16xi8>
  %r:2 = linalg.generic {indexing_maps = [#nchw_to_nhwc, #nchw_to_nhwc, #nchw_to_nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x5x16xf32>) outs(%e0, %e1 : tensor<2x3x5x16xf32>, tensor<2x3x5x16xi8>) {
  ^bb0(%in: f32, %o0: f32, %o1: i8):
    %relu = arith.maximumf %in, %zero : f32
    %le = arith.cmpf ole, %relu, %zero : f32
    %mask = arith.extui %le : i1 to i8
    linalg.yield %relu, %mask : f32, i8
  } -> (tensor<2x3x5x16xf32>, tensor<2x3x5x16xi8>)
  return %r#0, %r#1 : tensor<2x3x5x16xf32>, tensor<2x3x5x16xi8>
}

// A column sum (the reduced loop outside the contiguous, parallel one: batch-norm
// statistics on channels-last partial rows) keeps its partial result in registers
// across the reduction loop, 32 columns (four 8-lane vectors) wide, and its init is
// filled tile by tile inside the parallel rows loop (marked for threads), not before.
// CHECK-LABEL: func.func @kernel_column_sum
// CHECK-NOT: linalg.fill
// CHECK: scf.for {{.*}} {
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<32xf32>)
// CHECK: vector.transfer_read {{.*}} vector<32xf32>
// CHECK: arith.addf {{.*}} : vector<32xf32>
// CHECK: scf.yield {{.*}} : vector<32xf32>
// CHECK: vector.transfer_write
// CHECK: } {mlirc.parallel_loop}
#nhw = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#nc = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @kernel_column_sum(%x: tensor<6x41x64xf32>) -> tensor<6x64xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x64xf32>) -> tensor<6x64xf32>
  %r = linalg.generic {indexing_maps = [#nhw, #nc], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<6x41x64xf32>) outs(%f : tensor<6x64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6x64xf32>
  return %r : tensor<6x64xf32>
}

// Two column sums in one generic (mlirc-fuse-sibling-reductions: a batch norm's
// statistics in float64, the deviations from a pivot row and their squares), one
// fill for both inits as CSE leaves it: each partial result stays in registers,
// the input is read once per step, and both inits are filled inside the rows loop.
// CHECK-LABEL: func.func @kernel_sibling_column_sums
// CHECK-NOT: linalg.fill
// CHECK: scf.for {{.*}} {
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf64>, vector<16xf64>)
// CHECK: vector.transfer_read {{.*}} vector<16xf32>
// CHECK: arith.extf {{.*}} to vector<16xf64>
// CHECK: arith.addf {{.*}} : vector<16xf64>
// CHECK: arith.mulf {{.*}} : vector<16xf64>
// CHECK: arith.addf {{.*}} : vector<16xf64>
// CHECK: scf.yield {{.*}} : vector<16xf64>, vector<16xf64>
// CHECK-COUNT-2: vector.transfer_write
// CHECK: } {mlirc.parallel_loop}
#pivot = affine_map<(d0, d1, d2) -> (d2)>
func.func @kernel_sibling_column_sums(%x: tensor<6x41x64xf32>, %k: tensor<64xf64>) -> (tensor<6x64xf64>, tensor<6x64xf64>) attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<6x64xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<6x64xf64>) -> tensor<6x64xf64>
  %r:2 = linalg.generic {indexing_maps = [#nhw, #pivot, #nc, #nc], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x, %k : tensor<6x41x64xf32>, tensor<64xf64>) outs(%f, %f : tensor<6x64xf64>, tensor<6x64xf64>) {
  ^bb0(%in: f32, %kv: f64, %acc: f64, %acc2: f64):
    %w = arith.extf %in : f32 to f64
    %d = arith.subf %w, %kv : f64
    %s = arith.addf %d, %acc : f64
    %sq = arith.mulf %d, %d : f64
    %s2 = arith.addf %sq, %acc2 : f64
    linalg.yield %s, %s2 : f64, f64
  } -> (tensor<6x64xf64>, tensor<6x64xf64>)
  return %r#0, %r#1 : tensor<6x64xf64>, tensor<6x64xf64>
}

// A whole reduction of a product of operands read through different maps ((x * w).sum()
// with w broadcast along the rows) stays scalar: vectorized, reduction_to_contract made
// it a vector.contract into a scalar, whose lowering aborted the process.
// CHECK-LABEL: func.func @kernel_broadcast_product_sum
// CHECK: linalg.generic
// CHECK-NOT: vector.
// CHECK: return
#bp_rows = affine_map<(d0, d1) -> (d0, d1)>
#bp_cols = affine_map<(d0, d1) -> (d1)>
#bp_whole = affine_map<(d0, d1) -> ()>
func.func @kernel_broadcast_product_sum(%x: tensor<8x16xf32>, %w: tensor<16xf32>) -> tensor<f32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#bp_rows, #bp_cols, #bp_whole], iterator_types = ["reduction", "reduction"]} ins(%x, %w : tensor<8x16xf32>, tensor<16xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// A generic that moves a few hundred bytes (a variance's pivot row: one element per
// channel of a large activation, read through constant indices) is not marked for
// threads, whatever the size of the buffer it reads: a fork and join costs more.
// CHECK-LABEL: func.func @kernel_pivot_row
// CHECK-NOT: mlirc.parallel_loop
// CHECK: return
#pivot_read = affine_map<(d0) -> (0, 0, 0, d0)>
#pivot_row = affine_map<(d0) -> (d0)>
func.func @kernel_pivot_row(%x: tensor<3x33x29x24xf32>) -> tensor<24xf64> attributes {mlirc.kernel} {
  %e = tensor.empty() : tensor<24xf64>
  %r = linalg.generic {indexing_maps = [#pivot_read, #pivot_row], iterator_types = ["parallel"]} ins(%x : tensor<3x33x29x24xf32>) outs(%e : tensor<24xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    linalg.yield %w : f64
  } -> tensor<24xf64>
  return %r : tensor<24xf64>
}

// A named pooling op (its indexing maps implicit) stays scalar, split over its batch
// for threads.
// CHECK-LABEL: func.func @kernel_named_pooling
// CHECK: linalg.pooling_nchw_max
// CHECK: } {mlirc.parallel_loop}
func.func @kernel_named_pooling(%x: tensor<2x3x9x9xf32>, %w: tensor<3x3xf32>, %o: tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32> attributes {mlirc.kernel} {
  %r = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x3x9x9xf32>, tensor<3x3xf32>) outs(%o : tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32>
  return %r : tensor<2x3x7x7xf32>
}

// A loop of size 0 (a bfloat16 sum over an empty dim, which stays scalar) runs no
// trip: the op is left untiled, its result the filled init.
// CHECK-LABEL: func.func @kernel_empty_reduction
// CHECK-NOT: scf.for
// CHECK: linalg.generic
#map_rows = affine_map<(d0, d1) -> (d0, d1)>
#map_row = affine_map<(d0, d1) -> (d0)>
func.func @kernel_empty_reduction(%a: tensor<64x0xbf16>) -> tensor<64xbf16> attributes {mlirc.kernel} {
  %zero = arith.constant 0.000000e+00 : bf16
  %e = tensor.empty() : tensor<64xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%e : tensor<64xbf16>) -> tensor<64xbf16>
  %r = linalg.generic {indexing_maps = [#map_rows, #map_row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<64x0xbf16>) outs(%init : tensor<64xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    %y = arith.addf %x, %o : bf16
    linalg.yield %y : bf16
  } -> tensor<64xbf16>
  return %r : tensor<64xbf16>
}
