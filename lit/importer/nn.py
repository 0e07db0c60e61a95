# RUN: %PYTHON %s | FileCheck %s
"""Linear, conv and pooling import to mlirc.matmul / conv2d / max_pool2d."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlirc.frontend.decompositions import decomposition_table
from mlirc.frontend.importer import FxImporter


def show(fn, *args):
    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*args)
    print(FxImporter().import_graph(gm))


# CHECK-LABEL: func.func @main
# CHECK: "mlirc.permute"
# CHECK: "mlirc.matmul"
# CHECK: "mlirc.add"
show(lambda x, w, b: torch.nn.functional.linear(x, w, b), torch.randn(4, 16), torch.randn(8, 16), torch.randn(8))

# CHECK-LABEL: func.func @main
# CHECK: "mlirc.conv2d"{{.*}}padding = array<i64: 1, 1>
show(lambda x, w: torch.nn.functional.conv2d(x, w, padding=1), torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3))

# CHECK-LABEL: func.func @main
# CHECK: "mlirc.max_pool2d"{{.*}}kernel = array<i64: 2, 2>
show(lambda x: torch.nn.functional.max_pool2d(x, 2), torch.randn(1, 2, 6, 6))
