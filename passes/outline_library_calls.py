"""mlirc-outline-library-calls: GEMMs and convolutions become library kernels.

Each floating-point `mlirc.matmul`, `mlirc.batch_matmul` and `mlirc.conv2d` is outlined
into its own kernel func, marked `mlirc.library = "mm" | "bmm" | "conv2d"` with
the op's attributes in `mlirc.library_args`; the host wrapper calls torch's
BLAS/oneDNN (cuBLAS/cuDNN on a GPU) for it, as Inductor does with its extern kernels.  A generated GEMM
reaches ~14 GFLOP/s here against ~70 for MKL, and a naive convolution is worse.

It runs first, on the mlirc dialect, for two reasons: the op's meaning (padding,
groups) is still explicit here, and once outlined the op is out of reach of
elementwise fusion, whose reshape propagation would otherwise turn a matmul fed by
views (every 3-D linear layer, attention) into a contraction `linalg.generic` that
no library matches.  The kernel body is still lowered like any other, so
`mlirc-opt` can run it, and MLIRC_LIBRARY_GEMM=0 turns the pass off: the ops then
fuse with their epilogues and are generated.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import shapes
from mlirc.dialects.attributes import KERNEL_ATTR, LIBRARY_ARGS_ATTR, LIBRARY_ATTR
from mlirc.passes.ir_utils import entry_functions
from mlirc.passes.registry import register_pass

LIBRARY_TYPES = (ir.F32Type, ir.F64Type, ir.F16Type, ir.BF16Type)
LIBRARY_OPS = {"mlirc.matmul": "mm", "mlirc.batch_matmul": "bmm", "mlirc.conv2d": "conv2d"}


def library_of(kernel: func.FuncOp | None) -> str | None:
    """The library a kernel stands for ("mm", "conv2d", "permute", ...), or None."""
    if kernel is None or LIBRARY_ATTR not in kernel.attributes:
        return None
    return ir.StringAttr(kernel.attributes[LIBRARY_ATTR]).value


def _library_eligible(op: ir.Operation) -> bool:
    types = [v.type for v in [*op.operands, *op.results]]
    return op.name in LIBRARY_OPS and all(isinstance(shapes.elem_of(t), LIBRARY_TYPES) for t in types)


def _outline(entry: func.FuncOp, op: ir.Operation, name: str) -> None:
    operands = list(op.operands)
    with ir.InsertionPoint(entry), op.location:
        kernel = func.FuncOp(name, ([v.type for v in operands], [r.type for r in op.results]))
    kernel.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    kernel.attributes[LIBRARY_ATTR] = ir.StringAttr.get(LIBRARY_OPS[op.name])
    args = {name: op.attributes[name] for name in op.attributes}
    kernel.attributes[LIBRARY_ARGS_ATTR] = ir.DictAttr.get(args)
    block = kernel.add_entry_block()
    clone = op.clone(ir.InsertionPoint(block))
    for i, arg in enumerate(block.arguments):
        clone.operands[i] = arg
    with ir.InsertionPoint(block), op.location:
        func.ReturnOp(list(clone.results))
    with ir.InsertionPoint(op), op.location:
        call = func.CallOp([r.type for r in op.results], ir.FlatSymbolRefAttr.get(name), operands)
    for old, new in zip(op.results, call.results, strict=True):
        old.replace_all_uses_with(new)
    op.erase()


@dataclass(frozen=True)
class OutlineLibraryCallsOptions:
    library_gemm: bool = True  # off: GEMMs and convolutions are generated code


NAME = "mlirc-outline-library-calls"


@register_pass(
    NAME,
    "Outline floating-point GEMMs and convolutions as torch library kernels",
    OutlineLibraryCallsOptions,
)
def outline_library_calls(module: ir.Operation, options: OutlineLibraryCallsOptions) -> None:
    if not options.library_gemm:
        return
    body = module.regions[0].blocks[0]
    taken = {op.sym_name.value for op in body.operations if isinstance(op, func.FuncOp)}
    names = (f"library_{k}" for k in itertools.count() if f"library_{k}" not in taken)
    for entry in entry_functions(body):
        # Symbolic GEMMs too: the host wrapper calls the library at whatever sizes
        # the call has (a deferred one only waited for the binding to outline it).
        for op in (o.operation for o in list(entry.entry_block.operations)):
            if _library_eligible(op):
                _outline(entry, op, next(names))
