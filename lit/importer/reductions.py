# RUN: %PYTHON %s | FileCheck %s
"""Softmax and layer norm import as reductions + elementwise ops (fusable)."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlirc.frontend.decompositions import decomposition_table
from mlirc.frontend.importer import FxImporter


def show(fn, *args):
    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*args)
    print(FxImporter().import_graph(gm))


# CHECK-LABEL: func.func @main
# CHECK: "mlirc.reduce_max"{{.*}}dims = array<i64: 2>, keepdim = true
# CHECK: "mlirc.exp"
# CHECK: "mlirc.reduce_sum"
# CHECK: "mlirc.div"
show(lambda x: torch.softmax(x, -1), torch.randn(7, 33, 129))

# CHECK-LABEL: func.func @main
# CHECK: "mlirc.reduce_sum"
# CHECK: "mlirc.rsqrt"
show(
    lambda x, w, b: torch.nn.functional.layer_norm(x, (129,), w, b),
    torch.randn(7, 129),
    torch.randn(129),
    torch.randn(129),
)

# CHECK-LABEL: func.func @main
# CHECK: "mlirc.argmax"{{.*}} -> tensor<7xi64>
show(lambda x: torch.argmax(x, 1), torch.randn(7, 9))
