"""mlirc-form-kernels: outline each fused linalg op into its own func ("kernel").

A kernel is one root linalg op plus the cheap producers it needs (empty/fill
inits, constants, reshapes and slices of its inputs), cloned in.  The entry func
becomes a list of `func.call`s on tensors plus the pure view ops that produce its
results, which the host wrapper runs as torch views.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func, linalg

from mlirc.dialects.attributes import IN_PLACE_ATTR, KERNEL_ATTR, SAVED_RESULTS_ATTR
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import entry_functions, erase_op, remap_operands
from mlirc.passes.base.registry import register_pass

CLONEABLE = frozenset(
    {
        "tensor.empty",
        "arith.constant",
        "linalg.fill",
        "tensor.collapse_shape",
        "tensor.expand_shape",
        "tensor.extract_slice",
        # A symbolic size read off a tensor: the kernel reads it off its own operand.
        "tensor.dim",
    }
)
VIEW_OPS = frozenset({"tensor.collapse_shape", "tensor.expand_shape", "tensor.extract_slice"})


# Ops that write their result over their first operand's buffer (a scatter's rows):
# the kernel (IN_PLACE_ATTR) takes that buffer as its result too, already holding
# the operand (the host wrapper passes the operand's own buffer, or a copy).
IN_PLACE_ROOTS = frozenset({"mlirc.scatter_add"})


def is_root(op: ir.Operation) -> bool:
    """A linalg op that becomes a kernel of its own (not an init or a body op)."""
    if op.name in IN_PLACE_ROOTS:
        return True
    return op.name.startswith("linalg.") and op.name not in ("linalg.fill", "linalg.yield", "linalg.index")


def _own_buffers(root: ir.Operation) -> None:
    """An in-place root's operands as kernels' results or arguments, reshaped at most
    (both backends read those as plain row-major memory), and its destination one
    that nothing else reads: anything else (a fill, a slice, a shared value) is
    copied first, by a kernel of its own."""
    for i, value in enumerate(root.operands):
        source = value
        while (op := _defining_op(source)) is not None and op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
            source = op.operands[0]
        op = _defining_op(source)
        plain = op is None or is_root(op) or op.name == "func.call"
        if i == 0:
            plain = op is not None and source == value and plain and len(list(value.uses)) == 1
        if not plain:
            with ir.InsertionPoint(root), root.location:
                root.operands[i] = _copy_root(value)


def _defining_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def values_used(op: ir.Operation) -> list[ir.Value]:
    """Operands of `op` and values its regions capture from above."""
    used = list(op.operands)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                for v in values_used(inner.operation):
                    if not _defined_inside(v, op):
                        used.append(v)
    return used


def _defined_inside(value: ir.Value, op: ir.Operation) -> bool:
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    parent = block.owner
    while parent is not None:
        if parent.operation == op:
            return True
        parent = parent.operation.parent
    return False


def _copy_root(value: ir.Value) -> ir.Value:
    """A copy, so that returned inputs/duplicates/views get their own buffer.

    linalg.copy, not an identity generic: canonicalization erases identity generics,
    which would leave a kernel returning a (strided) view of its argument.
    """
    init = le.empty(le.dims_of(value), ir.RankedTensorType(value.type).element_type)
    return linalg.copy(value, outs=[init])


def _materialize_returns(fn: func.FuncOp) -> None:
    """Saved-for-backward results (SAVED_RESULTS_ATTR on) keep arguments and duplicates
    uncopied: nothing but the backward reads them, and it writes none of its inputs."""
    ret = fn.entry_block.operations[len(fn.entry_block.operations) - 1]
    saved_from = (
        ir.IntegerAttr(fn.attributes[SAVED_RESULTS_ATTR]).value if SAVED_RESULTS_ATTR in fn.attributes else None
    )
    seen: set = set()
    new_operands = []
    for position, value in enumerate(ret.operands):
        source = value
        op = _defining_op(source)
        while op is not None and op.name in VIEW_OPS:
            source = op.operands[0]
            op = _defining_op(source)
        fresh = op is not None and (is_root(op) or op.name == "func.call")  # a kernel's own buffer
        if saved_from is not None and position >= saved_from:
            needs_copy = not fresh and op is not None  # an argument (op None) is shared
        else:
            needs_copy = not fresh or value in seen
        seen.add(value)
        if needs_copy:
            with ir.InsertionPoint(ret), ret.location:
                value = _copy_root(value)
        new_operands.append(value)
    for i, v in enumerate(new_operands):
        ret.operands[i] = v


class Outliner:
    """Outlines root linalg ops of `entry`, each with its cloneable producers, into
    kernel funcs named `<prefix>_<n>`."""

    def __init__(self, entry: func.FuncOp, prefix: str = "kernel") -> None:
        self.entry = entry
        self.prefix = prefix
        self.count = 0
        # names the module has already (a pass run twice, through mlirc-opt)
        module_body = entry.operation.parent.regions[0].blocks[0]
        self.taken = {op.sym_name.value for op in module_body.operations if isinstance(op, func.FuncOp)}

    def _name(self) -> str:
        while f"{self.prefix}_{self.count}" in self.taken:
            self.count += 1
        self.count += 1
        return f"{self.prefix}_{self.count - 1}"

    def outline(self, root: ir.Operation) -> None:
        members = self._collect(root)
        member_set = set(members)
        inputs: list[ir.Value] = []
        for op in members:
            for v in values_used(op):
                d = _defining_op(v)
                if (d is None or d not in member_set) and v not in inputs:
                    inputs.append(v)
        # 0-size inputs hold no data (and bare-pointer memrefs cannot be 0-size):
        # the kernel makes an empty tensor of its own instead of taking them.
        empty_inputs = [v for v in inputs if _is_empty(v)]
        inputs = [v for v in inputs if not _is_empty(v)]
        if root.name in IN_PLACE_ROOTS:  # the destination first: the host wrapper's contract
            inputs.remove(root.operands[0])
            inputs.insert(0, root.operands[0])
        results = list(root.results)
        name = self._name()
        with ir.InsertionPoint(self.entry), root.location:
            kernel = func.FuncOp(name, ([v.type for v in inputs], [r.type for r in results]))
        kernel.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
        if root.name in IN_PLACE_ROOTS:
            kernel.attributes[IN_PLACE_ATTR] = ir.UnitAttr.get()
        block = kernel.add_entry_block()
        clones = self._clone_into(block, members, inputs, empty_inputs)
        with ir.InsertionPoint(block), root.location:
            func.ReturnOp([clones[r] for r in results])
        with ir.InsertionPoint(root), root.location:
            call = func.CallOp([r.type for r in results], ir.FlatSymbolRefAttr.get(name), inputs)
        for old, new in zip(results, call.results, strict=False):
            old.replace_all_uses_with(new)

    def _collect(self, root: ir.Operation) -> list[ir.Operation]:
        """The root and its cloneable producers, in program order (an in-place root's
        destination stays an argument)."""
        found: list[ir.Operation] = []
        stack = [root]
        while stack:
            op = stack.pop()
            if op in found:
                continue
            found.append(op)
            for v in values_used(op)[1 if op.name in IN_PLACE_ROOTS else 0 :]:
                d = _defining_op(v)
                if d is not None and d.name in CLONEABLE and not _defined_inside(v, op):
                    stack.append(d)
        order = {op: i for i, op in enumerate(o.operation for o in self.entry.entry_block.operations)}
        return sorted(found, key=lambda o: order[o])

    def _clone_into(
        self, block: ir.Block, members: list[ir.Operation], inputs: list[ir.Value], empty_inputs: list[ir.Value]
    ) -> dict:
        clones: dict = {}
        for arg, v in zip(block.arguments, inputs, strict=False):
            clones[v] = arg
        with ir.InsertionPoint(block):
            for v in empty_inputs:
                t = ir.RankedTensorType(v.type)
                clones[v] = le.empty(t.shape, t.element_type)
            for op in members:
                new = op.clone()
                remap_operands(new, clones)
                for old_r, new_r in zip(op.results, new.results, strict=False):
                    clones[old_r] = new_r
        return clones


@register_pass("mlirc-form-kernels", "Outline each fused linalg op (with its inits and views) into a kernel func")
def form_kernels(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    for entry in entry_functions(body):
        _materialize_returns(entry)
        outliner = Outliner(entry)
        for op in list(entry.entry_block.operations):
            if op.operation.name in IN_PLACE_ROOTS:
                _own_buffers(op.operation)
        roots = [op.operation for op in entry.entry_block.operations if is_root(op.operation)]
        for root in roots:
            if all(_is_empty(r) for r in root.results):
                _replace_by_empty(root)  # nothing to compute: the host allocates the result
            else:
                outliner.outline(root)
            erase_op(root)
        _erase_dead(entry)


def _returned(op: ir.Operation) -> bool:
    return any(use.owner.operation.name == "func.return" for r in op.results for use in r.uses)


def _is_empty(value: ir.Value) -> bool:
    """A tensor of static shape with no elements.  One with a `?` dim besides its 0
    stays an operand: its sizes come from the call (the kernel reads no data of it)."""
    t = value.type
    return isinstance(t, ir.RankedTensorType) and t.has_static_shape and 0 in ir.RankedTensorType(t).shape


def _replace_by_empty(root: ir.Operation) -> None:
    with ir.InsertionPoint(root), root.location:
        for r in root.results:
            t = ir.RankedTensorType(r.type)
            r.replace_all_uses_with(le.empty(t.shape, t.element_type))


def _erase_dead(fn: func.FuncOp) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(fn.entry_block.operations)):
            o = op.operation
            # an op without results is there for its effect (a size assertion, the return)
            if not o.results or o.name == "func.call" or (o.name == "tensor.empty" and _returned(o)):
                continue
            if all(len(list(r.uses)) == 0 for r in o.results):
                erase_op(o)
                changed = True
