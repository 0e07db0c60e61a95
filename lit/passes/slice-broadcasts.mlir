// RUN: mlirc-opt %s --split-input-file -p mlirc-slice-broadcasts | FileCheck %s

// A slice of a broadcast slices the broadcast's operand (a broadcast dim keeps its
// one element) and broadcasts that; a reshape that only drops or adds unit dims
// goes through too, so a select of an expanded tensor never makes the expansion.

// CHECK-LABEL: func.func @rows
// CHECK: %[[S:.*]] = "mlirc.slice"(%arg0) {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<5000x1xf32>) -> tensor<10x1xf32>
// CHECK: %[[B:.*]] = "mlirc.broadcast"(%[[S]]) : (tensor<10x1xf32>) -> tensor<10x7xf32>
// CHECK-NOT: 5000x5000
// CHECK: return %[[B]]
func.func @rows(%b: tensor<5000x1xf32>) -> tensor<10x7xf32> attributes {mlirc.entry} {
  %0 = "mlirc.broadcast"(%b) : (tensor<5000x1xf32>) -> tensor<5000x5000xf32>
  %1 = "mlirc.slice"(%0) {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<5000x5000xf32>) -> tensor<10x7xf32>
  return %1 : tensor<10x7xf32>
}

// -----

// CHECK-LABEL: func.func @select
// CHECK-NOT: 3x500x500
// CHECK: "mlirc.slice"({{.*}}) {starts = array<i64: 0, 5>, steps = array<i64: 1, 100>} : (tensor<1x500xf32>) -> tensor<1x5xf32>
// CHECK: "mlirc.broadcast"({{.*}}) : (tensor<1x5xf32>) -> tensor<4x5xf32>
func.func @select(%b: tensor<1x1x500xf32>) -> tensor<4x5xf32> attributes {mlirc.entry} {
  %0 = "mlirc.broadcast"(%b) : (tensor<1x1x500xf32>) -> tensor<3x500x500xf32>
  %1 = "mlirc.slice"(%0) {starts = array<i64: 1, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<3x500x500xf32>) -> tensor<1x500x500xf32>
  %2 = "mlirc.reshape"(%1) : (tensor<1x500x500xf32>) -> tensor<500x500xf32>
  %3 = "mlirc.slice"(%2) {starts = array<i64: 5, 5>, steps = array<i64: 1, 100>} : (tensor<500x500xf32>) -> tensor<4x5xf32>
  return %3 : tensor<4x5xf32>
}

// -----

// Of symbolic shape, which dims a broadcast repeats can change with the sizes: the
// slice, the broadcast and the reshape of the slice (a broadcast's too, once the
// slice is rewritten) wait for them (deferred), untouched.
// CHECK-LABEL: func.func @symbolic
// CHECK: %[[B:.*]] = "mlirc.broadcast"(%arg0, %arg1) {mlirc.deferred = "mlirc-slice-broadcasts"}
// CHECK: %[[S:.*]] = "mlirc.slice"(%[[B]], %arg2) {mlirc.deferred = "mlirc-slice-broadcasts", starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK: "mlirc.reshape"(%[[S]], %arg2) {mlirc.deferred = "mlirc-slice-broadcasts"}
func.func @symbolic(%b: tensor<?x1xf32>, %n: index, %m: index) -> tensor<?x7x1xf32> attributes {mlirc.entry} {
  %0 = "mlirc.broadcast"(%b, %n) : (tensor<?x1xf32>, index) -> tensor<?x5000xf32>
  %1 = "mlirc.slice"(%0, %m) {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<?x5000xf32>, index) -> tensor<?x7xf32>
  %2 = "mlirc.reshape"(%1, %m) : (tensor<?x7xf32>, index) -> tensor<?x7x1xf32>
  return %2 : tensor<?x7x1xf32>
}
