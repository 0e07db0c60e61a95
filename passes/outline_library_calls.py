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

On the CPU, a bfloat16/float16 GEMM whose only reader adds an aten.addmm's
per-column bias (a linear layer's; the add carries `mlirc.addmm_bias`) takes the add
into its kernel (`mlirc.library = "addmm"`): the library adds the bias to its float32
sums before it rounds once, as eager's addmm does.  Added after the call, the result
would be rounded twice.  A user's `x @ w + b` is two ops in eager too, and stays so.
A float32 (or float64) GEMM rounds its sums to its own type either way, so its bias
add joins the call only where it would otherwise be a kernel of its own: where its
result reaches, through views, nothing but the region's results and other library
calls (attention's q, k and v projections, whose results go to SDPA).  Elsewhere the
add fuses into the kernel after the GEMM (GELU, the residual and layer norm) for free,
and a narrow one (a classifier head) stays "mm" for mlirc-cpu-skinny-matmul, which
generates the GEMM with its bias fused.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import shapes
from mlirc.dialects.attributes import ADDMM_BIAS_ATTR, KERNEL_ATTR, LIBRARY_ARGS_ATTR, LIBRARY_ATTR
from mlirc.passes.base.ir_utils import entry_functions, erase_op
from mlirc.passes.base.registry import register_pass

LIBRARY_TYPES = (ir.F32Type, ir.F64Type, ir.F16Type, ir.BF16Type)
LIBRARY_OPS = {"mlirc.matmul": "mm", "mlirc.batch_matmul": "bmm", "mlirc.conv2d": "conv2d"}
HALF_TYPES = (ir.F16Type, ir.BF16Type)
VIEW_OPS = frozenset({"mlirc.reshape", "mlirc.permute"})
# Widest GEMM result mlirc-cpu-skinny-matmul generates instead of calling the library
# (defined here, where both passes read it: CPU passes import this shared one, not the
# other way).  Generated dot products do two loads per multiply-add where a BLAS
# micro-kernel reuses each load across a register block, so the library wins once N is
# wide enough to fill one.
SKINNY_MAX_N = 16


def library_of(kernel: func.FuncOp | None) -> str | None:
    """The library a kernel stands for ("mm", "conv2d", "permute", ...), or None."""
    if kernel is None or LIBRARY_ATTR not in kernel.attributes:
        return None
    return ir.StringAttr(kernel.attributes[LIBRARY_ATTR]).value


def _library_eligible(op: ir.Operation) -> bool:
    types = [v.type for v in [*op.operands, *op.results]]
    return op.name in LIBRARY_OPS and all(isinstance(shapes.elem_of(t), LIBRARY_TYPES) for t in types)


def _bias_add(op: ir.Operation) -> ir.Operation | None:
    """The `mlirc.add` of an addmm's per-column bias that alone reads a GEMM's result and
    joins its library call (a half type's always, a wider type's where it reaches no
    kernel and the GEMM is not one mlirc-cpu-skinny-matmul generates)."""
    result = op.results[0]
    uses = list(result.uses)
    if op.name != "mlirc.matmul" or len(uses) != 1:
        return None
    add = uses[0].owner.operation
    if add.name != "mlirc.add" or ADDMM_BIAS_ATTR not in add.attributes or add.results[0].type != result.type:
        return None
    bias = add.operands[1] if add.operands[0] == result else add.operands[0]
    columns = shapes.shape_of(result)[1]
    if not isinstance(shapes.elem_of(result), HALF_TYPES) and (
        not _reaches_no_kernel(add.results[0]) or _skinny(columns)
    ):
        return None
    if bias == result or columns is None or bias.type != ir.RankedTensorType.get([columns], shapes.elem_of(result)):
        return None  # (a bias of one element, or of run-time size, broadcasts: oneDNN takes N exactly)
    return add


def _skinny(columns: int | None) -> bool:
    return columns is not None and columns <= SKINNY_MAX_N


def _reaches_no_kernel(value: ir.Value) -> bool:
    """Whether `value` is read, through views, only by the function's return and by
    other library calls: an elementwise op on it would be a kernel of its own."""
    for use in value.uses:
        reader = use.owner.operation
        if reader.name in VIEW_OPS:
            if not _reaches_no_kernel(reader.results[0]):
                return False
        elif reader.name != "func.return" and not _library_eligible(reader):
            return False
    return True


def _outline(entry: func.FuncOp, op: ir.Operation, name: str, bias_add: ir.Operation | None = None) -> None:
    """`op` (and the bias add that reads it) as a call of a new kernel `name`."""
    last = bias_add or op
    operands = list(op.operands)
    if bias_add is not None:
        operands += [v for v in bias_add.operands if v != op.results[0]]
    with ir.InsertionPoint(entry), op.location:
        kernel = func.FuncOp(name, ([v.type for v in operands], [r.type for r in last.results]))
    kernel.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    kernel.attributes[LIBRARY_ATTR] = ir.StringAttr.get("addmm" if bias_add is not None else LIBRARY_OPS[op.name])
    args = {name: op.attributes[name] for name in op.attributes}
    kernel.attributes[LIBRARY_ARGS_ATTR] = ir.DictAttr.get(args)
    block = kernel.add_entry_block()
    clone = op.clone(ir.InsertionPoint(block))
    for i in range(len(op.operands)):
        clone.operands[i] = block.arguments[i]
    if bias_add is not None:
        add = bias_add.clone(ir.InsertionPoint(block))
        for i, value in enumerate(bias_add.operands):
            add.operands[i] = clone.results[0] if value == op.results[0] else block.arguments[len(op.operands)]
        clone = add
    with ir.InsertionPoint(block), op.location:
        func.ReturnOp(list(clone.results))
    with ir.InsertionPoint(last), op.location:
        call = func.CallOp([r.type for r in last.results], ir.FlatSymbolRefAttr.get(name), operands)
    for old, new in zip(last.results, call.results, strict=True):
        old.replace_all_uses_with(new)
    if bias_add is not None:
        erase_op(bias_add)
    erase_op(op)


@dataclass(frozen=True)
class OutlineLibraryCallsOptions:
    library_gemm: bool = True  # off: GEMMs and convolutions are generated code
    # an addmm's bias add joins the library call (the CPU's; a GPU's fuses into a kernel)
    bias_in_gemm: bool = True


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
        gemms = [o.operation for o in entry.entry_block.operations if _library_eligible(o.operation)]
        for op in gemms:
            _outline(entry, op, next(names), _bias_add(op) if options.bias_in_gemm else None)
