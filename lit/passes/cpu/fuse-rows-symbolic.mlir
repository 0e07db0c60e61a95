// RUN: mlirc-opt --split-input-file %s -p 'mlirc-cpu-fuse-rows,cse' | FileCheck %s

// Kernels formed on `?` dims (compiled for every size): a row max and the
// exponentials over the same `?` rows of `?` length group into one loop whose trip
// count and delinearization are run-time values, read where the kernels sized
// their buffers; a size assertion between the calls splits nothing.  The third
// kernel's rows are another argument's (equal types, not provably equal sizes): it
// stays a kernel of its own.  (A generic's loops are any operand's dims: the key of
// one that a size reaches stands for all of them.)
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @rows_0(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[M:.*]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[L:.*]] = tensor.dim %[[X]], %c2
// CHECK: %[[OUT:.*]] = tensor.empty(%[[N]], %[[M]], %[[L]])
// CHECK: %[[ROWS:.*]] = arith.muli %[[N]], %[[M]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%[[Y:.*]] = %[[OUT]])
// CHECK: %[[J:.*]] = arith.remui %[[I]], %[[M]]
// CHECK: %[[K:.*]] = arith.divui %[[I]], %[[M]]
// CHECK: %[[XR:.*]] = tensor.extract_slice %[[X]][%[[K]], %[[J]], 0] [1, 1, %{{.*}}] [1, 1, 1] : tensor<?x?x?xf32> to tensor<1x1x?xf32>
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[XR]] : tensor<1x1x?xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%[[XR]], %[[MAX]] : tensor<1x1x?xf32>, tensor<1x1xf32>)
// CHECK: tensor.insert_slice %[[EXP]] into %[[Y]][%[[K]], %[[J]], 0] [1, 1, %{{.*}}]
// CHECK: } {mlirc.parallel_loop}
// CHECK-LABEL: func.func @main(
// CHECK: cf.assert
// CHECK: %[[E:.*]] = call @rows_0(%arg0)
// CHECK: call @kernel_2(%arg1, %arg1)
func.func @kernel_0(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %low = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %f = linalg.fill ins(%low : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<?x?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @kernel_1(%x: tensor<?x?x?xf32>, %max: tensor<?x?xf32>) -> tensor<?x?x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %l = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %e = tensor.empty(%n, %m, %l) : tensor<?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %max : tensor<?x?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}
func.func @kernel_2(%x: tensor<?x?x?xf32>, %y: tensor<?x?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y : tensor<?x?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @main(%x: tensor<?x?x?xf32>, %other: tensor<?x?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?xf32>) attributes {mlirc.entry} {
  %c0 = arith.constant 0 : index
  %c2048 = arith.constant 2048 : index
  %max = call @kernel_0(%x) : (tensor<?x?x?xf32>) -> tensor<?x?xf32>
  %l = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %short = arith.cmpi ule, %l, %c2048 : index
  cf.assert %short, "a size assumption"
  %exp = call @kernel_1(%x, %max) : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> tensor<?x?x?xf32>
  %sum = call @kernel_2(%other, %other) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?xf32>
  return %exp, %sum : tensor<?x?x?xf32>, tensor<?x?xf32>
}

// -----

// A member written into its argument (no buffer of its own): its `?` sizes are not
// known outside a row loop, so the group stays one kernel without one (reading them
// off the member's result inside would erase a value still read: an abort).
// CHECK-LABEL: func.func @rows_0(
// CHECK-NOT: scf.for
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @kernel_0(%x: tensor<?x?xf32>) -> tensor<?xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %em = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%em : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @kernel_1(%x: tensor<?x?xf32>, %m: tensor<?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %r = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<?xf32>) outs(%x : tensor<?x?xf32>) {
  ^bb0(%b: f32, %o: f32):
    %d = arith.subf %o, %b : f32
    %y = math.exp %d : f32
    linalg.yield %y : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.entry} {
  %m = call @kernel_0(%x) : (tensor<?x?xf32>) -> tensor<?xf32>
  %e = call @kernel_1(%x, %m) : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %e : tensor<?x?xf32>
}
