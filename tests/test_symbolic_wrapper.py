"""The `?` sizes of a host entry as expressions of Dynamo's symbols
(backends/symbolic_sizes.py), what the CPU wrapper for every size is built from."""

from __future__ import annotations

import pytest
import sympy
import torch
from mlir import ir
from torch._dynamo.source import ConstantSource
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from mlirc.backends.symbolic_sizes import SymbolicSizes
from mlirc.dialects import make_context
from mlirc.errors import UnsupportedOpError

MODULE = """
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @kernel_0(%a: tensor<?x8xf32>, %n: index) -> tensor<?x?xf32> attributes {mlirc.kernel} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %d0 = tensor.dim %a, %c0 : tensor<?x8xf32>
    %rows = arith.muli %d0, %c2 : index
    %cols = arith.floordivsi %n, %c2 : index
    %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
    %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
    ^bb0(%o: f32):
      %z = arith.constant 0.0 : f32
      linalg.yield %z : f32
    } -> tensor<?x?xf32>
    return %r : tensor<?x?xf32>
  }
  func.func @main(%a: tensor<?x8xf32>, %n: index) -> tensor<?xf32> attributes {mlirc.entry} {
    %r = call @kernel_0(%a, %n) : (tensor<?x8xf32>, index) -> tensor<?x?xf32>
    %flat = tensor.collapse_shape %r [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
    %c1 = arith.constant 1 : index
    %m = arith.addi %n, %c1 : index
    %q = arith.OP %m, %n : index
    return %flat : tensor<?xf32>
  }
}
"""


def _symbols() -> tuple[torch.SymInt, torch.SymInt]:
    env = ShapeEnv()
    rows = env.create_symintnode(env.create_symbol(5, ConstantSource("rows")), hint=5)
    n = env.create_symintnode(env.create_symbol(12, ConstantSource("n")), hint=12)
    return rows, n


_KEEP: list = []  # the modules whose ops the tests read (an op outlives no module)


def _sizes(op: str = "maxsi") -> tuple[SymbolicSizes, list, torch.SymInt, torch.SymInt]:
    rows, n = _symbols()
    context = make_context()
    with context:
        module = ir.Module.parse(MODULE.replace("OP", op))
        sizes = SymbolicSizes(module, [[rows, 8], n])
        body = list(module.body.operations[1].regions[0].blocks[0].operations)
    _KEEP.append((context, module))
    return sizes, body, rows, n


def _same(size: object, expected: object) -> bool:
    return sympy.simplify(sympy.sympify(size.node.expr) - sympy.sympify(expected.node.expr)) == 0


def test_kernel_results_and_reshapes_take_sizes_from_the_arguments():
    sizes, body, rows, n = _sizes()
    call, collapse = body[0], body[1]
    result = sizes.shape(call.results[0])
    assert _same(result[0], rows * 2) and _same(result[1], n // 2)
    (flat,) = sizes.shape(collapse.results[0])
    assert _same(flat, rows * 2 * (n // 2))


def test_index_arithmetic_of_the_entry_is_evaluated_on_the_symbols():
    sizes, body, _, n = _sizes()
    assert _same(sizes.index(body[3].results[0]), n + 1)
    assert _same(sizes.index(body[4].results[0]), torch.sym_max(n + 1, n))


def test_index_arithmetic_it_cannot_evaluate_is_refused():
    sizes, body, _, _ = _sizes("shli")
    with pytest.raises(UnsupportedOpError, match="arith.shli"):
        sizes.index(body[4].results[0])
