"""Small IR helpers the passes share: walking nested ops, remapping operands, and
inlining a group of kernel calls into one kernel."""

from __future__ import annotations

from collections.abc import Iterator

from mlir import ir, passmanager
from mlir.dialects import func

from mlirc.dialects.attributes import DEFERRED_ATTR, ENTRY_ATTR, KERNEL_ATTR
from mlirc.errors import StaticSizesNeeded


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op that makes `value`; None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def erase_op(op: ir.Operation | ir.OpView) -> None:
    """`op.erase()`, refused while a result of `op` is still read.  MLIR ends the process
    on erasing an op in use ("operation destroyed but still has uses"); raised here, a
    pass's bug fails its pass instead (a diagnostic, and the region runs eagerly)."""
    operation = op.operation
    for index, result in enumerate(operation.results):
        readers = [use.owner.name for use in result.uses]
        if readers:
            raise RuntimeError(f"erasing {operation.name} while its result #{index} is read by {', '.join(readers)}")
    operation.erase()


def constant_index(value: ir.Value) -> int | None:
    """The value of an integer `arith.constant`, else None."""
    owner = defining_op(value)
    if owner is None or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def entry_block_argument(value: ir.Value) -> int | None:
    """The argument number of `value` where it is an argument of a function (its
    entry block's: another block's arguments are not the function's)."""
    if not isinstance(value, ir.BlockArgument):
        return None
    block = ir.BlockArgument(value).owner
    owner = block.owner
    if not isinstance(owner, func.FuncOp) or block != owner.entry_block:
        return None
    return ir.BlockArgument(value).arg_number


def nested_ops(op: ir.Operation) -> Iterator[ir.Operation]:
    """Every op inside `op`'s regions, outer before inner, in program order."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from nested_ops(inner.operation)


def has_symbolic_sizes(op: ir.Operation) -> bool:
    """Does any tensor `op` takes or makes have a `?` dim?"""
    values = [*op.operands, *op.results]
    return any(
        isinstance(v.type, ir.RankedTensorType) and not ir.RankedTensorType(v.type).has_static_shape for v in values
    )


def defer(op: ir.Operation, pass_name: str) -> None:
    """Leave mlirc op `op` for when its sizes are bound (frontend/compile.py
    SymbolicRegion runs the stage again then): mlirc-lower-to-linalg keeps it while it
    is marked, and `pass_name` takes its mark off (`resume_deferred`) once it is
    static.  An op on booleans cannot wait (the lowering gives booleans their i8
    storage type around it): its sizes are bound before the stage instead."""
    values = [*op.operands, *op.results]
    if any(
        isinstance(v.type, ir.RankedTensorType)
        and ir.RankedTensorType(v.type).element_type == ir.IntegerType.get_signless(1)
        for v in values
    ):
        raise StaticSizesNeeded(pass_name, f"{op.name} on booleans of symbolic shape")
    if DEFERRED_ATTR not in op.attributes:  # the first pass to defer it takes the mark off
        op.attributes[DEFERRED_ATTR] = ir.StringAttr.get(pass_name)


def is_deferred(op: ir.Operation) -> bool:
    return DEFERRED_ATTR in op.attributes


def _body_ops(module: ir.Operation) -> Iterator[ir.Operation]:
    """The ops of the module's functions' bodies: where mlirc ops, and so deferral
    marks, lie (never inside other ops)."""
    for f in module.regions[0].blocks[0].operations:
        if isinstance(f, func.FuncOp) and not f.is_external:
            yield from (o.operation for o in f.entry_block.operations)


def has_deferred(module: ir.Operation) -> bool:
    """Does an mlirc op wait for static sizes?"""
    return any(is_deferred(op) for op in _body_ops(module))


def resume_deferred(module: ir.Operation, pass_name: str) -> None:
    """Take `pass_name`'s marks off the ops that are static now (the stage's second
    run, on bound sizes): the pass then decides on them as on any other op."""
    for op in list(_body_ops(module)):
        mark = op.attributes[DEFERRED_ATTR] if DEFERRED_ATTR in op.attributes else None
        if mark is not None and ir.StringAttr(mark).value == pass_name and not has_symbolic_sizes(op):
            del op.attributes[DEFERRED_ATTR]


def remap_operands(op: ir.Operation, mapping: dict) -> None:
    """Point `op` and the ops nested in it at mapping[v] wherever they use a key v."""
    for target in [op, *nested_ops(op)]:
        for i, v in enumerate(target.operands):
            if v in mapping:
                target.operands[i] = mapping[v]


def functions(top: ir.Block) -> dict[str, func.FuncOp]:
    return {op.sym_name.value: op for op in top.operations if isinstance(op, func.FuncOp)}


def entry_functions(top: ir.Block) -> list[func.FuncOp]:
    """The graph's host-side functions (the ones marked `mlirc.entry`)."""
    return [op for op in top.operations if isinstance(op, func.FuncOp) and ENTRY_ATTR in op.attributes]


def callee(call: ir.Operation) -> str:
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def fuse_calls(
    group: list[ir.Operation], kernels: dict[str, func.FuncOp], name: str, kept: set[ir.Value] = frozenset()
) -> func.FuncOp:
    """Inline the kernels of `group` (calls in program order, the first a call) into
    one kernel `name`, called where the last member was.  Its arguments are the values
    the group reads from outside; its results, the members' results that someone
    outside reads, and those in `kept` (buffers the caller provides, not the kernel's
    own temporaries).  A member that is not a call (a reshape) is cloned into the body."""
    members = set(group)
    produced = {r for m in group for r in m.results}
    inputs = list(dict.fromkeys(v for m in group for v in m.operands if v not in produced))
    outputs = [
        r for m in group for r in m.results if r in kept or any(u.owner.operation not in members for u in r.uses)
    ]
    anchor = kernels[callee(group[0])]
    with ir.InsertionPoint(anchor), anchor.location:
        fused = func.FuncOp(name, ([v.type for v in inputs], [v.type for v in outputs]))
    fused.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    block = fused.add_entry_block()
    value_of = dict(zip(inputs, block.arguments, strict=True))
    for call in group:
        if call.name != "func.call":
            clone = call.clone(ir.InsertionPoint(block))
            remap_operands(clone, value_of)
            value_of.update(zip(call.results, clone.results, strict=True))
            continue
        kernel = kernels[callee(call)]
        mapping = {arg: value_of[v] for arg, v in zip(kernel.entry_block.arguments, call.operands, strict=True)}
        for op in kernel.entry_block.operations:
            op = op.operation
            if op.name == "func.return":
                value_of.update(zip(call.results, [mapping[v] for v in op.operands], strict=True))
                continue
            clone = op.clone(ir.InsertionPoint(block))
            remap_operands(clone, mapping)
            mapping.update(zip(op.results, clone.results, strict=True))
    with ir.InsertionPoint(block), anchor.location:
        func.ReturnOp([value_of[v] for v in outputs])
    last = group[-1]
    with ir.InsertionPoint(last), last.location:
        call = func.CallOp([v.type for v in outputs], ir.FlatSymbolRefAttr.get(name), inputs)
    for old, new in zip(outputs, call.results, strict=True):
        old.replace_all_uses_with(new)
    for member in reversed(group):
        erase_op(member)
    return fused


def declaration_of(kernel: func.FuncOp) -> func.FuncOp:
    """A private declaration of `kernel` with its attributes, placed before it (the
    caller adds what it lowered the body to, then erases the kernel)."""
    with ir.InsertionPoint(kernel):
        decl = func.FuncOp(kernel.sym_name.value, kernel.type, visibility="private")
    for attr in kernel.attributes:
        if attr not in ("sym_name", "function_type", "sym_visibility"):
            decl.attributes[attr] = kernel.attributes[attr]
    return decl


def erase_uncalled_kernels(top: ir.Block, kernels: dict[str, func.FuncOp]) -> None:
    """Drop the kernels no function calls any more (fusion inlined them)."""
    called = set()
    for op in top.operations:
        if isinstance(op, func.FuncOp) and len(op.regions[0].blocks):
            for inner in op.entry_block.operations:
                if inner.operation.name == "func.call":
                    called.add(callee(inner.operation))
    for name, kernel in kernels.items():
        if name not in called and KERNEL_ATTR in kernel.attributes:
            erase_op(kernel)


def run_transform(module: ir.Operation, lines: list[str]) -> None:
    """Run transform-dialect `lines` (the body of a named sequence whose root handle
    is `%root`) on `module` through the transform interpreter."""
    script = "\n".join(
        [
            "module attributes {transform.with_named_sequence} {",
            "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {",
            *(f"    {line}" for line in lines),
            "    transform.yield",
            "  }",
            "}",
        ]
    )
    body = module.regions[0].blocks[0]
    with module.context, ir.Location.unknown():
        transform_module = ir.Module.parse(script).operation.clone(ir.InsertionPoint(body))
    try:
        passmanager.PassManager.parse("builtin.module(transform-interpreter)").run(module)
    finally:
        erase_op(transform_module)


def clone_body(
    op: ir.Operation, block: ir.Block, args: list[ir.Value], stop: ir.Operation | None = None
) -> list[ir.Value]:
    """`op`'s (a linalg op's) body cloned at the end of `block`, its first block
    arguments mapped to `args`; returns the values it yields or, with `stop`, the
    operands of that op (which is not cloned, nor anything after it)."""
    source = op.regions[0].blocks[0]
    mapping = dict(zip(list(source.arguments)[: len(args)], args, strict=True))
    with ir.InsertionPoint(block):
        for inner in source.operations:
            inner = inner.operation
            if (stop is not None and inner == stop) or inner.name == "linalg.yield":
                return [mapping.get(v, v) for v in inner.operands]
            clone = inner.clone()
            remap_operands(clone, mapping)
            for old, new in zip(inner.results, clone.results, strict=True):
                mapping[old] = new
    return []
