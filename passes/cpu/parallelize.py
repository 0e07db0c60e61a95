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

import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from mlirc.dialects.attributes import KERNEL_ATTR, PARALLEL_ATTR, PARALLEL_LOOP_ATTR
from mlirc.passes.base.ir_utils import constant_index, erase_op, nested_ops, remap_operands
from mlirc.passes.base.linalg_utils import elem_bytes
from mlirc.passes.base.registry import register_pass

# Top-level ops that neither write memory nor escape a chunk: a chunk clones those its
# loop reads (allocations, with their deallocation, move into the chunk: one per thread).
CLONABLE = frozenset(
    {"arith.constant", "ub.poison", "memref.subview", "memref.expand_shape", "memref.collapse_shape",
     "memref.cast", "memref.reinterpret_cast", "memref.alloca", "memref.alloc", "memref.dealloc",
     "memref.get_global"}
)  # fmt: skip
ALLOCATIONS = ("memref.alloc", "memref.alloca")

# A loop bound: a constant, or a value the kernel computes before its loops from
# its arguments (sizes, mlirc-cpu-size-args: a row loop runs to a product of them).
Bound = int | ir.Value


def _bound(value: ir.Value) -> Bound | None:
    constant = constant_index(value)
    if constant is not None:
        return constant
    return value if _computed_from_arguments(value) else None


def _computed_from_arguments(value: ir.Value) -> bool:
    """Is `value` an argument of the kernel, or scalar arithmetic on arguments, sizes
    and constants at the top of its body (valid before its loops run)?"""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return isinstance(owner.owner, func.FuncOp)
    if owner.parent is None or owner.parent.name != "func.func" or not _pure_scalar(owner):
        return False
    return all(_computed_from_arguments(v) or constant_index(v) is not None for v in owner.operands if not _buffer(v))


def _pure_scalar(op: ir.Operation) -> bool:
    return (op.name.startswith("arith.") and op.name != "arith.constant") or op.name == "memref.dim"


def _invariant_scalar(op: ir.Operation) -> bool:
    """Scalar math before the loop on a 0-d input (mlirc-cpu-hoist-invariant-scalars:
    an optimizer's bias corrections): each chunk computes it again.  A 0-d buffer is
    never one the loop writes: the loop writes elements it indexes, and a buffer
    reused in place has its output's size."""
    if op.name.startswith("math."):
        return True
    return op.name == "memref.load" and ir.MemRefType(op.operands[0].type).rank == 0


def _buffer(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType)


@dataclass
class Footprint:
    """What a kernel's buffers hold, in bytes: `static` plus, for each buffer of
    run-time size, its static part times its `?` dims."""

    static: int
    dynamic: list[tuple[ir.Value, int]]

    def large(self, min_bytes: int) -> bool:
        """`min_bytes` or more (or perhaps, at run time)?"""
        return bool(self.dynamic) or self.static >= min_bytes

    def emit(self) -> ir.Value:
        total = _index(self.static)
        for buffer, count in self.dynamic:
            product = _index(count)
            for dim in range(ir.MemRefType(buffer.type).rank):
                if ir.MemRefType(buffer.type).is_dynamic_dim(dim):
                    product = arith.muli(product, memref.dim(buffer, _index(dim)))
            total = arith.addi(total, product)
        return total


def _footprint(kernel: func.FuncOp, loop: ir.Operation | None = None) -> Footprint:
    """What the kernel's buffers hold, or (`loop`) those of them the loop reads or writes."""
    static, dynamic = 0, []
    within = None if loop is None else {loop, *nested_ops(loop), *_needed_outside(kernel, loop)}
    for arg in kernel.entry_block.arguments:
        if not isinstance(arg.type, ir.MemRefType):
            continue
        uses = [u.owner for u in arg.uses if u.owner.name == "memref.reinterpret_cast"]
        buffer = uses[0].results[0] if uses else arg  # a pointer and its sizes
        if within is not None and not any(_operation(u.owner) in within for u in buffer.uses):
            continue
        mtype = ir.MemRefType(buffer.type)
        sizes = [s for s in mtype.shape if not ir.ShapedType.is_dynamic_size(s)]
        count = math.prod(sizes) * elem_bytes(mtype.element_type)
        if len(sizes) == mtype.rank:
            static += count
        else:
            dynamic.append((buffer, count))
    return Footprint(static, dynamic)


def _clonable(op: ir.Operation) -> bool:
    return op.name in CLONABLE or _pure_scalar(op) or _invariant_scalar(op)


def _marked_loop(op: ir.Operation) -> bool:
    return op.name == "scf.for" and PARALLEL_LOOP_ATTR in op.attributes and not op.results


def _chunkable_loops(kernel: func.FuncOp, min_bytes: int) -> list[tuple[ir.Operation, list[Bound]]] | None:
    """The kernel's marked loops, in order, each with its (lb, ub, step), when
    chunking them is safe: what a loop reads outside it is clonable, and no buffer
    allocated outside it is also used by another loop or by the kernel's serial ops
    (each chunk has its own); lb and step constants, ub a constant or computed from
    the arguments (_bound).  Of several loops (merged small kernels: an optimizer's
    biases), only those that move `min_bytes` themselves are chunked: a fork/join
    per small loop costs more than it saves; the others run serially in place."""
    top = [op.operation for op in kernel.entry_block.operations]
    loops = [o for o in top if _marked_loop(o)]
    if len(loops) > 1:
        loops = [o for o in loops if _footprint(kernel, o).large(min_bytes)]
    if not loops:
        return None
    serial = [o for o in top if o not in loops and not _clonable(o) and o.name != "func.return"]
    needed = {user: _needed_outside(kernel, user) for user in [*loops, *serial]}
    users: dict[ir.Operation, int] = {}
    for user, ops in needed.items():
        for op in ops:
            if user in loops and not _clonable(op):
                return None
            if op.name in ALLOCATIONS:
                users[op] = users.get(op, 0) + 1
    for loop in loops:
        if any(users[op] > 1 for op in needed[loop] if op.name in ALLOCATIONS):
            return None
        if any(_written_between(top, op, loop) for op in needed[loop] if op.name == "memref.load"):
            return None
    found = []
    for loop in loops:
        lb, ub, step = (_bound(v) for v in list(loop.operands)[:3])
        if not isinstance(lb, int) or not isinstance(step, int) or ub is None:
            return None
        if isinstance(ub, int) and (ub - lb + step - 1) // step < 2:
            return None
        found.append((loop, [lb, ub, step]))
    return found


def _written_between(top: list[ir.Operation], load: ir.Operation, loop: ir.Operation) -> bool:
    """Might memory change between a load and the loop that reads its value?  Each
    chunk loads again where the loop stood; an op or loop in between may write the
    loaded buffer, or one aliasing it (an output written over its input in place)."""
    between = top[top.index(load) + 1 : top.index(loop)]
    return any(not _clonable(o) for o in between)


def _operation(owner: ir.OpView | ir.Operation | ir.Block) -> ir.Operation | ir.Block:
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _needed_outside(kernel: func.FuncOp, user: ir.Operation) -> set[ir.Operation]:
    """The ops at the top of the kernel's body that `user` reads, directly or through
    each other (constants, views, scalars, buffers and their deallocation)."""
    top = {op.operation for op in kernel.entry_block.operations}
    needed: set[ir.Operation] = set()
    pending = [user, *nested_ops(user)]
    while pending:
        for value in pending.pop().operands:
            owner = _operation(value.owner)
            if not isinstance(owner, ir.Block) and owner in top and owner not in needed:
                needed.add(owner)
                pending.append(owner)
    for op in top:
        if op.name == "memref.dealloc" and _operation(op.operands[0].owner) in needed:
            needed.add(op)
    return needed


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


def _index(value: Bound) -> ir.Value:
    if isinstance(value, ir.Value):
        return value
    return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result


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


# -- several loops, one parallel region --------------------------------------------------

# libgomp's team, as the region's body asks for it (mlirc-cpu-omp-dispatch declares the
# same functions; it keeps these).
TEAM_RUNTIME = {"omp_get_thread_num": [32], "omp_get_num_threads": [32], "GOMP_barrier": []}
# What may stay outside thread 0's serial part: each thread computes its own (no memory
# is read or written, save a buffer's own allocation and release).
PER_THREAD = ("arith.", "affine.apply", "ub.poison", "memref.subview", "memref.expand_shape",
              "memref.collapse_shape", "memref.cast", "memref.reinterpret_cast", "memref.alloca",
              "memref.alloc", "memref.dealloc", "memref.get_global")  # fmt: skip


def _one_region(kernel: func.FuncOp, steps: dict[str, int]) -> None:
    """A kernel that calls several `_parallel` parts runs as one parallel region
    (`kernel_N_region_chunk`, every thread running all of it): each part's loop split
    among the threads, the kernel's serial writes between parts on thread 0, and a
    barrier between one step and the next.  On the GPU host's 16 cores a
    GOMP_parallel fork and join costs 4.3-5.3 us, a barrier 1.6 us (an empty region
    or barrier called in a loop): a row group's rows and then their sums fork once,
    not twice.  Left as it is where it would wait more often than separate parallel
    calls (_barriers), where a serial write's value is read by other than thread 0
    after its step, or where anything besides addresses and buffers would have to
    stay outside thread 0's part."""
    body = [op.operation for op in kernel.entry_block.operations][:-1]
    plan = _steps(body, steps)
    if plan is None or _barriers(plan) + 2 >= 2 * len(steps):
        return
    name = kernel.sym_name.value
    ftype = ir.FunctionType(kernel.attributes["function_type"].value)
    index = ir.IndexType.get()
    region_type = ir.FunctionType.get([*ftype.inputs, index, index], [])
    _declare_team_runtime(kernel)
    with ir.InsertionPoint(kernel), kernel.location:
        region = func.FuncOp(f"{name}_region_chunk", region_type, visibility="private")
        parallel = func.FuncOp(f"{name}_region_parallel", region_type, visibility="private")
    parallel.attributes[PARALLEL_ATTR] = ir.DenseI64ArrayAttr.get([1])
    block = region.add_entry_block()
    with ir.InsertionPoint(block), kernel.location:
        thread, threads = (_team_index(f) for f in ("omp_get_thread_num", "omp_get_num_threads"))
        end = func.ReturnOp([])
    for op in body:
        op.move_before(end)
    for old, new in zip(kernel.entry_block.arguments, block.arguments, strict=False):
        old.replace_all_uses_with(new)
    ends = []
    for step in plan:
        if step.kind == "part":
            ends.append(_share(step.ops[0], steps, thread, threads))
        elif step.kind == "serial":
            ends.append(_on_thread_zero(step, thread))
    for after in ends[:-1]:  # the region's end joins the threads after the last step
        with ir.InsertionPoint(end), kernel.location:
            barrier = func.CallOp([], ir.FlatSymbolRefAttr.get("GOMP_barrier"), [])
        barrier.operation.move_after(after)
    with ir.InsertionPoint(kernel.entry_block.operations[0]), kernel.location:
        func.CallOp(
            [],
            ir.FlatSymbolRefAttr.get(f"{name}_region_parallel"),
            [*kernel.entry_block.arguments, _index(0), _index(1)],
        )
    module_body = kernel.operation.parent.regions[0].blocks[0]
    for op in list(module_body.operations):
        if isinstance(op, func.FuncOp) and op.sym_name.value in steps:
            erase_op(op.operation)


@dataclass
class _Step:
    """One step of a region: a part's call, or the ops between parts.  Of a serial
    step (one that writes memory), every thread runs `outside` (addresses, buffers
    and their release), thread 0 alone the rest; `carried` are values of thread 0's
    ops that later serial steps read (its `if` yields them)."""

    kind: str  # "part", "serial" or "per_thread"
    ops: list[ir.Operation]
    outside: set[int] = field(default_factory=set)  # positions in `ops` (an op's hash changes as it moves)
    carried: list[ir.Value] = field(default_factory=list)


def _steps(body: list[ir.Operation], steps: dict[str, int]) -> list[_Step] | None:
    """The kernel's ops as steps in order, or None where a serial step's value is
    read by anything but a later serial step's thread-0 ops, or where something
    that writes memory would have to run on every thread."""
    plan: list[_Step] = []
    segment: list[ir.Operation] = []
    for op in [*body, None]:
        if op is not None and not (op.name == "func.call" and op.attributes["callee"].value in steps):
            segment.append(op)
            continue
        if segment:
            serial = any(not o.name.startswith(PER_THREAD) for o in segment)
            plan.append(_Step("serial" if serial else "per_thread", segment))
            if serial and not _split_serial(plan[-1]):
                return None
            segment = []
        if op is not None:
            plan.append(_Step("part", [op]))
    thread_zero = {o for step in plan if step.kind == "serial" for i, o in enumerate(step.ops) if i not in step.outside}
    for step in plan:
        for value in step.carried:
            if any(_top_level(u.owner) not in thread_zero for u in value.uses):
                return None
    return plan


def _barriers(plan: list[_Step]) -> int:
    """Barriers the region would wait at: one between each two steps that touch
    memory.  Forking a team and joining it synchronizes twice, so the region is
    worth it where it has fewer of these than twice its parts: where some parts
    follow each other with no serial step between them.  A serial step between two
    parts costs a barrier on each side (thread 0 reads what every thread wrote, then
    every thread reads what it wrote); measured on 16 cores, a batch norm merged into
    one region of three parts and three serial steps (five barriers) ran slower than
    three forks (ResNet training step 29.98 against 27.54 ms, one interleaved run)."""
    touching = [step for step in plan if step.kind != "per_thread"]
    return max(0, len(touching) - 1)


def _split_serial(step: _Step) -> bool:
    """Fill in a serial step's `outside` and `carried`; False where an op every
    thread must run (one a later step reads, or one that feeds it) writes memory,
    or a carried value is not a scalar."""
    ops = set(step.ops)
    later = [r for o in step.ops for r in o.results if _read_after(r, ops)]
    read_later = {_operation(r.owner) for r in later}
    outside = {o for o in read_later if o.name.startswith(PER_THREAD)}
    pending = list(outside)
    while pending:
        for value in pending.pop().operands:
            owner = _operation(value.owner)
            if owner in ops and owner not in outside:
                if not owner.name.startswith(PER_THREAD):
                    return False
                outside.add(owner)
                pending.append(owner)
    released = [o for o in step.ops if o.name == "memref.dealloc"]
    outside |= {o for o in released if _operation(o.operands[0].owner) not in ops - outside}
    step.outside = {i for i, o in enumerate(step.ops) if o in outside}
    step.carried = [r for r in later if _operation(r.owner) not in outside]
    return all(isinstance(v.type, (ir.IntegerType, ir.IndexType, ir.FloatType)) for v in step.carried)


def _read_after(value: ir.Value, ops: set[ir.Operation]) -> bool:
    return any(_top_level(u.owner) not in ops for u in value.uses)


def _top_level(owner: ir.OpView | ir.Operation) -> ir.Operation:
    """The op at the top of the function's body that holds `owner` (or is it)."""
    op = _operation(owner)
    while op.parent is not None and op.parent.name != "func.func":
        op = op.parent
    return op


def _on_thread_zero(step: _Step, thread: ir.Value) -> ir.Operation:
    """The serial step's writes inside `if thread == 0`, yielding its carried values
    (a zero on the other threads, which never read them); what every thread needs of
    it before (addresses, buffers) and after (their release) around it.  Returns the
    step's last op."""
    first = step.ops[0]
    types = [v.type for v in step.carried]
    with ir.InsertionPoint(first), first.location:
        branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, thread, _index(0)), types, has_else=bool(types))
    with ir.InsertionPoint(branch.then_block), first.location:
        done = scf.YieldOp(step.carried)
    if types:
        with ir.InsertionPoint(branch.else_block), first.location:
            scf.YieldOp([_zero(t) for t in types])
    last = branch.operation
    for i, op in enumerate(step.ops):
        if i not in step.outside:
            op.move_before(done)
        elif op.name == "memref.dealloc":
            op.move_after(last)
            last = op
        else:
            op.move_before(branch.operation)
    for value, result in zip(step.carried, branch.results, strict=True):
        for use in list(value.uses):
            if _top_level(use.owner) != branch.operation:
                use.owner.operands[use.operand_number] = result
    return last


def _zero(t: ir.Type) -> ir.Value:
    if isinstance(t, ir.FloatType):
        return arith.ConstantOp(t, ir.FloatAttr.get(t, 0.0)).result
    return arith.ConstantOp(t, ir.IntegerAttr.get(t, 0)).result


def _share(call: ir.Operation, steps: dict[str, int], thread: ir.Value, threads: ir.Value) -> ir.Operation:
    """The part's call over [lb, ub) becomes this thread's chunk of it, split as
    mlirc-cpu-omp-dispatch's workers split a loop's trips."""
    symbol = call.attributes["callee"].value
    step = steps[symbol]
    *args, lb, ub = call.operands
    with ir.InsertionPoint(call), call.location:
        trips = arith.ceildivsi(arith.subi(ub, lb), _index(step))
        first = arith.divsi(arith.muli(trips, thread), threads)
        last = arith.divsi(arith.muli(trips, arith.addi(thread, _index(1))), threads)
        lo = arith.addi(lb, arith.muli(first, _index(step)))
        hi = arith.minsi(arith.addi(lb, arith.muli(last, _index(step))), ub)
        chunk = symbol[: -len("_parallel")] + "_chunk"
        share = func.CallOp([], ir.FlatSymbolRefAttr.get(chunk), [*args, lo, hi])
    erase_op(call)
    return share.operation


def _team_index(runtime: str) -> ir.Value:
    number = func.CallOp([ir.IntegerType.get_signless(32)], ir.FlatSymbolRefAttr.get(runtime), []).result
    return arith.index_cast(ir.IndexType.get(), number)


def _declare_team_runtime(kernel: func.FuncOp) -> None:
    module_body = kernel.operation.parent.regions[0].blocks[0]
    declared = {op.sym_name.value for op in module_body.operations if isinstance(op, func.FuncOp)}
    for name, results in TEAM_RUNTIME.items():
        if name not in declared:
            with ir.InsertionPoint(kernel), kernel.location:
                ftype = ir.FunctionType.get([], [ir.IntegerType.get_signless(w) for w in results])
                func.FuncOp(name, ftype, visibility="private")


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
