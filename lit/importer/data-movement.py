# RUN: %PYTHON %s | FileCheck %s
"""Views, slices, concatenation and gathers import to mlirc's data-movement ops."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlirc.frontend.decompositions import decomposition_table
from mlirc.frontend.importer import FxImporter


def show(fn, *args):
    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*args)
    print(FxImporter().import_graph(gm))


# An N-way cat becomes a chain of binary concats (IRDL variadics bind one type).
# CHECK-LABEL: func.func @main
# CHECK: %[[C0:.*]] = "mlirc.concat"(%arg0, %arg1) {dim = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xf32>) -> tensor<3x7xf32>
# CHECK: "mlirc.concat"(%[[C0]], %arg0) {dim = 1 : i64} : (tensor<3x7xf32>, tensor<3x5xf32>) -> tensor<3x12xf32>
show(lambda x, y: torch.cat([x, y, x], 1), torch.randn(3, 5), torch.randn(3, 2))

# CHECK-LABEL: func.func @main
# CHECK: %[[T:.*]] = "mlirc.permute"(%arg0) {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
# CHECK: "mlirc.slice"(%[[T]]) {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : (tensor<5x3xf32>) -> tensor<2x3xf32>
show(lambda x: x.t()[1:5:2], torch.randn(3, 5))

# unsqueeze + expand: a reshape then a broadcast; select: a slice then a reshape.
# CHECK-LABEL: func.func @main
# CHECK: %[[R:.*]] = "mlirc.reshape"(%arg0) : (tensor<3x5xf32>) -> tensor<1x3x5xf32>
# CHECK: "mlirc.broadcast"(%[[R]]) : (tensor<1x3x5xf32>) -> tensor<2x3x5xf32>
# CHECK: %[[S:.*]] = "mlirc.slice"(%arg0) {starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<3x5xf32>) -> tensor<3x1xf32>
# CHECK: "mlirc.reshape"(%[[S]]) : (tensor<3x1xf32>) -> tensor<3xf32>
show(lambda x: (x.unsqueeze(0).expand(2, 3, 5), x[:, 2]), torch.randn(3, 5))

# CHECK-LABEL: func.func @main
# CHECK: "mlirc.index_select"(%arg0, %arg1) {dim = 0 : i64} : (tensor<3x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
# CHECK: "mlirc.pad"(%arg0, %{{.*}}) {high = array<i64: 0, 2>, low = array<i64: 0, 1>} : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x8xf32>
show(
    lambda x, i: (torch.index_select(x, 0, i), torch.nn.functional.pad(x, (1, 2))),
    torch.randn(3, 5),
    torch.tensor([2, 0]),
)
