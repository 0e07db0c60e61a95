"""One parallel region for a kernel that mlirc-cpu-parallelize split into several
parts: each part's loop shared among the team's threads, the serial writes between
parts on thread 0, a barrier between one step and the next."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, func, scf

from mlirc.dialects.attributes import PARALLEL_ATTR
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.cpu.parallel.loops import _index, _operation

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
