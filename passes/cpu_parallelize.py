"""mlirc-cpu-parallelize: split a kernel's outermost parallel loop into chunks.

Runs on bufferized kernels.  A kernel whose only memory writes happen inside one
outermost loop marked `mlirc.parallel_loop` (by mlirc-cpu-vectorize, for a loop
over a parallel dim) and that moves enough data becomes

    func @kernel_N_chunk(<args>, %lo: index, %hi: index)  -- the old body, that loop
                                                            now running [lo, hi)
    func @kernel_N(<args>) {mlirc.parallel = [lb, ub, step]}
        call @kernel_N_chunk(<args>, lb, ub)                -- the serial meaning

mlirc-cpu-omp-dispatch later replaces kernel_N's body with a GOMP_parallel call
that runs the chunks on torch's own OpenMP threads.  A kernel with writes outside
the loop (a fill of the whole output, a copy) stays serial: chunks would race.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, scf

from mlirc.dialects.attributes import KERNEL_ATTR, PARALLEL_ATTR, PARALLEL_LOOP_ATTR
from mlirc.passes.cpu_vectorize import elem_bytes
from mlirc.passes.ir_utils import nested_ops, remap_operands
from mlirc.passes.registry import register_pass

# Top-level ops that neither write memory nor escape a chunk (allocas are per call).
OUTSIDE_LOOP_OK = frozenset(
    {"arith.constant", "ub.poison", "memref.subview", "memref.expand_shape", "memref.collapse_shape",
     "memref.cast", "memref.reinterpret_cast", "memref.alloca", "func.return"}
)  # fmt: skip


def _constant_index(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def _bytes_moved(kernel: func.FuncOp) -> int:
    total = 0
    for arg in kernel.entry_block.arguments:
        mtype = ir.MemRefType(arg.type)
        count = 1
        for size in mtype.shape:
            count *= size
        total += count * elem_bytes(mtype.element_type)
    return total


def _chunkable_loop(kernel: func.FuncOp) -> tuple[ir.Operation, list[int]] | None:
    """The kernel's marked loop and its static (lb, ub, step), when chunking is safe."""
    loops = []
    for op in kernel.entry_block.operations:
        o = op.operation
        if o.name == "scf.for" and PARALLEL_LOOP_ATTR in o.attributes and not o.results:
            loops.append(o)
        elif o.name not in OUTSIDE_LOOP_OK:
            return None
    if len(loops) != 1:
        return None
    bounds = [_constant_index(v) for v in list(loops[0].operands)[:3]]
    if any(b is None for b in bounds):
        return None
    lb, ub, step = bounds
    if (ub - lb + step - 1) // step < 2:
        return None
    return loops[0], bounds


# Trips the chunked loop should have at least: a 16-core team gets 4 or more each.
MIN_TRIPS = 64
# Ops that may sit between two coalesced loops: they only compute addresses, so
# recomputing them on every trip of the merged loop is safe.
ADDRESSING = ("arith.", "affine.apply", "memref.subview", "memref.expand_shape", "memref.collapse_shape",
              "memref.cast", "memref.reinterpret_cast")  # fmt: skip


def _trips_from_zero(loop: ir.Operation) -> int | None:
    """The trip count of a loop over [0, n) with step 1 and a constant n, else None."""
    lb, ub, step = (_constant_index(v) for v in list(loop.operands)[:3])
    return ub if lb == 0 and step == 1 else None


def _inner_marked_loop(loop: ir.Operation) -> ir.Operation | None:
    """The marked loop over [0, n) that `loop`'s body runs, when the body is
    addressing ops, that loop and the terminator: a perfect nest two loops may
    merge in."""
    ops = [o.operation for o in loop.regions[0].blocks[0].operations]
    if len(ops) < 2:
        return None
    *prefix, inner, _ = ops
    if inner.name != "scf.for" or PARALLEL_LOOP_ATTR not in inner.attributes or inner.results:
        return None
    if not all(o.name.startswith(ADDRESSING) for o in prefix) or _trips_from_zero(inner) is None:
        return None
    return inner


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result


def _coalesce(loop: ir.Operation, bounds: list[int]) -> tuple[ir.Operation, list[int]]:
    """Merge `loop` with the marked loops it directly runs (parallel tile loops,
    mlirc-cpu-vectorize) until the merged loop has MIN_TRIPS trips: a [3, 4, 4, 128]
    head split (bert's QKV bias) otherwise kept 3 of 16 threads busy."""
    outer_trips = _trips_from_zero(loop)
    while outer_trips is not None and outer_trips < MIN_TRIPS and (inner := _inner_marked_loop(loop)) is not None:
        inner_trips = _trips_from_zero(inner)
        with ir.InsertionPoint(loop), loop.location:
            merged = scf.ForOp(_index(0), _index(outer_trips * inner_trips), _index(1))
        with ir.InsertionPoint(merged.body), loop.location:
            width = _index(inner_trips)
            outer_iv = arith.DivUIOp(merged.induction_variable, width).result
            inner_iv = arith.RemUIOp(merged.induction_variable, width).result
            end = scf.YieldOp([])
        for o in [*list(loop.regions[0].blocks[0].operations)[:-2], *list(inner.regions[0].blocks[0].operations)[:-1]]:
            o.operation.move_before(end)
        loop.regions[0].blocks[0].arguments[0].replace_all_uses_with(outer_iv)
        inner.regions[0].blocks[0].arguments[0].replace_all_uses_with(inner_iv)
        merged.operation.attributes[PARALLEL_LOOP_ATTR] = ir.UnitAttr.get()
        loop.erase()
        loop, outer_trips = merged.operation, outer_trips * inner_trips
        bounds = [0, outer_trips, 1]
    return loop, bounds


def _split(kernel: func.FuncOp, loop: ir.Operation, bounds: list[int]) -> None:
    name = kernel.sym_name.value
    ftype = ir.FunctionType(kernel.attributes["function_type"].value)
    index = ir.IndexType.get()
    chunk_type = ir.FunctionType.get([*ftype.inputs, index, index], [])
    with ir.InsertionPoint(kernel), kernel.location:
        chunk = func.FuncOp(f"{name}_chunk", chunk_type, visibility="private")
    block = chunk.add_entry_block()
    mapping = dict(zip(kernel.entry_block.arguments, block.arguments, strict=False))
    lo, hi = block.arguments[len(ftype.inputs)], block.arguments[len(ftype.inputs) + 1]
    body = [op.operation for op in kernel.entry_block.operations]
    for o in body:
        clone = o.clone(ir.InsertionPoint(block))
        remap_operands(clone, mapping)
        for old, new in zip(o.results, clone.results, strict=True):
            mapping[old] = new
        if o == loop:
            clone.operands[0], clone.operands[1] = lo, hi
            del clone.attributes[PARALLEL_LOOP_ATTR]
    for o in reversed(body):
        o.erase()
    with ir.InsertionPoint(kernel.entry_block), kernel.location:
        lb, ub = (arith.ConstantOp(index, ir.IntegerAttr.get(index, b)).result for b in bounds[:2])
        func.CallOp([], ir.FlatSymbolRefAttr.get(f"{name}_chunk"), [*kernel.entry_block.arguments, lb, ub])
        func.ReturnOp([])
    kernel.attributes[PARALLEL_ATTR] = ir.DenseI64ArrayAttr.get(bounds)


@dataclass(frozen=True)
class CpuParallelizeOptions:
    # Kernels that move less than this (KiB) stay on one thread: a fork/join costs
    # more than it saves.  -1: never split.
    parallel_min_kib: int = 128


@register_pass(
    "mlirc-cpu-parallelize",
    "Split kernels' outermost parallel loop into chunks for OpenMP threads",
    CpuParallelizeOptions,
)
def cpu_parallelize(module: ir.Operation, options: CpuParallelizeOptions) -> None:
    body = module.regions[0].blocks[0]
    kernels = [op for op in body.operations if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]
    for kernel in kernels:
        if kernel.is_external:
            continue
        found = _chunkable_loop(kernel)
        threshold = options.parallel_min_kib
        if found is not None and threshold >= 0 and _bytes_moved(kernel) >= threshold * 1024:
            _split(kernel, *_coalesce(*found))
        _drop_marks(kernel.operation)


def _drop_marks(op: ir.Operation) -> None:
    for inner in nested_ops(op):
        if PARALLEL_LOOP_ATTR in inner.attributes:
            del inner.attributes[PARALLEL_LOOP_ATTR]
