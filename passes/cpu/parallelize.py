"""mlirc-cpu-parallelize: split a kernel's outermost parallel loops into chunks.

Runs on bufferized kernels.  A loop at the top of a kernel marked
`mlirc.parallel_loop` (by mlirc-cpu-vectorize, for a loop over a parallel dim), in a
kernel that moves enough data, becomes

    func @kernel_N_chunk(<args>, %lo: index, %hi: index)     -- what the loop reads
                                                               outside it, and the
                                                               loop running [lo, hi)
    func private @kernel_N_parallel(<args>, index, index) {mlirc.parallel = [step]}
    func @kernel_N(<args>)
        ...                                  -- the kernel's other writes, in place
        call @kernel_N_parallel(<args>, lb, ub)
        ...

mlirc-cpu-omp-dispatch later defines kernel_N_parallel: a GOMP_parallel call that
runs the chunks of [lb, ub) on torch's own OpenMP threads and returns when they are
done.  So the kernel's writes outside its loops (a fill before the loop, a vector
loop's tail after it) stay where they were, on the caller's thread, in program
order.  A chunk clones what its loop reads from outside it: constants, views, index
and scalar math, scalar math on 0-d inputs (an optimizer's bias corrections, loaded
again by each chunk, so only where nothing may write between the load and the
loop), and scratch buffers (one per thread; a buffer that two loops, or a loop and
a write outside it, share keeps the kernel serial).  A kernel of several marked
loops (a row group's rows, then a reduction over them; merged small kernels) makes
one parallel call per loop that moves enough data itself (kernel_N_part<i>_...),
the others running in place.  A kernel of run-time sizes (mlirc-cpu-size-args) may
have a loop bound that is a size argument; whether it moves enough data to be worth
the threads is then decided at run time, and a small call runs each chunk function
over its whole range on the caller's thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, scf

from mlirc.dialects.attributes import KERNEL_ATTR, PARALLEL_ATTR, PARALLEL_LOOP_ATTR
from mlirc.passes.base.ir_utils import constant_index, erase_op, nested_ops, remap_operands
from mlirc.passes.base.registry import register_pass
from mlirc.passes.cpu.parallel.loops import (
    Bound,
    _bound,
    _chunkable_loops,
    _clonable,
    _footprint,
    _index,
    _needed_outside,
)
from mlirc.passes.cpu.parallel.region import _one_region

# Trips the chunked loop should have at least: a 16-core team gets 4 or more each.
MIN_TRIPS = 64
# Ops that may sit between two coalesced loops: they only compute addresses, so
# recomputing them on every trip of the merged loop is safe.
ADDRESSING = ("arith.", "affine.apply", "memref.subview", "memref.expand_shape", "memref.collapse_shape",
              "memref.cast", "memref.reinterpret_cast")  # fmt: skip


def _trips_from_zero(loop: ir.Operation) -> Bound | None:
    """The trip count of a loop over [0, n) with step 1 and n a constant or computed
    from the arguments (_bound), else None."""
    lb, ub, step = (_bound(v) for v in list(loop.operands)[:3])
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


def _times(a: Bound, b: Bound) -> Bound:
    return a * b if isinstance(a, int) and isinstance(b, int) else arith.muli(_index(a), _index(b))


def _coalesce(loop: ir.Operation, bounds: list[Bound]) -> tuple[ir.Operation, list[Bound]]:
    """Merge `loop` with the marked loops it directly runs (parallel tile loops,
    mlirc-cpu-vectorize) until the merged loop has MIN_TRIPS trips: a [3, 4, 4, 128]
    head split (bert's QKV bias) otherwise kept 3 of 16 threads busy.  A loop of
    run-time length may be as short (a batch of 1): it merges too."""
    outer_trips = _trips_from_zero(loop)
    while (
        outer_trips is not None
        and (not isinstance(outer_trips, int) or outer_trips < MIN_TRIPS)
        and (inner := _inner_marked_loop(loop)) is not None
    ):
        inner_trips = _trips_from_zero(inner)
        with ir.InsertionPoint(loop), loop.location:
            trips = _times(outer_trips, inner_trips)
            merged = scf.ForOp(_index(0), _index(trips), _index(1))
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
        erase_op(loop)
        loop, outer_trips = merged.operation, trips
        bounds = [0, trips, 1]
    return loop, bounds


def _rows_of_chunk(loop: ir.Operation) -> None:
    """A merged loop whose innermost width is a run-time size divides its index by it
    on every trip (a `[N, H, W, 32]` bias and ReLU: two divisions per 32 elements; a
    constant divisor costs a multiply).  Its chunk [lo, hi) runs instead as rows of
    that width: the quotient and remainder are loop indices, and the divisions by
    outer widths run once a row.  Only where the chunk has trips (a width is then
    non-zero)."""
    body = loop.regions[0].blocks[0]
    ops = [op.operation for op in body.operations]
    iv = body.arguments[0]
    if len(ops) < 3 or loop.results or constant_index(loop.operands[2]) != 1:
        return
    div, rem = ops[0], ops[1]
    if div.name != "arith.divui" or rem.name != "arith.remui" or list(div.operands) != list(rem.operands):
        return
    if div.operands[0] != iv or constant_index(div.operands[1]) is not None:
        return
    width, lo, hi = div.operands[1], loop.operands[0], loop.operands[1]
    with ir.InsertionPoint(loop), loop.location:
        branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, lo, hi))
    with ir.InsertionPoint(branch.then_block), loop.location:
        rows = scf.ForOp(arith.divui(lo, width), arith.ceildivui(hi, width), _index(1))
        scf.YieldOp([])
    with ir.InsertionPoint(rows.body), loop.location:
        start = arith.muli(rows.induction_variable, width)
        first = arith.maxsi(arith.subi(lo, start), _index(0))
        last = arith.minsi(arith.subi(hi, start), width)
        row = scf.ForOp(first, last, _index(1))
        scf.YieldOp([])
    with ir.InsertionPoint(row.body), loop.location:
        flat = arith.addi(start, row.induction_variable)
        end = scf.YieldOp([])
    for op in ops[2:-1]:
        op.move_before(end)
    div.results[0].replace_all_uses_with(rows.induction_variable)
    rem.results[0].replace_all_uses_with(row.induction_variable)
    iv.replace_all_uses_with(flat)
    erase_op(loop)


def _split(kernel: func.FuncOp, parts: list[tuple[ir.Operation, list[Bound]]], min_bytes: int) -> None:
    """Move each chunked loop into a chunk function and call its parallel form over
    its range where the loop was (one loop: kernel_N_chunk and kernel_N_parallel;
    several: kernel_N_part<i>_...).  The kernel's other writes (a fill before the
    loop, a vector loop's tail after it) stay where they were, on the caller's
    thread: a parallel call returns when all its chunks are done.  Where the kernel's
    size is known only at run time, the threads run it only when it moves
    `min_bytes` or more (else each chunk function, over its whole range)."""
    name = kernel.sym_name.value
    names = [name] if len(parts) == 1 else [f"{name}_part{i}" for i in range(len(parts))]
    for part, (loop, bounds) in zip(names, parts, strict=True):
        needed = _needed_outside(kernel, loop)
        ops = [op.operation for op in kernel.entry_block.operations]
        _outline(kernel, part, [o for o in ops if o in needed or o == loop or o.name == "func.return"], loop, bounds[2])
    large = None
    footprint = _footprint(kernel)
    if footprint.dynamic:
        with ir.InsertionPoint(parts[0][0]), kernel.location:
            large = arith.cmpi(arith.CmpIPredicate.uge, footprint.emit(), _index(min_bytes))
    for part, (loop, bounds) in zip(names, parts, strict=True):
        with ir.InsertionPoint(loop), kernel.location:
            args = [*kernel.entry_block.arguments, *(_index(b) for b in bounds[:2])]
            _call_parts(part, args, large)
        erase_op(loop)
    # The kernel keeps its serial ops, its buffers' views of its pointers (sized by
    # its size arguments), and what they read: the calls' ranges (merged loops' trip
    # counts) among them.  The chunks have their own copies of the rest.
    top = [op.operation for op in kernel.entry_block.operations]
    kept = {o for o in top if not _clonable(o) or o.name in ("arith.constant", "memref.reinterpret_cast")}
    for o in list(kept):
        kept |= _needed_outside(kernel, o)
    for o in reversed(top):
        if o not in kept:
            erase_op(o)
    if len(parts) > 1 and large is None:
        _one_region(kernel, {f"{n}_parallel": bounds[2] for n, (_, bounds) in zip(names, parts, strict=True)})


def _call_parts(part: str, args: list[ir.Value], large: ir.Value | None) -> None:
    """Call `part`_parallel, or, when `large` (a run-time size check) is false,
    `part`_chunk over the whole range on this thread."""
    if large is None:
        func.CallOp([], ir.FlatSymbolRefAttr.get(f"{part}_parallel"), args)
        return
    branch = scf.IfOp(large, has_else=True)
    for block, suffix in ((branch.then_block, "_parallel"), (branch.else_block, "_chunk")):
        with ir.InsertionPoint(block):
            func.CallOp([], ir.FlatSymbolRefAttr.get(f"{part}{suffix}"), args)
            scf.YieldOp([])


def _outline(kernel: func.FuncOp, part: str, ops: list[ir.Operation], loop: ir.Operation, step: int) -> None:
    """`part`_chunk: `ops` cloned, `loop` running [lo, hi); and `part`_parallel,
    declared with the loop's step for mlirc-cpu-omp-dispatch to define."""
    ftype = ir.FunctionType(kernel.attributes["function_type"].value)
    index = ir.IndexType.get()
    chunk_type = ir.FunctionType.get([*ftype.inputs, index, index], [])
    with ir.InsertionPoint(kernel), kernel.location:
        chunk = func.FuncOp(f"{part}_chunk", chunk_type, visibility="private")
        parallel = func.FuncOp(f"{part}_parallel", chunk_type, visibility="private")
    parallel.attributes[PARALLEL_ATTR] = ir.DenseI64ArrayAttr.get([step])
    block = chunk.add_entry_block()
    mapping = dict(zip(kernel.entry_block.arguments, block.arguments, strict=False))
    lo, hi = block.arguments[len(ftype.inputs)], block.arguments[len(ftype.inputs) + 1]
    for o in ops:
        clone = o.clone(ir.InsertionPoint(block))
        remap_operands(clone, mapping)
        for old, new in zip(o.results, clone.results, strict=True):
            mapping[old] = new
        if o == loop:
            clone.operands[0], clone.operands[1] = lo, hi
            del clone.attributes[PARALLEL_LOOP_ATTR]
            _rows_of_chunk(clone)


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
        threshold = options.parallel_min_kib * 1024
        if threshold < 0 or not _footprint(kernel).large(threshold):
            _drop_marks(kernel.operation)
            continue
        found = _chunkable_loops(kernel, threshold)
        if found is not None:
            _split(kernel, [_coalesce(*loop) for loop in found], threshold)
        _drop_marks(kernel.operation)


def _drop_marks(op: ir.Operation) -> None:
    for inner in nested_ops(op):
        if PARALLEL_LOOP_ATTR in inner.attributes:
            del inner.attributes[PARALLEL_LOOP_ATTR]
