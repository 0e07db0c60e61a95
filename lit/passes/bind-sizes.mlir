// RUN: mlirc-opt --split-input-file %s -p mlirc-bind-sizes{sizes=4,5,4,5} | FileCheck %s
// RUN: %not mlirc-opt %s --split-input-file -p mlirc-bind-sizes{sizes=4} 2>&1 | FileCheck %s --check-prefix=COUNT

// An imported graph of symbolic sizes: its index arguments (Dynamo's SymInts) become
// constants and leave the signature, its tensor arguments and every mlirc op take
// static types, a sized op (reshape) drops its sizes, and from_size is a constant.
// CHECK-LABEL: func.func @mlirc_level
// CHECK-SAME: (%{{.*}}: tensor<4x5x16xf32>, %{{.*}}: tensor<16xf32>) -> (tensor<20x16xf32>, tensor<f32>)
// CHECK: "mlirc.add"(%{{.*}}, %{{.*}}) : (tensor<4x5x16xf32>, tensor<16xf32>) -> tensor<4x5x16xf32>
// CHECK: "mlirc.reshape"(%{{.*}}) : (tensor<4x5x16xf32>) -> tensor<20x16xf32>
// CHECK: "mlirc.constant"() {value = dense<2.000000e+01> : tensor<f32>}
// CHECK-NOT: ?x
// COUNT: error: {{.*}}the entry takes 4 symbolic sizes, 1 given
func.func @mlirc_level(%s0: index, %s1: index, %x: tensor<?x?x16xf32>, %b: tensor<16xf32>) -> (tensor<?x16xf32>, tensor<f32>) attributes {mlirc.entry} {
  %0 = "mlirc.add"(%x, %b) : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %rows = arith.muli %s0, %s1 : index
  %1 = "mlirc.reshape"(%0, %rows) : (tensor<?x?x16xf32>, index) -> tensor<?x16xf32>
  %2 = "mlirc.from_size"(%rows) : (index) -> tensor<f32>
  return %1, %2 : tensor<?x16xf32>, tensor<f32>
}

// -----

// Lowered to linalg: upstream canonicalization makes the ops static, and a function
// called with static operands takes them (its results follow).
// CHECK-LABEL: func.func private @library_0
// CHECK-SAME: (%{{.*}}: tensor<20x16xf32>, %{{.*}}: tensor<16x8xf32>) -> tensor<20x8xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<20x8xf32>
// CHECK-LABEL: func.func @linalg_level
// CHECK-SAME: -> tensor<4x5x8xf32>
// CHECK: call @library_0({{.*}}) : (tensor<20x16xf32>, tensor<16x8xf32>) -> tensor<20x8xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [4, 5, 8] : tensor<20x8xf32> into tensor<4x5x8xf32>
// CHECK-NOT: ?x
func.func private @library_0(%a: tensor<?x16xf32>, %w: tensor<16x8xf32>) -> tensor<?x8xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %rows = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%rows) : tensor<?x8xf32>
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %m = linalg.matmul ins(%a, %w : tensor<?x16xf32>, tensor<16x8xf32>) outs(%z : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %m : tensor<?x8xf32>
}
func.func @linalg_level(%s0: index, %s1: index, %x: tensor<?x?x16xf32>, %w: tensor<16x8xf32>) -> tensor<?x?x8xf32> attributes {mlirc.entry} {
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
  %m = call @library_0(%flat, %w) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %r = tensor.expand_shape %m [[0, 1], [2]] output_shape [%s0, %s1, 8] : tensor<?x8xf32> into tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// A function called at two sizes: one of the calls gets a copy of it, each at its size.
// CHECK-LABEL: func.func private @copy_rows(
// CHECK-SAME: tensor<5x16xf32>) -> tensor<5x16xf32>
// CHECK-LABEL: func.func @two_callers
// CHECK: call @copy_rows_1({{.*}}) : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: call @copy_rows({{.*}}) : (tensor<5x16xf32>) -> tensor<5x16xf32>
// CHECK-LABEL: func.func private @copy_rows_1(
// CHECK-SAME: tensor<4x16xf32>) -> tensor<4x16xf32>
func.func private @copy_rows(%a: tensor<?x16xf32>) -> tensor<?x16xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%rows) : tensor<?x16xf32>
  %r = linalg.copy ins(%a : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}
func.func @two_callers(%x: tensor<?x16xf32>, %y: tensor<?x16xf32>, %s: index, %t: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) attributes {mlirc.entry} {
  %0 = call @copy_rows(%x) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %1 = call @copy_rows(%y) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// The frozen arguments (parameters: mlirc-hoist-frozen) keep their mark as the size
// arguments before them leave the signature: positions 1 and 4 become 0 and 2; so
// do those a prepare function takes (a module bound after mlirc-hoist-frozen, whose
// kernels serve every size).
// CHECK-LABEL: func.func @frozen_positions
// CHECK-SAME: (%{{.*}}: tensor<16xf32>, %{{.*}}: tensor<4x5x16xf32>, %{{.*}}: tensor<16xf32>)
// CHECK-SAME: mlirc.frozen = array<i64: 0, 2>
// CHECK-SAME: mlirc.prepared = array<i64: 2>
func.func @frozen_positions(%s0: index, %w: tensor<16xf32>, %s1: index, %x: tensor<?x?x16xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> attributes {mlirc.entry, mlirc.frozen = array<i64: 1, 4>, mlirc.prepared = array<i64: 4>} {
  %0 = "mlirc.add"(%x, %w) : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %1 = "mlirc.add"(%0, %b) : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %1 : tensor<?x?x16xf32>
}

// -----

// After the linalg stage: an mlirc op left there for static sizes (deferred) takes
// the static values that canonicalization makes, in a chain with the linalg ops
// around it; the linalg ops that read it see its old type through a cast until
// canonicalization folds it.  The stage then runs again (frontend/compile.py).
// CHECK-LABEL: func.func @deferred_between_linalg_ops
// CHECK-SAME: (%{{.*}}: tensor<4x5xf32>) -> tensor<4xf32>
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x5xf32>)
// CHECK: %[[S:.*]] = "mlirc.reduce_sum"(%[[E]]) {{.*}} : (tensor<4x5xf32>) -> tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<4xf32>)
// CHECK-NOT: ?
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
func.func @deferred_between_linalg_ops(%s0: index, %s1: index, %x: tensor<?x?xf32>) -> tensor<?xf32> attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %ex = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  %s = "mlirc.reduce_sum"(%ex) {dims = array<i64: 1>, keepdim = false, mlirc.deferred = "mlirc-split-reductions"} : (tensor<?x?xf32>) -> tensor<?xf32>
  %n = tensor.dim %s, %c0 : tensor<?xf32>
  %e1 = tensor.empty(%n) : tensor<?xf32>
  %l = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%s : tensor<?xf32>) outs(%e1 : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.log %in : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  return %l : tensor<?xf32>
}

// -----

// Kernels formed on symbolic sizes (frontend/compile.py SYMBOLIC_STAGES): one takes
// %b only to read its sizes.  Bound, they are constants, and the argument leaves the
// kernel and its call: the kernel a static graph forms.
// CHECK-LABEL: func.func @kernel_0
// CHECK-SAME: (%{{.*}}: tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NOT: tensor.dim
// CHECK-LABEL: func.func @formed
// CHECK: call @kernel_0(%arg0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @kernel_0(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %b, %c0 : tensor<?x?xf32>
  %m = tensor.dim %b, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @formed(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.entry} {
  %r = call @kernel_0(%x, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// A kernel formed on `?` dims that takes what the host computed from a size (a
// reshape's size, a size made a value): bound, those are constants, which go into
// the kernel (as a static graph's kernel holds them) and leave its arguments.
// CHECK-LABEL: func.func @kernel_0
// CHECK-SAME: (%{{.*}}: tensor<4x5xf32>) -> tensor<2x10xf32>
// CHECK-DAG: arith.constant dense<4.000000e+00> : tensor<f32>
// CHECK-DAG: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 10]
// CHECK-LABEL: func.func @host_sizes
// CHECK-NEXT: call @kernel_0(%arg0) : (tensor<4x5xf32>) -> tensor<2x10xf32>
#id1 = affine_map<(d0) -> (d0)>
#s0 = affine_map<(d0) -> ()>
func.func @kernel_0(%a: tensor<?x?xf32>, %half: index, %rows: tensor<f32>) -> tensor<2x?xf32> attributes {mlirc.kernel} {
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %flat, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id1, #s0, #id1], iterator_types = ["parallel"]} ins(%flat, %rows : tensor<?xf32>, tensor<f32>) outs(%e : tensor<?xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %v = arith.mulf %in, %k : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  %out = tensor.expand_shape %r [[0, 1]] output_shape [2, %half] : tensor<?xf32> into tensor<2x?xf32>
  return %out : tensor<2x?xf32>
}
func.func @host_sizes(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<2x?xf32> attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %nm = arith.muli %n, %m : index
  %half = arith.divui %nm, %c2 : index
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f32
  %rows = tensor.from_elements %nf : tensor<f32>
  %r = call @kernel_0(%x, %half, %rows) : (tensor<?x?xf32>, index, tensor<f32>) -> tensor<2x?xf32>
  return %r : tensor<2x?xf32>
}
