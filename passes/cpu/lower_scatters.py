"""mlirc-cpu-lower-scatters: a scatter kernel becomes loops over its buffers.

`mlirc.scatter_add` (x[T, R], index[K], src[K, R]) adds each update row k into row
index[k] of the result.  Its kernel (mlirc.in_place: the result buffer already holds
x, see mlirc-form-kernels) becomes, on memrefs,

    for c in column chunks of R:                    -- mlirc.parallel_loop
      for k in 0..K:    i = clamp(index[k], 0, T-1)
        for r in chunk c:   out[i, r] += src[k, r]

Each thread (mlirc-cpu-parallelize splits the chunk loop) owns whole columns and
applies the updates in order, so the sums are eager's, bit for bit: ATen's CPU
index_put with accumulate runs its updates serially, in order.  Indices are
checked on the host (eager's IndexError); the clamp only keeps a bad one inside the
buffer.  The kernel's arguments are reshapes of what the scatter reads at most
(form-kernels), so each is typed as the scatter's operand: same memory, row-major.
Half types add in f32 and round after each update, as c10::Half / BFloat16 do.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from mlirc.dialects.attributes import PARALLEL_LOOP_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.base.linalg_utils import scatter_arguments, scatter_of
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-cpu-lower-scatters"
# Columns per chunk: the unit a thread takes, and a run long enough to vectorize.
CHUNK = 64


class _Constants:
    """Index constants, each made once at the top of the function."""

    def __init__(self, block: ir.Block) -> None:
        self.block, self.made = block, {}

    def __call__(self, value: int) -> ir.Value:
        if value not in self.made:
            with ir.InsertionPoint.at_block_begin(self.block):
                index = ir.IndexType.get()
                self.made[value] = arith.ConstantOp(index, ir.IntegerAttr.get(index, value)).result
        return self.made[value]


def _operand_types(kernel: func.FuncOp, scatter: ir.Operation, positions: list[int]) -> list[ir.Type]:
    """Each argument's memref type: the scatter operand it is (through reshapes)."""
    types = [ir.RankedTensorType(a.type) for a in kernel.entry_block.arguments]
    for operand, position in zip(scatter.operands, positions, strict=True):
        types[position] = ir.RankedTensorType(operand.type)
    if any(not t.has_static_shape for t in types):
        name = kernel.sym_name.value
        raise PipelineError(NAME, f"{name}: a scatter of run-time sizes (its sizes are bound before this stage)")
    return [ir.MemRefType.get(t.shape, t.element_type) for t in types]


def _add(a: ir.Value, b: ir.Value) -> ir.Value:
    element = a.type
    if isinstance(element, ir.IntegerType):
        return arith.addi(a, b)
    if isinstance(element, (ir.BF16Type, ir.F16Type)):
        f32 = ir.F32Type.get()
        return arith.truncf(element, arith.addf(arith.extf(f32, a), arith.extf(f32, b)))
    return arith.addf(a, b)


def _emit(out: ir.Value, index: ir.Value, src: ir.Value, _index: _Constants) -> None:
    targets, columns = ir.MemRefType(out.type).shape
    updates = ir.MemRefType(index.type).shape[0]
    chunks = (columns + CHUNK - 1) // CHUNK
    chunk_loop = scf.ForOp(_index(0), _index(chunks), _index(1))
    chunk_loop.operation.attributes[PARALLEL_LOOP_ATTR] = ir.UnitAttr.get()
    with ir.InsertionPoint(chunk_loop.body):
        first = arith.muli(chunk_loop.induction_variable, _index(CHUNK))
        last = arith.minsi(arith.addi(first, _index(CHUNK)), _index(columns))
        update_loop = scf.ForOp(_index(0), _index(updates), _index(1))
        with ir.InsertionPoint(update_loop.body):
            k = update_loop.induction_variable
            row = arith.index_cast(ir.IndexType.get(), memref.load(index, [k]))
            row = arith.minsi(arith.maxsi(row, _index(0)), _index(targets - 1))
            column_loop = scf.ForOp(first, last, _index(1))
            with ir.InsertionPoint(column_loop.body):
                r = column_loop.induction_variable
                total = _add(memref.load(out, [row, r]), memref.load(src, [k, r]))
                memref.store(total, out, [row, r])
                scf.YieldOp([])
            scf.YieldOp([])
        scf.YieldOp([])


def lower_scatter_kernel(kernel: func.FuncOp) -> None:
    """Rewrite `kernel` (its body one scatter) as a function on memrefs: its
    arguments, then its result's buffer, as the host calls it."""
    scatter = scatter_of(kernel)
    positions = scatter_arguments(kernel, scatter)
    if positions is None:
        raise PipelineError(
            NAME, f"{kernel.sym_name.value}: a scatter operand that is not an argument (reshaped at most)"
        )
    arg_types = _operand_types(kernel, scatter, positions)
    result = ir.RankedTensorType(scatter.results[0].type)
    out_type = ir.MemRefType.get(result.shape, result.element_type)
    with ir.InsertionPoint(kernel), kernel.location:
        lowered = func.FuncOp(kernel.sym_name.value, ([*arg_types, out_type], []))
    for attr in kernel.attributes:
        if attr not in ("sym_name", "function_type"):
            lowered.attributes[attr] = kernel.attributes[attr]
    block = lowered.add_entry_block()
    with ir.InsertionPoint(block), kernel.location:
        buffers = list(block.arguments)
        _emit(buffers[-1], buffers[positions[1]], buffers[positions[2]], _Constants(block))
        func.ReturnOp([])
    erase_op(kernel)


@register_pass(NAME, "CPU: scatter kernels (mlirc.scatter_add) as loops adding into their result's rows")
def cpu_lower_scatters(module: ir.Operation) -> None:
    for op in list(module.regions[0].blocks[0].operations):
        if isinstance(op, func.FuncOp) and not op.is_external and scatter_of(op) is not None:
            lower_scatter_kernel(op)
