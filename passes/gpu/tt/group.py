"""The Triton lowering of a kernel group (mlirc-group-kernels), for mlirc-gpu-lower-to-tt.

The members are lowered first, each to its own tt.func and grid.  The group's
tt.func takes the group's buffers, and its 1-d grid is the members' grids laid end
to end: program `pid` in [start_i, start_i + programs_i) runs member i's body
under an `scf.if`, with that member's program ids recovered from `pid - start_i`
(x fastest, as CUDA numbers a grid's blocks).  Members read and write their own
buffers (the group joins only independent calls), so running them at once is what
running them in turn did.  Its warps are the most any member asked for; a member's
tiles stay as planned, so more warps only spread them thinner.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import tt
from mlirc.dialects.attributes import GRID_ATTR, SIZE_ARGS_ATTR, STAGES_ATTR, TTIR_ATTR, WARPS_ATTR
from mlirc.passes.base.ir_utils import callee, declaration_of, erase_op, nested_ops, remap_operands
from mlirc.passes.gpu.tt.tile_access import _fail

CMPI_SLT, CMPI_SGE = 2, 5
I32_PROGRAMS = 2**31 - 1  # a grid's x extent


def _member_function(module_block: ir.Block) -> ir.Operation:
    return next(op.operation for op in module_block.operations if op.operation.name == "tt.func")


def _i32(value: int) -> ir.Value:
    return tt.scalar_constant(value, ir.IntegerType.get_signless(32))


def _arith(name: str, a: ir.Value, b: ir.Value, attrs: dict | None = None) -> ir.Value:
    result = ir.IntegerType.get_signless(1) if name == "arith.cmpi" else a.type
    return tt.one(name, [a, b], result, attrs)


def _in_range(pid: ir.Value, start: int, end: int) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    below = _arith("arith.cmpi", pid, _i32(end), {"predicate": ir.IntegerAttr.get(i64, CMPI_SLT)})
    if start == 0:
        return below
    above = _arith("arith.cmpi", pid, _i32(start), {"predicate": ir.IntegerAttr.get(i64, CMPI_SGE)})
    return _arith("arith.andi", above, below)


def _program_ids(local: ir.Value, grid: list[int]) -> list[ir.Value]:
    """The member's (x, y, z) program ids of its `local`-th program."""
    ids, stride = [], 1
    for axis, extent in enumerate(grid):
        if extent == 1:
            ids.append(_i32(0))
            continue
        index = local if stride == 1 else _arith("arith.divsi", local, _i32(stride))
        if math.prod(grid[axis + 1 :]) > 1:
            index = _arith("arith.remsi", index, _i32(extent))
        ids.append(index)
        stride *= extent
    return ids


def _inline_member(member: ir.Operation, arguments: list[ir.Value], ids: list[ir.Value], block: ir.Block) -> None:
    """Clone `member`'s body (less its tt.return) into `block`, its arguments and
    program ids replaced."""
    body = member.regions[0].blocks[0]
    mapping = dict(zip(body.arguments, arguments, strict=True))
    cloned = []
    for op in body.operations:
        op = op.operation
        if op.name == "tt.return":
            continue
        clone = op.clone(ir.InsertionPoint(block))
        remap_operands(clone, mapping)
        mapping.update(zip(op.results, clone.results, strict=True))
        cloned.append(clone)
    for op in [inner for top in cloned for inner in [top, *nested_ops(top)]]:
        if op.name == "tt.get_program_id":
            op.results[0].replace_all_uses_with(ids[ir.IntegerAttr(op.attributes["axis"]).value])
            erase_op(op)


def _ttir_of(top: ir.Block, kernel: func.FuncOp) -> ir.Operation:
    """`kernel`'s nested TTIR module."""
    wanted = ir.StringAttr(kernel.attributes[TTIR_ATTR]).value
    for op in top.operations:
        op = op.operation
        if op.name == "builtin.module" and "sym_name" in op.attributes:
            if ir.StringAttr(op.attributes["sym_name"]).value == wanted:
                return op
    _fail(kernel.sym_name.value, f"no TTIR module @{wanted}")
    raise AssertionError  # unreachable: _fail raises


def _members(group: func.FuncOp, top: ir.Block) -> list[func.FuncOp]:
    declarations = {op.sym_name.value: op for op in top.operations if isinstance(op, func.FuncOp)}
    calls = [op.operation for op in group.entry_block.operations][:-1]
    members = [declarations[callee(c)] for c in calls]
    for member in members:
        attrs = member.attributes
        if TTIR_ATTR not in attrs or SIZE_ARGS_ATTR in attrs or STAGES_ATTR in attrs:
            _fail(group.sym_name.value, f"member @{member.sym_name.value} is not a lowered kernel of static sizes")
    return members


def lower_group(group: func.FuncOp, top: ir.Block) -> None:
    """Replace `group` (a body of calls to lowered members) by the declaration of one
    tt.func running them all; drop the members no one else calls."""
    name = group.sym_name.value
    ops = [op.operation for op in group.entry_block.operations]
    calls, returned = ops[:-1], list(ops[-1].operands)
    members = _members(group, top)
    grids = [list(ir.DenseI64ArrayAttr(m.attributes[GRID_ATTR])) for m in members]
    total = sum(math.prod(g) for g in grids)
    if total > I32_PROGRAMS:
        _fail(name, f"{total} programs exceed a grid's x extent")
    values = [*group.entry_block.arguments, *returned]
    position = {v: i for i, v in reversed(list(enumerate(values)))}
    with ir.InsertionPoint(tt.nested_module(top, f"{name}_ttir")):
        _, entry = tt.func(name, [tt.pointer_to(v) for v in values], aligned=True)
    with ir.InsertionPoint(entry):
        pid = tt.program_id(0)
        start = 0
        for call, member, grid in zip(calls, members, grids, strict=True):
            programs = math.prod(grid)
            if not programs:  # an empty tensor's member: nothing to run
                continue
            branch = tt.create("scf.if", [_in_range(pid, start, start + programs)], [], regions=2)
            then = branch.regions[0].blocks.append()
            with ir.InsertionPoint(then):
                ids = _program_ids(pid if start == 0 else _arith("arith.subi", pid, _i32(start)), grid)
            arguments = [entry.arguments[position[v]] for v in [*call.operands, *call.results]]
            _inline_member(_member_function(_ttir_of(top, member).regions[0].blocks[0]), arguments, ids, then)
            with ir.InsertionPoint(then):
                tt.create("scf.yield", [], [])
            start += programs
        tt.ret()
    warps = max(ir.IntegerAttr(m.attributes[WARPS_ATTR]).value for m in members)
    _declare_group(group, total, warps)
    still_called = _called(top)
    for member in {m.sym_name.value: m for m in members}.values():  # a kernel the group calls twice: once
        if member.sym_name.value not in still_called:
            erase_op(_ttir_of(top, member))
            erase_op(member)


def _called(top: ir.Block) -> set[str]:
    return {
        callee(inner.operation)
        for op in top.operations
        if isinstance(op, func.FuncOp) and len(op.regions[0].blocks)
        for inner in op.entry_block.operations
        if inner.operation.name == "func.call"
    }


def _declare_group(group: func.FuncOp, programs: int, warps: int) -> None:
    decl = declaration_of(group)
    decl.attributes[TTIR_ATTR] = ir.StringAttr.get(f"{group.sym_name.value}_ttir")
    decl.attributes[GRID_ATTR] = ir.DenseI64ArrayAttr.get([programs, 1, 1])
    decl.attributes[WARPS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), warps)
    erase_op(group)
