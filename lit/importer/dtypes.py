# RUN: %PYTHON %s | FileCheck %s
"""Dtypes map to MLIR types in one place (dialects/shapes.py): casts, comparisons
giving i1, integer arithmetic, and type promotion of Python scalars."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlirc.frontend.decompositions import decomposition_table
from mlirc.frontend.importer import FxImporter


def show(fn, *args):
    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*args)
    print(FxImporter().import_graph(gm))


# CHECK-LABEL: func.func @main(%arg0: tensor<3x5xf32>) -> (tensor<3x5xi64>, tensor<3x5xi1>, tensor<3x5xf64>)
# CHECK: "mlirc.convert"(%arg0) : (tensor<3x5xf32>) -> tensor<3x5xi64>
# CHECK: "mlirc.gt"(%arg0, %{{.*}}) : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xi1>
# CHECK: "mlirc.convert"(%arg0) : (tensor<3x5xf32>) -> tensor<3x5xf64>
show(lambda x: (x.to(torch.int64), x > 0, x.double()), torch.randn(3, 5))

# An int tensor times a float scalar promotes to the default float dtype.
# CHECK-LABEL: func.func @main(%arg0: tensor<4xi64>, %arg1: tensor<4xi1>)
# CHECK: "mlirc.convert"(%arg0) : (tensor<4xi64>) -> tensor<4xf32>
# CHECK: "mlirc.mul"
# CHECK: "mlirc.select"(%arg1, %{{.*}}, %{{.*}}) : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
show(lambda a, m: torch.where(m, a * 0.5, 1.0), torch.arange(4), torch.tensor([True, False, True, False]))
