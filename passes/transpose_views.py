"""mlirc-transpose-views: a transpose kernel that only GEMM library calls read
becomes a view on the host.

BLAS takes transposed operands without a copy, so a kernel that only permutes its
one argument (a weight's `.t()`, attention's key transpose) and whose result only
`mm`/`addmm`/`bmm` library kernels read is marked `mlirc.library = "permute"` with its
permutation in `mlirc.perm`; the host wrapper emits `.permute()` for it.  The
kernel stays in the IR, so `mlirc-opt` can still run it.
"""

from __future__ import annotations

from collections.abc import Iterator

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import ENTRY_ATTR, KERNEL_ATTR, LIBRARY_ATTR, PERM_ATTR
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.base.registry import register_pass
from mlirc.passes.outline_library_calls import library_of

GEMM_LIBRARIES = frozenset({"mm", "addmm", "bmm"})
# A kernel formed on `?` dims reads its sizes (tensor.dim) for its empties.
PLUMBING = frozenset({"arith.constant", "tensor.dim", "tensor.empty", "linalg.fill", "func.return"})


def transpose_perm(kernel: func.FuncOp) -> list[int] | None:
    """The permutation when `kernel` is a pure transpose of its first argument, the
    operand every caller of a "permute" kernel views (the host wrapper, hoist-frozen,
    gpu-matmul).  A kernel on `?` dims may take other arguments for its sizes alone:
    where form-kernels made one of those the first (a weight gradient's `x.t()` whose
    batch size CSE took from another input), the view would have permuted that input
    instead, so such a kernel stays a copy."""
    ops = [op.operation for op in kernel.entry_block.operations]
    generics = [op for op in ops if op.name == "linalg.generic"]
    if len(generics) != 1 or any(op.name not in PLUMBING for op in ops if op is not generics[0]):
        return None
    arguments = list(kernel.entry_block.arguments)
    if not arguments or generics[0].operands[0] != arguments[0]:
        return None
    return generic_perm(generics[0])


def generic_perm(generic: ir.Operation) -> list[int] | None:
    """The torch.permute order when `generic` only copies its one input, transposed."""
    body = generic.regions[0].blocks[0]
    yielded = list(body.operations)[0]
    if len(generic.operands) != 2 or yielded.name != "linalg.yield" or yielded.operands[0] != body.arguments[0]:
        return None
    in_map, out_map = (ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"]))
    if not in_map.is_permutation or out_map != ir.AffineMap.get_identity(out_map.n_dims):
        return None
    # out[i] = in[perm^-1(i)]: torch's permute takes, per output dim, the input dim.
    inverse = [0] * in_map.n_dims
    for in_dim, expr in enumerate(in_map.results):
        inverse[ir.AffineDimExpr(expr).position] = in_dim
    return inverse


RESHAPES = frozenset({"tensor.collapse_shape", "tensor.expand_shape"})


def reshaped_transpose(kernel: func.FuncOp) -> tuple[ir.Operation, list[int]] | None:
    """The static reshape of its one argument that `kernel` transposes (a weight
    gradient's activations: [b, t, k] read as [b*t, k], transposed), if that is all
    it does."""
    ops = [op.operation for op in kernel.entry_block.operations]
    reshapes = [op for op in ops if op.name in RESHAPES]
    generics = [op for op in ops if op.name == "linalg.generic"]
    if len(reshapes) != 1 or len(generics) != 1 or len(kernel.entry_block.arguments) != 1:
        return None
    reshape, generic = reshapes[0], generics[0]
    if any(op.name not in PLUMBING for op in ops if op not in (reshape, generic)):
        return None
    static = all(ir.RankedTensorType(v.type).has_static_shape for v in (*reshape.operands, *reshape.results))
    if not static or len(reshape.operands) != 1 or reshape.operands[0] != kernel.entry_block.arguments[0]:
        return None
    perm = generic_perm(generic)
    if generic.operands[0] != reshape.results[0] or perm is None:
        return None
    return reshape, perm


def _hoist_reshape(kernel: func.FuncOp, reshape: ir.Operation, calls: list[ir.Operation]) -> None:
    """The kernel takes the reshaped value; each caller reshapes (a host view)."""
    for call in calls:
        moved = reshape.clone(ir.InsertionPoint(call))
        moved.operands[0] = call.operands[0]
        call.operands[0] = moved.results[0]
    arg = kernel.entry_block.arguments[0]
    arg.set_type(reshape.results[0].type)
    reshape.results[0].replace_all_uses_with(arg)
    erase_op(reshape)
    results = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value).results
    kernel.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([arg.type], results))


def _callee(op: ir.Operation) -> str | None:
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value if op.name == "func.call" else None


def _kernel_sites(body: ir.Block, kernels: dict) -> Iterator[tuple[ir.Operation, func.FuncOp]]:
    """Each call of a generated (not library) kernel in an entry function, with the
    kernel; both lists are taken first, so a caller may rewrite what it is handed."""
    for entry in list(body.operations):
        if not (isinstance(entry, func.FuncOp) and ENTRY_ATTR in entry.attributes):
            continue
        for op in list(entry.entry_block.operations):
            kernel = kernels.get(_callee(op.operation) or "")
            if kernel is not None and KERNEL_ATTR in kernel.attributes and library_of(kernel) is None:
                yield op.operation, kernel


@register_pass("mlirc-transpose-views", "Transpose kernels read only by GEMM library calls become host views")
def transpose_views(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    kernels = {op.sym_name.value: op for op in body.operations if isinstance(op, func.FuncOp)}
    calls = _calls(body)
    for op, kernel in _kernel_sites(body, kernels):
        reshaped = reshaped_transpose(kernel)
        reshape, perm = reshaped if reshaped is not None else (None, transpose_perm(kernel))
        if perm is None or not _gemm_only(op, kernels):
            continue
        if reshape is not None:
            if any(not _gemm_only(c, kernels) for c in calls[kernel.sym_name.value]):
                continue  # another call's result feeds a generated kernel: it stays one
            _hoist_reshape(kernel, reshape, calls[kernel.sym_name.value])
        kernel.attributes[LIBRARY_ATTR] = ir.StringAttr.get("permute")
        kernel.attributes[PERM_ATTR] = ir.DenseI64ArrayAttr.get(perm)


def _calls(body: ir.Block) -> dict[str, list[ir.Operation]]:
    calls: dict[str, list[ir.Operation]] = {}
    for fn in body.operations:
        if isinstance(fn, func.FuncOp) and len(fn.regions[0].blocks):
            for op in fn.entry_block.operations:
                if _callee(op.operation):
                    calls.setdefault(_callee(op.operation), []).append(op.operation)
    return calls


def _gemm_only(call: ir.Operation, kernels: dict) -> bool:
    users = [use.owner.operation for use in call.results[0].uses]
    return bool(users) and all(library_of(kernels.get(_callee(u) or "")) in GEMM_LIBRARIES for u in users)
