"""mlirc-gpu-lower-to-tt: each kernel becomes a Triton `tt.func` (TTIR).

After kernel formation a kernel is one `linalg.generic` (with a fill as its init
when it reduces), a row group of them (mlirc-gpu-fuse-rows), or a GEMM with its
epilogue (mlirc-gpu-matmul).  Tiling and the emitted tile code are in
passes/gpu/tt/tiles.py (plans: passes/gpu/tt/tile_plans.py; indices, loads and stores:
passes/gpu/tt/tile_access.py), the GEMM's `tt.dot` loop in passes/gpu/tt/matmul.py.

The `tt.func` lands in a nested module `@<kernel>_ttir`; the kernel func becomes a
declaration carrying the launch: `mlirc.gpu.ttir` (the module), `mlirc.gpu.grid`,
`mlirc.gpu.num_warps` (and `mlirc.gpu.num_stages` for pipelined loops).  The host
still calls the declaration, so the entry function is unchanged and the output is
a valid `mlirc-opt` input.

A kernel with `?` dims (a symbolic graph's, compiled once for every size) takes its
buffers' `?` sizes after its pointers, as i64 (`mlirc.size_args`: [buffer, dim]
pairs, passes/gpu/tt/sizes.py), and its grid is `mlirc.gpu.grid_size`: a Python
expression of those sizes (`n0`, `n1`, ...) that the host evaluates at launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func
from torch.utils._sympy.printers import PythonPrinter

from mlirc.dialects import tt
from mlirc.dialects.attributes import (
    GRID_ATTR,
    GRID_SIZE_ATTR,
    GROUP_ATTR,
    KERNEL_ATTR,
    LIBRARY_ATTR,
    ROWS_ATTR,
    SIZE_ARGS_ATTR,
    STAGES_ATTR,
    TILE_ATTR,
    TTIR_ATTR,
    WARPS_ATTR,
)
from mlirc.passes.base.ir_utils import declaration_of, erase_op
from mlirc.passes.base.linalg_utils import KERNEL_PLUMBING, RESHAPES, VIEWS, is_fill, scatter_of
from mlirc.passes.base.registry import register_pass
from mlirc.passes.gpu.tt.group import lower_group
from mlirc.passes.gpu.tt.matmul import (
    Contraction,
    MatmulEmitter,
    MatmulPlan,
    check_operands,
    find_contraction,
    plan_matmul,
)
from mlirc.passes.gpu.tt.row_loops import emit_row_loops
from mlirc.passes.gpu.tt.scatter import ScatterPlan, emit_scatter, plan_scatter
from mlirc.passes.gpu.tt.sizes import PASS, KernelSizes, is_static
from mlirc.passes.gpu.tt.tile_access import Tiled, _fail, scalar_constant
from mlirc.passes.gpu.tt.tile_plans import I32_LIMIT, Memory, TilePlan, plan_rows, plan_tiles, row_major
from mlirc.passes.gpu.tt.tiles import TileEmitter

# a GEMM kernel's tiles, set by mlirc-gpu-matmul or by hand: BLOCK_M, BLOCK_N, BLOCK_K, warps, stages


def _outer_scalars(kernel: str, ops: list[ir.Operation], emitter_scalars: dict) -> None:
    for op in ops:
        if op.name == "arith.constant":
            value = scalar_constant(op)
            if value is not None:
                emitter_scalars[op.results[0]] = Tiled(value, "s")
        elif op.name == "linalg.fill" or is_fill(op):
            if op.operands[0] not in emitter_scalars:
                raise _fail(kernel, "a fill of a non-constant value")
            emitter_scalars[op.results[0]] = emitter_scalars[op.operands[0]]


def _reshape_aliases(ops: list[ir.Operation]) -> dict:
    """reshape result -> the value whose memory it is: an argument read through a
    reshape, or a generic's result that the kernel returns reshaped."""
    alias = {}
    for op in ops:
        if op.name in RESHAPES:
            source = op.operands[0]
            alias[op.results[0]] = alias.get(source, source)
    return alias


def transpose_perm(op: ir.Operation) -> list[int] | None:
    """For a generic that only copies its one tensor input through a permutation
    (a transpose): per input dim, the loop (= result) dim that indexes it."""
    if op.name != "linalg.generic" or len(op.operands) != 2 or not isinstance(op.operands[0].type, ir.ShapedType):
        return None
    body = op.regions[0].blocks[0]
    body_ops = list(body.operations)
    if len(body_ops) != 1 or list(body_ops[0].operands) != [body.arguments[0]]:
        return None
    in_map, out_map = (ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"]))
    if not in_map.is_permutation or out_map != ir.AffineMap.get_identity(out_map.n_dims):
        return None
    return [ir.AffineDimExpr(e).position for e in in_map.results]


def _transposed(memory: Memory, perm: list[int], shape: list[int]) -> Memory:
    strides: list = [0] * len(perm)
    splits = {}
    for source_dim, dim in enumerate(perm):
        strides[dim] = memory.strides[source_dim]
        if source_dim in memory.splits:
            splits[dim] = memory.splits[source_dim]
    return Memory(memory.pointer, memory.offset, shape, strides, splits)


def _readable(ops: list[ir.Operation], args: list[ir.Value]) -> set:
    """The arguments and their views: values the kernel reads from memory."""
    readable = set(args)
    for op in ops:
        if op.name in VIEWS and op.operands[0] in readable:
            readable.add(op.results[0])
    return readable


def _buffers(
    name: str,
    ops: list[ir.Operation],
    values: list[ir.Value],
    pointers: list[ir.Value],
    transposes: list,
    sizes: KernelSizes,
) -> dict:
    """Memory of the arguments and results, and of the arguments' views: reshapes,
    static slices and the `transposes` that a GEMM reads in place."""
    buffers = {
        v: Memory(p, 0, sizes.shape(v), row_major(sizes.shape(v))) for v, p in zip(values, pointers, strict=True)
    }
    for op in ops:
        if op.name in VIEWS and op.operands[0] in buffers:
            view = buffers[op.operands[0]].view(op, sizes.shape(op.results[0]))
            if view is None:
                raise _fail(name, f"'{op.name}' is not a static view of its operand's memory")
            buffers[op.results[0]] = view
        elif op in transposes:
            perm = transpose_perm(op)
            buffers[op.results[0]] = _transposed(buffers[op.operands[0]], perm, sizes.shape(op.results[0]))
    return buffers


def _size_op(op: ir.Operation) -> bool:
    """Size arithmetic of a kernel on `?` dims (its empty tensors' sizes): the
    lowering takes sizes from passes/gpu/tt/sizes.py instead."""
    return op.name == "tensor.dim" or (
        op.name.startswith("arith.") and all(isinstance(r.type, ir.IndexType) for r in op.results)
    )


@dataclass
class KernelShape:
    """What a kernel computes, as the lowering sees it."""

    generics: list[ir.Operation]  # what it computes, in order
    transposes: list[ir.Operation]  # transposes of inputs that a GEMM reads as views
    stored: list[ir.Value]  # the generic results it returns
    rows: int | None
    contraction: Contraction | None


def analyze(kernel: func.FuncOp) -> KernelShape:
    name = kernel.sym_name.value
    ops = [op.operation for op in kernel.entry_block.operations]
    unknown = sorted({op.name for op in ops if op.name not in KERNEL_PLUMBING | VIEWS and not _size_op(op)})
    readable = _readable(ops, list(kernel.entry_block.arguments))
    generics = [op for op in ops if op.name == "linalg.generic" and not is_fill(op)]
    transposes = [op for op in generics if transpose_perm(op) is not None and op.operands[0] in readable]
    computed = [op for op in generics if op not in transposes]
    contraction = find_contraction(computed[0]) if computed else None
    if contraction is not None:  # a GEMM reads its operands' transposes in place
        generics = computed
    else:  # a transpose on its own is a copy like any other kernel
        transposes = []
    rows = ir.IntegerAttr(kernel.attributes[ROWS_ATTR]).value if ROWS_ATTR in kernel.attributes else None
    if unknown or not generics or (len(generics) > 1 and rows is None and contraction is None):
        what = ", ".join(unknown) if unknown else f"{len(generics)} linalg.generic ops"
        raise _fail(name, f"no Triton lowering for a kernel with {what}")
    returned = _reshape_aliases(ops)  # a returned reshape -> the generic result it is
    stored = [returned.get(r, r) for r in ops[-1].operands]
    produced = [r for g in generics for r in g.results]
    if any(v not in produced for v in stored) or len(set(stored)) != len(stored):
        raise _fail(name, "a kernel must return its generics' results (reshaped or not)")
    if rows is None and contraction is None and len(stored) != len(produced):
        raise _fail(name, "a kernel must return all of its generic's results")
    if contraction is not None:
        check_operands(name, contraction)
        if any(find_contraction(g) or "reduction" in str(g.attributes["iterator_types"]) for g in generics[1:]):
            raise _fail(name, "a GEMM's epilogue must be pointwise")
    return KernelShape(generics, transposes, stored, rows, contraction)


def _plan(kernel: func.FuncOp, shape: KernelShape, sizes: KernelSizes, wide: bool) -> TilePlan:
    if shape.contraction is not None:
        if sizes.dynamic:
            raise _fail(kernel.sym_name.value, "a generated GEMM takes static sizes (each size is bound instead)")
        tile = tuple(ir.DenseI64ArrayAttr(kernel.attributes[TILE_ATTR])) if TILE_ATTR in kernel.attributes else None
        return plan_matmul(shape.contraction, shape.generics[-1], wide, tile)
    if shape.rows is not None:
        return plan_rows(shape.generics, shape.rows, sizes, wide)
    return plan_tiles(shape.generics[-1], sizes, wide)


def _lower_scatter(kernel: func.FuncOp, scatter: ir.Operation, top: ir.Block) -> None:
    """A scatter kernel (passes/gpu/tt/scatter.py): static sizes only (a symbolic
    graph's scatter waits for its sizes, mlirc-lower-to-linalg)."""
    name = kernel.sym_name.value
    ops = [op.operation for op in kernel.entry_block.operations]
    args, results = list(kernel.entry_block.arguments), list(ops[-1].operands)
    sizes = KernelSizes(name, [*args, *results], ops)
    if sizes.dynamic:
        raise _fail(name, "a scatter of run-time sizes (its sizes are bound before this stage)")
    updates, columns = tt.shape_of(scatter.operands[2])
    plan = plan_scatter(updates, columns)
    module_block = tt.nested_module(top, f"{name}_ttir")
    with ir.InsertionPoint(module_block):
        _, entry = tt.func(name, [tt.pointer_to(v) for v in [*args, *results]], aligned=True)
    with ir.InsertionPoint(entry):
        emit_scatter(kernel, scatter, plan, list(entry.arguments))
        tt.ret()
    _declare(kernel, plan, f"{name}_ttir", sizes)


def lower_kernel(kernel: func.FuncOp, top: ir.Block) -> None:
    name = kernel.sym_name.value
    scatter = scatter_of(kernel)
    if scatter is not None:
        _lower_scatter(kernel, scatter, top)
        return
    shape = analyze(kernel)
    ops = [op.operation for op in kernel.entry_block.operations]
    args, results = list(kernel.entry_block.arguments), list(ops[-1].operands)
    # Size arguments follow the returned values' types (the host's buffers); the
    # stored generic results they alias are worked out from them.
    sizes = KernelSizes(name, [*args, *results], ops)
    # i64 offsets where any buffer of the kernel, or a view's root, may hold 2**31
    # elements (every buffer of run-time size may)
    tensors = [v for op in ops for v in [*op.operands, *op.results] if isinstance(v.type, ir.ShapedType)]
    wide = sizes.dynamic or max([math.prod(tt.shape_of(v)) for v in tensors] + [1]) >= I32_LIMIT
    plan = _plan(kernel, shape, sizes, wide)
    module_block = tt.nested_module(top, f"{name}_ttir")
    i64 = ir.IntegerType.get_signless(64)
    # an index argument (a size the host computed) is an i64 scalar, in its place
    pointers = [i64 if isinstance(v.type, ir.IndexType) else tt.pointer_to(v) for v in [*args, *results]]
    with ir.InsertionPoint(module_block):
        _, entry = tt.func(name, [*pointers, *[i64] * len(sizes.arguments)], aligned=True)
    with ir.InsertionPoint(entry):
        arguments = list(entry.arguments)
        placed = list(zip([*args, *shape.stored], arguments, strict=False))
        memory = [(v, a) for v, a in placed if not isinstance(v.type, ir.IndexType)]
        buffers = _buffers(name, ops, [v for v, _ in memory], [a for _, a in memory], shape.transposes, sizes)
        scalars: dict = {v: Tiled(a, "s") for v, a in placed if isinstance(v.type, ir.IndexType)}
        _outer_scalars(name, ops, scalars)
        size_values = dict(zip(sizes.symbols, arguments[len(pointers) :], strict=True))
        _emit(name, shape, plan, buffers, scalars, ops, size_values)
        tt.ret()
    _declare(kernel, plan, f"{name}_ttir", sizes)


def _emit(
    name: str, shape: KernelShape, plan: TilePlan, buffers: dict, scalars: dict, ops: list, size_values: dict
) -> None:
    if shape.contraction is not None:
        result = shape.contraction.generic.results[0]
        aliases = [op.results[0] for op in ops if op.name in RESHAPES and op.operands[0] == result]
        MatmulEmitter(name, shape.contraction, plan, buffers, scalars).emit(shape.generics[1:], aliases)
        return
    emitter = TileEmitter(name, shape.generics[-1], plan, buffers, scalars, size_values)
    if shape.rows is not None and (not is_static(plan.size_r) or plan.block_r < plan.size_r):
        emit_row_loops(emitter, shape.generics)  # rows a tile cannot hold whole
    elif shape.rows is not None:
        emitter.emit_rows(shape.generics)
    elif plan.reduction:
        emitter.emit_reduction()
    else:
        emitter.emit_pointwise()


def _declare(kernel: func.FuncOp, plan: TilePlan | ScatterPlan, module_name: str, sizes: KernelSizes) -> None:
    """Replace `kernel` by a declaration with its launch attributes."""
    decl = declaration_of(kernel)
    decl.attributes[TTIR_ATTR] = ir.StringAttr.get(module_name)
    if sizes.dynamic:
        pairs = [i for pair in sizes.arguments for i in pair]
        decl.attributes[SIZE_ARGS_ATTR] = ir.DenseI64ArrayAttr.get(pairs)
        grid = ", ".join(PythonPrinter().doprint(g) if not isinstance(g, int) else str(g) for g in plan.grid)
        decl.attributes[GRID_SIZE_ATTR] = ir.StringAttr.get(grid)
    else:
        decl.attributes[GRID_ATTR] = ir.DenseI64ArrayAttr.get(plan.grid)  # type: ignore[arg-type]
    decl.attributes[WARPS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), plan.num_warps)
    if isinstance(plan, MatmulPlan):
        decl.attributes[STAGES_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), plan.num_stages)
    erase_op(kernel)


def _is_generated_kernel(op: ir.OpView) -> bool:
    return (
        isinstance(op, func.FuncOp)
        and KERNEL_ATTR in op.attributes
        and LIBRARY_ATTR not in op.attributes
        and GROUP_ATTR not in op.attributes
        and len(op.regions[0].blocks) > 0
    )


@register_pass(PASS, "Kernels -> Triton tt.func (TTIR) in nested modules; kernels become launch declarations")
def gpu_lower_to_tt(module: ir.Operation) -> None:
    top = module.regions[0].blocks[0]
    for op in list(top.operations):
        if _is_generated_kernel(op):
            lower_kernel(op, top)
    # its members lowered, a group joins their tt.funcs (and erases them: listed first)
    groups = [op for op in top.operations if isinstance(op, func.FuncOp) and GROUP_ATTR in op.attributes]
    for group in groups:
        if len(group.regions[0].blocks):
            lower_group(group, top)
