"""mlirc-bind-sizes: a module of symbolic sizes (`?` dims, `index` arguments) made
static at given sizes.

A graph with symbolic sizes is imported and lowered once; each concrete size it is
called at binds the sizes here and goes on through the static stages.  `sizes`
lists, in argument order, the value of each `index` argument of the entry and of
each `?` dim of its tensor arguments.  The `index` arguments become constants and
leave the signature; the tensor arguments take their static types, and upstream
canonicalization carries the static sizes through every op (a `tensor.empty` of
constant sizes, a `linalg.generic` of static operands).  Calls pass them on: a
function called with more static operands than its signature has takes them (a
copy of it where it has other callers), and its results become as static as what
it returns.  A module that is not static afterwards is an error, and so is one
whose size assertions (`cf.assert`, a pass's assumption on its `?` sizes, such as
mlirc-split-reductions' short sums) do not fold away as true.

With `keep-kernel-arguments` every kernel keeps its arguments (an unread size
source included) and each copy of a kernel names the kernel it was copied from
(`mlirc.origin`): the bound module then describes calls of the symbolic module's
own kernels, compiled once for every size (passes/cpu/size_args.py), and only its
entry is run -- by the host wrapper.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir, passmanager
from mlir.dialects import arith, func, tensor

from mlirc.dialects import builders, dims, shapes
from mlirc.dialects.attributes import (
    ARG_LAYOUTS_ATTR,
    ENTRY_ATTR,
    FROZEN_ATTR,
    KERNEL_ATTR,
    LIBRARY_ATTR,
    ORIGIN_ATTR,
    PREPARED_ATTR,
)
from mlirc.errors import PipelineError, SizeAssumptionFailed, UnsupportedOpError
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-bind-sizes"
# Each round reaches one more level of calls (mlirc's nest at most two); deferred mlirc ops
# in a chain take their types in one sweep (_known_shape), but for what it cannot read.
_MAX_ROUNDS = 64


@dataclass(frozen=True)
class BindSizesOptions:
    sizes: tuple[int, ...] | None = None
    keep_kernel_arguments: bool = False


def _functions(module: ir.Operation) -> dict[str, func.FuncOp]:
    return {op.sym_name.value: op for op in module.regions[0].blocks[0].operations if isinstance(op, func.FuncOp)}


def entry_function(module: ir.Operation) -> func.FuncOp:
    found = [f for f in _functions(module).values() if ENTRY_ATTR in f.attributes]
    if len(found) != 1:
        raise PipelineError(NAME, f"expects one entry function (attribute {ENTRY_ATTR}), found {len(found)}")
    return found[0]


def symbolic_slots(fn: func.FuncOp) -> list[tuple[int, int | None]]:
    """(argument, dim) of each size the entry takes: dim None for an `index` argument."""
    slots: list[tuple[int, int | None]] = []
    for i, arg in enumerate(fn.entry_block.arguments):
        if isinstance(arg.type, ir.IndexType):
            slots.append((i, None))
        elif isinstance(arg.type, ir.RankedTensorType):
            t = ir.RankedTensorType(arg.type)
            slots.extend((i, d) for d in range(t.rank) if t.is_dynamic_dim(d))
    return slots


def _set_signature(fn: func.FuncOp, results: list[ir.Type] | None = None) -> None:
    inputs = [a.type for a in fn.entry_block.arguments]
    if results is None:
        results = list(ir.FunctionType(fn.attributes["function_type"].value).results)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def _take_static_arg(arg: ir.Value, static: ir.Type) -> None:
    """`arg` becomes `static`; its users keep seeing the old type through a cast,
    but for mlirc ops, which take any shape and are retyped after (`_retype_mlirc_ops`)."""
    if all(use.owner.name.startswith("mlirc.") or use.owner.name == "tensor.dim" for use in arg.uses):
        arg.set_type(static)
        return
    old = arg.type
    block = arg.owner
    with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
        cast = tensor.CastOp(old, arg)
    arg.replace_all_uses_except(cast.result, cast.operation)
    arg.set_type(static)


def _bind_entry(fn: func.FuncOp, sizes: tuple[int, ...]) -> None:
    slots = symbolic_slots(fn)
    if len(sizes) != len(slots):
        raise PipelineError(NAME, f"the entry takes {len(slots)} symbolic sizes, {len(sizes)} given")
    values = dict(zip(slots, sizes, strict=True))
    block = fn.entry_block
    if any(v < 0 for v in sizes):
        raise PipelineError(NAME, f"sizes must be >= 0, got {list(sizes)}")
    for i in reversed(range(len(block.arguments))):
        arg = block.arguments[i]
        if (i, None) in values:
            with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
                constant = arith.ConstantOp(ir.IndexType.get(), values[(i, None)])
            arg.replace_all_uses_with(constant.result)
            block.erase_argument(i)
            _drop_arg_attributes(fn, i)
        elif isinstance(arg.type, ir.RankedTensorType) and not ir.RankedTensorType(arg.type).has_static_shape:
            t = ir.RankedTensorType(arg.type)
            shape = [values[(i, d)] if t.is_dynamic_dim(d) else t.shape[d] for d in range(t.rank)]
            _take_static_arg(arg, ir.RankedTensorType.get(shape, t.element_type))
    _set_signature(fn)


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    return ir.IntegerAttr(owner.operation.attributes["value"]).value


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# index arithmetic on sizes (what the importer and the linalg lowering make of them)
_INDEX_OPS: dict[str, Callable[[int, int], int]] = {
    "arith.addi": operator.add,
    "arith.subi": operator.sub,
    "arith.muli": operator.mul,
    "arith.floordivsi": operator.floordiv,
    "arith.divsi": _trunc_div,
    "arith.ceildivsi": lambda a, b: -(-a // b),
    "arith.remsi": lambda a, b: a - _trunc_div(a, b) * b,
    "arith.maxsi": max,
    "arith.minsi": min,
}


def _known_index(value: ir.Value) -> int | None:
    """The value of an `index` size at these sizes, where the ops that compute it
    say (constants, tensor.dim of a tensor whose shape is known, arithmetic)."""
    constant = _constant(value)
    if constant is not None or isinstance(value.owner, ir.Block):
        return constant
    op = value.owner.operation
    if op.name == "tensor.dim":
        dim, shape = _known_index(op.operands[1]), _known_shape(op.operands[0])
        return None if dim is None or shape is None else shape[dim]
    combine = _INDEX_OPS.get(op.name)
    if combine is None:
        return None
    a, b = (_known_index(v) for v in op.operands)
    if a is None or b is None or (b == 0 and ("div" in op.name or "rem" in op.name)):
        return None
    return combine(a, b)


def _known_shape(value: ir.Value) -> list[int] | None:
    """The static shape `value` has at these sizes, read off the ops that make it (a
    cast's source, tensor.empty's sizes, a linalg op's init, reshapes) before
    canonicalization has made its type static, or None.  Through it, an mlirc op left
    deferred after linalg ops whose types are still `?` takes its static type in
    the same sweep, not one canonicalization round per op in a chain."""
    t = ir.RankedTensorType(value.type)
    if t.has_static_shape:
        return list(t.shape)
    if isinstance(value.owner, ir.Block):
        return None
    op = value.owner.operation
    if op.name == "tensor.cast":
        return _known_shape(op.operands[0])
    if op.name.startswith("linalg.") and op.results:  # destination style: a result is its init's shape
        inits = list(op.operands)[len(op.operands) - len(op.results) :]
        return _known_shape(inits[ir.OpResult(value).result_number])
    if op.name == "tensor.empty":
        sizes = iter(op.operands)
        dims = [_known_index(next(sizes)) if t.is_dynamic_dim(d) else t.shape[d] for d in range(t.rank)]
        return None if None in dims else dims  # type: ignore[return-value]
    if op.name == "tensor.expand_shape":
        static = list(ir.DenseI64ArrayAttr(op.attributes["static_output_shape"]))
        sizes = iter(list(op.operands)[1:])
        dims = [_known_index(next(sizes)) if d == ir.ShapedType.get_dynamic_size() else d for d in static]
        return None if None in dims else dims  # type: ignore[return-value]
    if op.name == "tensor.collapse_shape":
        source = _known_shape(op.operands[0])
        if source is None:
            return None
        groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(op.attributes["reassociation"])]
        return [math.prod(source[i] for i in group) for group in groups]
    return None


def _static_operands(op: ir.Operation) -> bool:
    """Give `op` each `?` operand whose shape is known as a cast to its static type."""
    changed = False
    for i, value in enumerate(list(op.operands)):
        if not isinstance(value.type, ir.RankedTensorType) or ir.RankedTensorType(value.type).has_static_shape:
            continue
        shape = _known_shape(value)
        if shape is None:
            continue
        with ir.InsertionPoint(op), op.location:
            cast = tensor.CastOp(ir.RankedTensorType.get(shape, ir.RankedTensorType(value.type).element_type), value)
        op.operands[i] = cast.result
        changed = True
    return changed


def _retype_mlirc_ops(fn: func.FuncOp) -> bool:
    """The mlirc ops' `?` result dims as the static sizes their operands now give
    (dialects/dims.py), in order; a sized op's sizes, constants by now, leave it.
    After the linalg stage the mlirc ops left are those that waited for static sizes
    (passes/base/ir_utils.py defer): they read static values through the casts that
    canonicalization left, and their other users see the old type through a cast.
    An op whose sizes are not known yet (a callee's, before its arguments are
    static) is left for a later round; what is still symbolic at the end is an error.
    Did anything change?"""
    changed = False
    for op in list(fn.entry_block.operations):
        op = op.operation
        if not op.name.startswith("mlirc."):
            continue
        for i, value in enumerate(list(op.operands)):
            source = _static_source(value) if isinstance(value.type, ir.RankedTensorType) else None
            if source is not None:
                op.operands[i] = source
                changed = True
        changed |= _static_operands(op)
        result = ir.RankedTensorType(op.results[0].type)
        if op.name == "mlirc.from_size":
            changed |= _fold_from_size(op)
            continue
        tensors = [v for v in op.operands if not isinstance(v.type, ir.IndexType)]
        if not result.has_static_shape:
            try:
                with ir.InsertionPoint(op), op.location:
                    found = [d if isinstance(d, int) else _constant(d) for d in dims.result_dims(op, tensors)]
            except UnsupportedOpError:  # a rule that needs a static operand (a window's size): next round
                continue
            if any(d is not None and d < 0 for d in found):
                raise PipelineError(NAME, f"{op.name}: result sizes {found} at these sizes")
            if None in found:
                continue
            _set_result_type(op, ir.RankedTensorType.get(found, result.element_type))
            changed = True
        if len(tensors) < len(op.operands):
            _drop_sizes(op, tensors)
            changed = True
    return changed


# Users that take a value of any shape: the op's new type reaches them as is (returns
# and calls see a cast, which the rounds below pass on to signatures and callees).
_SHAPE_AGNOSTIC_USERS = ("tensor.dim",)


def _set_result_type(op: ir.Operation, static: ir.Type) -> None:
    result = op.results[0]
    old = result.type
    result.set_type(static)
    users = [use.owner for use in result.uses]
    if all(u.name.startswith("mlirc.") or u.name in _SHAPE_AGNOSTIC_USERS for u in users):
        return
    with ir.InsertionPoint(op), op.location:
        cast = tensor.CastOp(old, result)
    cast.operation.move_after(op)
    result.replace_all_uses_except(cast.result, cast.operation)
    for use in list(cast.result.uses):  # the mlirc users take the static value
        if use.owner.name.startswith("mlirc.") or use.owner.name in _SHAPE_AGNOSTIC_USERS:
            use.owner.operands[use.operand_number] = result


def _fold_from_size(op: ir.Operation) -> bool:
    """A size made a tensor is a constant at these sizes (once it is known)."""
    value = _constant(op.operands[0])
    if value is None:
        return False
    with ir.InsertionPoint(op), op.location:
        constant = builders.scalar_constant(value, shapes.elem_of(op.results[0]))
    op.results[0].replace_all_uses_with(constant)
    erase_op(op)
    return True


def _drop_sizes(op: ir.Operation, tensors: list[ir.Value]) -> None:
    with ir.InsertionPoint(op), op.location:
        attributes = {name: op.attributes[name] for name in op.attributes}
        new = ir.Operation.create(op.name, results=[op.results[0].type], operands=tensors, attributes=attributes)
    op.results[0].replace_all_uses_with(new.results[0])
    erase_op(op)


def _drop_arg_attributes(fn: func.FuncOp, index: int) -> None:
    """The entry's per-argument layouts (the host wrapper's) lose an erased argument's,
    and the argument positions after it move down one."""
    if ARG_LAYOUTS_ATTR in fn.attributes:
        kept = [a for i, a in enumerate(ir.ArrayAttr(fn.attributes[ARG_LAYOUTS_ATTR])) if i != index]
        fn.attributes[ARG_LAYOUTS_ATTR] = ir.ArrayAttr.get(kept)
    # The frozen arguments, and those a prepare function takes (a module bound after
    # mlirc-hoist-frozen: kernels compiled for every size), move down one.
    for name in (FROZEN_ATTR, PREPARED_ATTR):
        if name in fn.attributes:
            kept = [i - (i > index) for i in ir.DenseI64ArrayAttr(fn.attributes[name]) if i != index]
            fn.attributes[name] = ir.DenseI64ArrayAttr.get(kept)


def _static_source(value: ir.Value) -> ir.Value | None:
    """The more static tensor a `tensor.cast` result was made from, if it is one."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "tensor.cast":
        return None
    source = owner.operation.operands[0]
    return source if _dynamic_dims(source.type) < _dynamic_dims(value.type) else None


def _dynamic_dims(t: ir.Type) -> int:
    ranked = ir.RankedTensorType(t)
    return sum(ranked.is_dynamic_dim(d) for d in range(ranked.rank))


def _specialize_call(
    module: ir.Operation,
    call: ir.Operation,
    functions: dict[str, func.FuncOp],
    counts: dict[str, int],
    keep_arguments: bool = False,
) -> bool:
    """Pass a call's static operands on to its callee, and its constant ones into it
    (a kernel formed on `?` dims takes the sizes the host computed, a reshape's or a
    size made a value: bound, they are constants, as a static graph's kernel holds);
    False where there is nothing to pass."""
    operands = list(call.operands)
    callee = functions[ir.FlatSymbolRefAttr(call.attributes["callee"]).value]
    sources = [_static_source(v) if isinstance(v.type, ir.RankedTensorType) else None for v in operands]
    constants = [
        _constant_op(v) if LIBRARY_ATTR not in callee.attributes and list(arg.uses) else None
        for v, arg in zip(operands, callee.entry_block.arguments, strict=True)
    ]
    if not any(sources) and not any(constants):
        return False
    if counts[callee.sym_name.value] > 1:
        counts[callee.sym_name.value] -= 1
        callee = _copy(module, callee, functions, keep_arguments)
        counts[callee.sym_name.value] = 1
        for inner in _calls_in(callee):  # the copy calls what its original calls
            counts[inner] = counts.get(inner, 0) + 1
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(callee.sym_name.value)
    arguments = list(callee.entry_block.arguments)
    for i, source in enumerate(sources):
        if source is not None:
            _take_static_arg(arguments[i], source.type)
            call.operands[i] = source
    for arg, constant in zip(arguments, constants, strict=True):
        if constant is not None:  # left unread: mlirc-bind-sizes drops it from a kernel
            clone = constant.clone(ir.InsertionPoint.at_block_begin(callee.entry_block))
            arg.replace_all_uses_with(clone.results[0])
    _set_signature(callee)
    return True


def _constant_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return None if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant" else owner.operation


def _calls_in(fn: func.FuncOp) -> list[str]:
    """The callees of `fn`'s calls, one entry per call."""
    if fn.is_external:
        return []
    ops = (op.operation for op in fn.entry_block.operations)
    return [ir.FlatSymbolRefAttr(op.attributes["callee"]).value for op in ops if op.name == "func.call"]


def _calls(module: ir.Operation) -> dict[str, list[ir.Operation]]:
    """Each callee's calls, in every function."""
    calls: dict[str, list[ir.Operation]] = {}
    for fn in _functions(module).values():
        for op in fn.entry_block.operations if not fn.is_external else ():
            if op.operation.name == "func.call":
                calls.setdefault(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, []).append(op.operation)
    return calls


def _copy(module: ir.Operation, fn: func.FuncOp, functions: dict[str, func.FuncOp], origin: bool) -> func.FuncOp:
    """A copy of `fn` for another caller; with `origin`, naming the function it copies
    (keep-kernel-arguments: the caller runs the original, compiled for every size)."""
    name = next(f"{fn.sym_name.value}_{k}" for k in itertools.count(1) if f"{fn.sym_name.value}_{k}" not in functions)
    clone = fn.operation.clone(ir.InsertionPoint(module.regions[0].blocks[0]))
    clone.attributes["sym_name"] = ir.StringAttr.get(name)
    if origin and ORIGIN_ATTR not in clone.attributes:
        clone.attributes[ORIGIN_ATTR] = ir.StringAttr.get(fn.sym_name.value)
    functions[name] = clone.opview
    return clone.opview


def _returned(fn: func.FuncOp) -> list[ir.Value]:
    return list(fn.entry_block.operations[len(fn.entry_block.operations) - 1].operands)


def _static_results(fn: func.FuncOp) -> list[ir.Type] | None:
    """Return what a function's casts to less static types came from; the new result
    types, or None where nothing changed."""
    ret = fn.entry_block.operations[len(fn.entry_block.operations) - 1]
    changed = False
    for i, value in enumerate(list(ret.operands)):
        source = _static_source(value) if isinstance(value.type, ir.RankedTensorType) else None
        if source is not None:
            ret.operands[i] = source
            changed = True
    if not changed:
        return None
    results = [v.type for v in ret.operands]
    _set_signature(fn, results)
    return results


def _retype_calls(calls: list[ir.Operation], results: list[ir.Type]) -> list[ir.Operation]:
    """`calls` (of one function) give its new result types; their users see the old
    ones through casts.  The new calls."""
    rebuilt = []
    for op in calls:
        new = _rebuilt_call(op, results, list(op.operands))
        with ir.InsertionPoint(op), op.location:
            for old, fresh in zip(op.results, new.results, strict=True):
                replacement = fresh if old.type == fresh.type else tensor.CastOp(old.type, fresh).result
                old.replace_all_uses_with(replacement)
        erase_op(op)
        rebuilt.append(new)
    return rebuilt


def _drop_unread_kernel_args(module: ir.Operation) -> bool:
    """A kernel formed on symbolic sizes takes a tensor whose `?` dim it reads (a
    `tensor.dim`) even where it reads no data of it; bound, the size is a constant
    and the argument is dropped, with its operand at every call: the kernel is the
    one a static graph forms.  Library kernels keep theirs (the library's operands).
    True where an argument was dropped."""
    functions = _functions(module)
    dropped = False
    calls = _calls(module)
    for name, fn in functions.items():
        if KERNEL_ATTR not in fn.attributes or LIBRARY_ATTR in fn.attributes or fn.is_external:
            continue
        unread = [i for i, arg in enumerate(fn.entry_block.arguments) if not list(arg.uses)]
        if not unread:
            continue
        for i in reversed(unread):
            fn.entry_block.erase_argument(i)
        _set_signature(fn)
        dropped = True
        for call in calls.get(name, []):
            kept = [v for i, v in enumerate(call.operands) if i not in unread]
            new = _rebuilt_call(call, list(call.results.types), kept)
            for old, fresh in zip(call.results, new.results, strict=True):
                old.replace_all_uses_with(fresh)
            erase_op(call)
    return dropped


def _rebuilt_call(call: ir.Operation, results: list[ir.Type], operands: list[ir.Value]) -> ir.Operation:
    """A new call beside `call`, of its callee and attributes, with these types and operands."""
    callee = ir.FlatSymbolRefAttr(call.attributes["callee"])
    with ir.InsertionPoint(call), call.location:
        new = func.CallOp(results, callee, operands)
    for name in call.attributes:
        if name != "callee":
            new.attributes[name] = call.attributes[name]
    return new.operation


def _dynamic_types(module: ir.Operation) -> list[str]:
    found: list[str] = []

    def walk(op: ir.Operation) -> None:
        for value in [*op.results, *(a for r in op.regions for b in r.blocks for a in b.arguments)]:
            t = value.type
            if isinstance(t, ir.ShapedType) and not ir.ShapedType(t).has_static_shape and op.name not in found:
                found.append(op.name)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    walk(module)
    return found


@register_pass(NAME, "Bind a symbolic module's sizes: its `?` dims and index arguments become static", BindSizesOptions)
def bind_sizes(module: ir.Operation, options: BindSizesOptions) -> None:
    entry = entry_function(module)
    _bind_entry(entry, options.sizes or ())
    # The sizes computed from the arguments fold to constants, then the mlirc ops take
    # static types (ops of later stages, upstream ones, infer theirs when canonicalized).
    passmanager.PassManager.parse("builtin.module(canonicalize)").run(module)
    _retype_mlirc_ops(entry)
    _set_signature(entry, [v.type for v in _returned(entry)])
    for _ in range(_MAX_ROUNDS):
        passmanager.PassManager.parse("builtin.module(canonicalize,cse)").run(module)
        functions = _functions(module)
        changed = False
        for fn in functions.values():  # mlirc ops that waited for static sizes, in any function
            changed |= _retype_mlirc_ops(fn)
        calls = _calls(module)
        counts = {name: len(found) for name, found in calls.items()}
        for fn in list(functions.values()):  # a callee copied for a second caller joins `functions`
            for op in list(fn.entry_block.operations):
                if op.operation.name == "func.call":
                    changed |= _specialize_call(module, op.operation, functions, counts, options.keep_kernel_arguments)
        calls = _calls(module)  # calls may have moved to copies
        for name, fn in list(functions.items()):
            results = _static_results(fn)
            if results is not None:
                changed = True
                if fn is not entry:
                    calls[name] = _retype_calls(calls.get(name, []), results)
        if not changed:
            break
    if not options.keep_kernel_arguments and _drop_unread_kernel_args(
        module
    ):  # the operands' constants and size reads go
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(module)
    left = _dynamic_types(module)
    if left:
        raise PipelineError(NAME, f"sizes still symbolic after binding, in {', '.join(left)}")
    _check_assertions(module, options.sizes or ())


def _check_assertions(module: ir.Operation, sizes: tuple[int, ...]) -> None:
    """Canonicalization erased the assertions that hold at these sizes; any left fails."""
    for fn in _functions(module).values():
        for op in fn.entry_block.operations if not fn.is_external else ():
            if op.operation.name == "cf.assert":
                message = ir.StringAttr(op.operation.attributes["msg"]).value
                raise SizeAssumptionFailed(NAME, f"at sizes {list(sizes)}: {message}")
