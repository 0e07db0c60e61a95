"""mlirc-split-transposes: an elementwise kernel that writes its result transposed, for
GEMMs to read, computes in its input's order and leaves the transpose to a view.

Under autocast a linear layer's weight is cast to bf16 and transposed for its GEMM
(`mm(x, _to_copy(w).t())`); elementwise fusion puts the cast into the transpose,
and the kernel reads the weight row by row and writes it column by column: 0.5 ms
for a 784x512 weight on 2 cores, against 0.07 ms for the cast alone.  BLAS takes a
transposed operand as it is, so such a kernel is split: the same body in the input's
order, and a pure transpose kernel after it, which mlirc-transpose-views (next)
turns into a host view.  A pure transpose back to the input's order of the same
result (the weight saved for the backward in its own layout) reads the new
kernel's result directly.

Split: a kernel of one all-parallel `linalg.generic` (and plumbing) on static shapes
whose inputs are all read through one permutation and whose result is written in
order, where every reader of the result is a GEMM library call or such a transpose
back.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func, tensor

from mlirc.dialects.attributes import KERNEL_ATTR
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.base.registry import register_pass
from mlirc.passes.outline_library_calls import library_of
from mlirc.passes.transpose_views import GEMM_LIBRARIES, PLUMBING, _callee, _calls, _kernel_sites, transpose_perm


def transposed_elementwise(kernel: func.FuncOp) -> tuple[ir.Operation, list[int]] | None:
    """(its generic, the permutation `out = f(in).permute(perm)`) when `kernel` is an
    elementwise body written transposed (see the module's doc), else None."""
    ops = [op.operation for op in kernel.entry_block.operations]
    generics = [op for op in ops if op.name == "linalg.generic"]
    if len(generics) != 1 or any(op.name not in PLUMBING for op in ops if op is not generics[0]):
        return None
    generic = generics[0]
    if transpose_perm(kernel) is not None:  # a pure transpose: mlirc-transpose-views' own
        return None
    iterators = [str(t) for t in ir.ArrayAttr(generic.attributes["iterator_types"])]
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    if len(generic.results) != 1 or len(maps) < 2 or any("parallel" not in t for t in iterators):
        return None
    *in_maps, out_map = maps
    if out_map != ir.AffineMap.get_identity(out_map.n_dims) or any(m != in_maps[0] for m in in_maps):
        return None
    if not in_maps[0].is_permutation or in_maps[0] == out_map:
        return None
    if not all(ir.RankedTensorType(v.type).has_static_shape for v in (*generic.operands, *generic.results)):
        return None
    inverse = [0] * in_maps[0].n_dims
    for in_dim, expr in enumerate(in_maps[0].results):
        inverse[ir.AffineDimExpr(expr).position] = in_dim
    return generic, inverse


def _undoes(kernel: func.FuncOp | None, perm: list[int]) -> bool:
    """Is `kernel` a pure transpose that permutes a `perm`-permuted tensor back?"""
    if kernel is None or library_of(kernel) is not None:
        return False
    back = transpose_perm(kernel)
    return back is not None and len(back) == len(perm) and all(perm[back[i]] == i for i in range(len(perm)))


def _in_order(kernel: func.FuncOp, generic: ir.Operation) -> ir.Type:
    """Rewrite the kernel to write its result in its inputs' order; that result's type."""
    source = ir.RankedTensorType(generic.operands[0].type)
    result_type = ir.RankedTensorType.get(source.shape, ir.RankedTensorType(generic.results[0].type).element_type)
    init = generic.operands[len(generic.operands) - 1]
    with ir.InsertionPoint(generic):
        empty = tensor.EmptyOp(source.shape, result_type.element_type)
    generic.operands[len(generic.operands) - 1] = empty.result
    if not list(init.uses) and init.owner.name == "tensor.empty":
        erase_op(init.owner)
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(source.rank))
    generic.attributes["indexing_maps"] = ir.ArrayAttr.get([identity] * len(generic.operands))
    generic.results[0].set_type(result_type)
    arguments = ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value).inputs
    kernel.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arguments, [result_type]))
    return result_type


def _transpose_kernel(module: ir.Operation, name: str, source: ir.Type, result: ir.Type, perm: list[int]) -> None:
    """A pure transpose kernel `name`: result = source.permute(perm)."""
    rank = len(perm)
    dims = ", ".join(f"d{i}" for i in range(rank))
    read = ", ".join(f"d{perm[i]}" for i in range(rank))
    element = ir.RankedTensorType(source).element_type
    text = f"""
func.func @{name}(%arg0: {source}) -> {result} attributes {{{KERNEL_ATTR}}} {{
  %0 = tensor.empty() : {result}
  %1 = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({read})>, affine_map<({dims}) -> ({dims})>],
      iterator_types = [{", ".join(['"parallel"'] * rank)}]}} ins(%arg0 : {source}) outs(%0 : {result}) {{
  ^bb0(%in: {element}, %out: {element}):
    linalg.yield %in : {element}
  }} -> {result}
  return %1 : {result}
}}"""
    parsed = ir.Module.parse(text, module.context)
    transpose = parsed.body.operations[0]
    transpose.move_before(module.regions[0].blocks[0].operations[0])


def _split_site(module: ir.Operation, call: ir.Operation, kernel: func.FuncOp, kernels: dict, callers: dict) -> bool:
    found = transposed_elementwise(kernel)
    if found is None:
        return False
    generic, perm = found
    readers = [(use.owner, use.operand_number) for use in call.results[0].uses]
    back = [owner for owner, _ in readers if _undoes(kernels.get(_callee(owner) or ""), perm)]
    gemms = [(o, i) for o, i in readers if library_of(kernels.get(_callee(o) or "")) in GEMM_LIBRARIES]
    if not gemms or len(back) + len(gemms) != len(readers):
        return False
    transposed_type = call.results[0].type
    natural_type = _in_order(kernel, generic)
    name = f"{kernel.sym_name.value}_transposed"
    _transpose_kernel(module, name, natural_type, transposed_type, perm)
    call.results[0].set_type(natural_type)
    with ir.InsertionPoint(call):
        view = func.CallOp([transposed_type], ir.FlatSymbolRefAttr.get(name), [call.results[0]])
    view.operation.move_after(call)
    for owner, index in gemms:
        owner.operands[index] = view.results[0]
    for owner in back:
        undone = _callee(owner)
        owner.results[0].replace_all_uses_with(call.results[0])
        erase_op(owner)
        callers[undone] -= 1
        if not callers[undone]:  # no call left: no kernel to compile
            kernels.pop(undone).operation.erase()
    return True


@register_pass(
    "mlirc-split-transposes", "Elementwise kernels written transposed for GEMMs compute in order; a transpose follows"
)
def split_transposes(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    kernels = {op.sym_name.value: op for op in body.operations if isinstance(op, func.FuncOp)}
    callers = {name: len(calls) for name, calls in _calls(body).items()}
    for op, kernel in _kernel_sites(body, kernels):
        # a kernel called at one site only: its rewrite changes no other caller
        if callers.get(kernel.sym_name.value) == 1:
            _split_site(module, op, kernel, kernels, callers)
