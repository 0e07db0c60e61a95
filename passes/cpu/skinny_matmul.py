"""mlirc-cpu-skinny-matmul: a linear layer with few outputs becomes generated code.

A GEMM with a narrow result (a classifier head: 64x512 @ 512x10) is a poor fit
for a BLAS call: MKL's sgemm spends 15-25 us on 64x512x10 on 2 cores, mostly in
packing and thread hand-off for 0.3M multiply-adds, and its result then makes
another round trip through memory to the bias add and log_softmax after it.

For such a GEMM whose right operand is the transpose of an (N, K) weight (what a
linear layer's `x @ w.t()` is), the library call is replaced by a contraction
generic that reads the weight as stored: result[m, n] = sum_k a[m, k] * w[n, k],
so each output is a dot product over contiguous K.  Then the usual machinery
applies: fusion folds the transpose into the read (and the elementwise producer
of `a`, a bias and ReLU, into the body), mlirc-cpu-fuse-rows puts the contraction
in the same row loop as a following bias add and softmax, and mlirc-cpu-vectorize
splits each dot product into vector partial sums.

It runs on the linalg stage's IR, after mlirc-outline-library-calls, CPU only.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func

from mlirc.dialects import shapes
from mlirc.errors import StaticSizesNeeded
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import callee, entry_functions, erase_op, erase_uncalled_kernels, functions
from mlirc.passes.base.registry import register_pass
from mlirc.passes.outline_library_calls import SKINNY_MAX_N as MAX_N
from mlirc.passes.outline_library_calls import library_of
from mlirc.passes.transpose_views import generic_perm

TYPES = (ir.F32Type, ir.F64Type)  # accumulating in bf16/f16 would lose eager's f32 sums


def _is_skinny(call: ir.Operation, kernels: dict[str, func.FuncOp]) -> bool:
    if library_of(kernels.get(callee(call))) != "mm":
        return False
    a, b = call.operands
    if not isinstance(shapes.elem_of(a), TYPES) or shapes.elem_of(a) != shapes.elem_of(b):
        return False
    # b must be an (N, K) weight's transpose, so that each dot product reads contiguous K
    if isinstance(b.owner, ir.Block) or b.owner.name != "linalg.generic" or generic_perm(b.owner) != [1, 0]:
        return False
    # K is the weight's: the activation's may be a `?` that equals it
    m, (k, n) = shapes.shape_of(a)[0], shapes.shape_of(b)
    if None in (k, n):
        # Whether the weight is narrow is its size: the caller binds the sizes before this
        # stage (frontend/compile.py SymbolicRegion); a symbolic row count decides nothing.
        raise StaticSizesNeeded(NAME, f"a linear layer's weight of symbolic shape {list(shapes.shape_of(b))}")
    # Empty GEMMs (torch.mm fills zeros) stay the library's; a symbolic row count is
    # never 0 (Dynamo specializes 0 and 1).
    return (m is None or m >= 1) and min(k, n) >= 1 and n <= MAX_N


def _contraction(a: ir.Value, b: ir.Value) -> ir.Value:
    """a @ b as a generic over (m, n, k): a read as (m, k), b as (k, n)."""
    elem = shapes.elem_of(a)
    init = le.fill(arith.ConstantOp(elem, 0.0).result, le.empty([le.dims_of(a)[0], le.dims_of(b)[1]], elem))
    maps = [ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(i) for i in dims]) for dims in ((0, 2), (2, 1), (0, 1))]
    return le.generic(
        [a, b],
        maps[:2],
        [init],
        maps[2:],
        [le.PARALLEL, le.PARALLEL, le.REDUCTION],
        lambda x: [arith.addf(x[2], arith.mulf(x[0], x[1]))],
    )[0]


NAME = "mlirc-cpu-skinny-matmul"


@register_pass(NAME, "CPU: narrow linear-layer GEMMs become contraction generics, not library calls")
def cpu_skinny_matmul(module: ir.Operation) -> None:
    top = module.regions[0].blocks[0]
    kernels = functions(top)
    for entry in entry_functions(top):
        for op in [o.operation for o in entry.entry_block.operations]:
            if op.name != "func.call" or not _is_skinny(op, kernels):
                continue
            with ir.InsertionPoint(op), op.location:
                result = _contraction(*op.operands)
            op.results[0].replace_all_uses_with(result)
            erase_op(op)
    erase_uncalled_kernels(top, kernels)
