# RUN: %PYTHON %s | FileCheck %s
"""The FX importer maps ATen ops through the lowering table to mlirc ops."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlirc.frontend.importer import FxImporter


def show(fn, *args):
    gm = make_fx(fn, tracing_mode="fake")(*args)
    print(FxImporter().import_graph(gm))


# CHECK-LABEL: func.func @main
# CHECK: "mlirc.mul"
# CHECK: "mlirc.add"
# CHECK: "mlirc.sigmoid"
# CHECK: return
show(lambda x, y: torch.sigmoid(x * 2.0 + y), torch.randn(3, 5), torch.randn(5))

# Type promotion: an int tensor times a float scalar converts first.
# CHECK-LABEL: func.func @main
# CHECK: "mlirc.convert"({{.*}}) : (tensor<4xi64>) -> tensor<4xf32>
# CHECK: "mlirc.mul"
show(lambda x: x * 1.5, torch.arange(4))

# CHECK-LABEL: func.func @main
# CHECK: "mlirc.gt"{{.*}} -> tensor<6xi1>
# CHECK: "mlirc.select"
show(lambda x: torch.where(x > 0, x, -x), torch.randn(6))
