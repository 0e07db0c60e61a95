// RUN: mlirc-opt %s --split-input-file -p mlirc-fold-symbolic-reshapes | FileCheck %s

// expand_shape(collapse_shape(x)) is x where each `?` output size is x's: read off x
// itself, or off an op's result whose init was sized by x's dims.
// CHECK-LABEL: func.func @undone
// CHECK-NOT: tensor.expand_shape
// CHECK: return %arg0, %[[Y:.*]] :
func.func @undone(%x: tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?x16xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x16xf32>
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
  %back = tensor.expand_shape %flat [[0, 1], [2]] output_shape [%n, %m, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?x16xf32>
  %y = linalg.copy ins(%x : tensor<?x?x16xf32>) outs(%e : tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %n2 = tensor.dim %y, %c0 : tensor<?x?x16xf32>
  %flat2 = tensor.collapse_shape %y [[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
  %back2 = tensor.expand_shape %flat2 [[0, 1], [2]] output_shape [%n2, %m, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  return %back, %back2 : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// Sizes not known to be x's (another tensor's, an index argument; the dims swapped)
// may differ at run time: the pairs stay.
// CHECK-LABEL: func.func @maybe_other_sizes
// CHECK-COUNT-3: tensor.expand_shape
func.func @maybe_other_sizes(%x: tensor<?x?x16xf32>, %z: tensor<?x?x16xf32>, %k: index)
    -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?x16xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x16xf32>
  %p = tensor.dim %z, %c0 : tensor<?x?x16xf32>
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>
  %a = tensor.expand_shape %flat [[0, 1], [2]] output_shape [%p, %m, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  %b = tensor.expand_shape %flat [[0, 1], [2]] output_shape [%k, %m, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  %c = tensor.expand_shape %flat [[0, 1], [2]] output_shape [%m, %n, 16] : tensor<?x16xf32> into tensor<?x?x16xf32>
  return %a, %b, %c : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// A rank-reducing slice's dims are not its size operands in order (a unit dim was
// dropped: y[0, :a, :b, :a] is [a, b, a], not the expand's [a, a, b]), and a later
// block's argument is not the function's (%z is %w, not %x): the pairs stay.
// CHECK-LABEL: func.func @not_known
// CHECK: tensor.expand_shape
// CHECK: ^bb1
// CHECK: tensor.expand_shape
func.func @not_known(%x: tensor<?x?xf32>, %y: tensor<?x?x?x?xf32>, %w: tensor<?x?xf32>)
    -> (tensor<?x?x?xf32>, tensor<?x?xf32>) attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.dim %x, %c0 : tensor<?x?xf32>
  %b = tensor.dim %x, %c1 : tensor<?x?xf32>
  %s = tensor.extract_slice %y[0, 0, 0, 0] [1, %a, %b, %a] [1, 1, 1, 1] : tensor<?x?x?x?xf32> to tensor<?x?x?xf32>
  %c = tensor.collapse_shape %s [[0, 1, 2]] : tensor<?x?x?xf32> into tensor<?xf32>
  %e = tensor.expand_shape %c [[0, 1, 2]] output_shape [%a, %a, %b] : tensor<?xf32> into tensor<?x?x?xf32>
  cf.br ^bb1(%w : tensor<?x?xf32>)
^bb1(%z: tensor<?x?xf32>):
  %d0 = tensor.dim %z, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %z, %c1 : tensor<?x?xf32>
  %f = tensor.collapse_shape %x [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %g = tensor.expand_shape %f [[0, 1]] output_shape [%d0, %d1] : tensor<?xf32> into tensor<?x?xf32>
  return %e, %g : tensor<?x?x?xf32>, tensor<?x?xf32>
}

// -----

// The same slice read back whole (the expand's sizes are its dims [a, b, a], its one
// unit size being the dim it drops): attention's key slice of a fused QKV
// projection, collapsed and expanded by fusion, is the slice.
// CHECK-LABEL: func.func @rank_reducing_slice
// CHECK: %[[S:.*]] = tensor.extract_slice
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[S]]
func.func @rank_reducing_slice(%x: tensor<?x?xf32>, %y: tensor<?x?x?x?xf32>) -> tensor<?x?x?xf32> attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.dim %x, %c0 : tensor<?x?xf32>
  %b = tensor.dim %x, %c1 : tensor<?x?xf32>
  %s = tensor.extract_slice %y[1, 0, 0, 0] [1, %a, %b, %a] [1, 1, 1, 1] : tensor<?x?x?x?xf32> to tensor<?x?x?xf32>
  %c = tensor.collapse_shape %s [[0, 1, 2]] : tensor<?x?x?xf32> into tensor<?xf32>
  %e = tensor.expand_shape %c [[0, 1, 2]] output_shape [%a, %b, %a] : tensor<?xf32> into tensor<?x?x?xf32>
  return %e : tensor<?x?x?xf32>
}
