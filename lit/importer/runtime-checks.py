# RUN: %PYTHON %s | FileCheck %s
"""Indices and integer divisors the data decides are checked at run time: each check
is a 0-d i1 result after the graph's own, named by the entry's mlirc.checks; indices
the IR bounds (arange, clamp) are not checked; strided inputs keep their layout."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlirc.frontend.decompositions import decomposition_table
from mlirc.frontend.importer import FxImporter


def show(fn, *args):
    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*args)
    print(FxImporter().import_graph(gm))


# index_select takes [0, 3): both bounds compared, all of them reduced to one flag.
# CHECK-LABEL: func.func @main
# CHECK-SAME: -> (tensor<2x5xf32>, tensor<i1>)
# CHECK-SAME: mlirc.checks = ["IndexError: index out of range in self (mlirc: aten.index_select, an index outside [0, 3))"]
# CHECK: %[[GE:.*]] = "mlirc.ge"(%arg1, %{{.*}})
# CHECK: %[[LT:.*]] = "mlirc.lt"(%arg1, %{{.*}})
# CHECK: %[[OK:.*]] = "mlirc.logical_and"(%[[GE]], %[[LT]])
# CHECK: %[[ALL:.*]] = "mlirc.reduce_all"(%[[OK]]) {dims = array<i64: 0>, keepdim = false} : (tensor<2xi1>) -> tensor<i1>
# CHECK: return %{{.*}}, %[[ALL]]
show(lambda x, i: torch.index_select(x, 0, i), torch.randn(3, 5), torch.tensor([0, 2]))

# An arange and a clamped index need no check.
# CHECK-LABEL: func.func @main
# CHECK-NOT: mlirc.checks
# CHECK: return
show(lambda x, i: x[torch.arange(3), i.clamp(0, 4)], torch.randn(3, 5), torch.tensor([9]))

# An integer floor division checks its divisor (broadcast to the result's shape).
# CHECK-LABEL: func.func @main
# CHECK-SAME: mlirc.checks = ["RuntimeError: ZeroDivisionError (mlirc: aten.div)"]
# CHECK: "mlirc.ne"
# CHECK: "mlirc.floor_div"
show(lambda a, b: a // b, torch.tensor([5, 7]), torch.tensor([2, 3]))

# A transposed input arrives as the dense buffer it is, permuted back in IR.
# CHECK-LABEL: func.func @main(%arg0: tensor<5x3xf32>)
# CHECK-SAME: mlirc.arg_layouts = [array<i64: 1, 0, -1>]
# CHECK: "mlirc.permute"(%arg0) {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
show(lambda x: x * 2, torch.randn(5, 3).t())
