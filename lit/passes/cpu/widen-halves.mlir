// RUN: mlirc-opt %s -p mlirc-cpu-widen-halves,canonicalize,cse | FileCheck %s

// An elementwise bf16 generic computes in f32: its arguments widen at the top, the
// constant it makes keeps its bf16 rounding (then widens), and the result rounds
// once, at the yield.
// CHECK-LABEL: func.func @elementwise(
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK-DAG: %[[WA:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-DAG: %[[WB:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK: %[[M:.*]] = arith.mulf %[[WA]], %[[WB]] : f32
// CHECK: %[[E:.*]] = math.exp %[[M]] : f32
// CHECK: %[[R:.*]] = arith.truncf %[[E]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
#map = affine_map<(d0) -> (d0)>
func.func @elementwise(%a: tensor<9xbf16>, %b: tensor<9xbf16>) -> tensor<9xbf16> {
  %e = tensor.empty() : tensor<9xbf16>
  %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<9xbf16>, tensor<9xbf16>) outs(%e : tensor<9xbf16>) {
  ^bb0(%x: bf16, %y: bf16, %o: bf16):
    %m = arith.mulf %x, %y : bf16
    %v = math.exp %m : bf16
    linalg.yield %v : bf16
  } -> tensor<9xbf16>
  return %r : tensor<9xbf16>
}

// A bf16 sum accumulates in an f32 fill and is rounded after the loop; an explicit
// f32 -> bf16 cast in a body is a rounding of its own and stays.
// CHECK-LABEL: func.func @row_sum(
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<3x11xf32>) outs(%[[ZERO]] : tensor<3xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[N:.*]] = arith.truncf %[[IN]] : f32 to bf16
// CHECK: %[[W:.*]] = arith.extf %[[N]] : bf16 to f32
// CHECK: %[[ADD:.*]] = arith.addf %[[W]], %[[ACC]] : f32
// CHECK: linalg.yield %[[ADD]] : f32
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<3xf32>) outs(%{{.*}} : tensor<3xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: return %[[OUT]]
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%a: tensor<3x11xf32>) -> tensor<3xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<3xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%e : tensor<3xbf16>) -> tensor<3xbf16>
  %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x11xf32>) outs(%init : tensor<3xbf16>) {
  ^bb0(%x: f32, %acc: bf16):
    %n = arith.truncf %x : f32 to bf16
    %s = arith.addf %n, %acc : bf16
    linalg.yield %s : bf16
  } -> tensor<3xbf16>
  return %r : tensor<3xbf16>
}

// A body that reinterprets a half value's bits is left as it is.
// CHECK-LABEL: func.func @bits(
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK-NOT: arith.extf
#id = affine_map<(d0) -> (d0)>
func.func @bits(%a: tensor<4xbf16>) -> tensor<4xi16> {
  %e = tensor.empty() : tensor<4xi16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xbf16>) outs(%e : tensor<4xi16>) {
  ^bb0(%x: bf16, %o: i16):
    %i = arith.bitcast %x : bf16 to i16
    linalg.yield %i : i16
  } -> tensor<4xi16>
  return %r : tensor<4xi16>
}

// A half value captured from outside the body (a padding value) widens inside it.
// CHECK-LABEL: func.func @captured(
// CHECK: ^bb0(%[[A:.*]]: bf16, %{{.*}}: bf16):
// CHECK-DAG: %[[WC:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-DAG: %[[WA:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK: %[[S:.*]] = arith.select %{{.*}}, %[[WA]], %[[WC]] : f32
// CHECK: arith.truncf %[[S]] : f32 to bf16
func.func @captured(%a: tensor<4xbf16>, %c: bf16, %p: i1) -> tensor<4xbf16> {
  %e = tensor.empty() : tensor<4xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xbf16>) outs(%e : tensor<4xbf16>) {
  ^bb0(%x: bf16, %o: bf16):
    %s = arith.select %p, %x, %c : bf16
    linalg.yield %s : bf16
  } -> tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// Symbolic sizes: the f32 accumulator and the rounded result take their sizes from
// the half init (a bf16 sum over rows of run-time length summed in bf16 was 40%
// off eager's for 1000 columns).
// CHECK-LABEL: func.func @symbolic_row_sum(
// CHECK: %[[D:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?x?xbf16>
// CHECK: %[[E:.*]] = tensor.empty(%[[D]]) : tensor<?xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?xf32>)
// CHECK: %[[S:.*]] = linalg.generic {{.*}} outs(%[[ZERO]] : tensor<?xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<?xf32>) outs(%{{.*}} : tensor<?xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @symbolic_row_sum(%a: tensor<?x?xbf16>) -> tensor<?xbf16> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : bf16
  %n = tensor.dim %a, %c0 : tensor<?x?xbf16>
  %e = tensor.empty(%n) : tensor<?xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%e : tensor<?xbf16>) -> tensor<?xbf16>
  %r = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<?x?xbf16>) outs(%init : tensor<?xbf16>) {
  ^bb0(%x: bf16, %acc: bf16):
    %s = arith.addf %x, %acc : bf16
    linalg.yield %s : bf16
  } -> tensor<?xbf16>
  return %r : tensor<?xbf16>
}
