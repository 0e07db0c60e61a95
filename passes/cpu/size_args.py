"""mlirc-cpu-size-args: kernels of run-time sizes take their sizes as arguments.

Kernels are called with the bare-pointer convention (backends/cpu/codegen.py):
one data pointer per buffer, which holds no sizes.  A bufferized kernel whose
buffers have `?` dims (one compiled for every size of a symbolic graph) cannot be
called that way, so each such buffer argument becomes a pointer (`memref<T>`) and
its sizes follow the buffers as `index` arguments, in the order `size_arguments`
gives: every `?` dim of every buffer, in argument order (inputs, then the
outputs mlirc-cpu-bufferize made of the results).  The kernel rebuilds each
buffer from its pointer and sizes (contiguous, as every kernel buffer is), and
records its convention in `mlirc.size_args` ([argument, dim] pairs, flattened)
for the caller.  Rebuilt buffers start at the pointer (offset 0): kernel buffers
are identity-layout after bufferization, and a bare pointer carries no offset.

Expansions of such a buffer that split one dim into several `?` dims are
rebuilt from the pointer the same way: MLIR's strided-metadata expansion takes at
most one `?` dim per group.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref

from mlirc.dialects.attributes import KERNEL_ATTR, LIBRARY_ATTR, SIZE_ARGS_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.base.ir_utils import constant_index, erase_op, nested_ops
from mlirc.passes.base.registry import register_pass


def size_arguments(types: list[ir.Type]) -> list[tuple[int, int]]:
    """(argument, dim) of each size argument a kernel with these buffer (or tensor)
    argument types takes after them: its calling convention."""
    found = []
    for index, t in enumerate(types):
        if isinstance(t, (ir.MemRefType, ir.RankedTensorType)):
            shaped = ir.ShapedType(t)
            found += [(index, dim) for dim in range(shaped.rank) if shaped.is_dynamic_dim(dim)]
    return found


def _contiguous_strides(sizes: list[ir.Value | int]) -> list[ir.Value | int]:
    """Row-major strides of a buffer of `sizes` (values where a size is one)."""
    strides: list[ir.Value | int] = [1]
    for size in reversed(sizes[1:]):
        running = strides[-1]
        if isinstance(running, int) and isinstance(size, int):
            strides.append(running * size)
        else:
            strides.append(arith.muli(_as_value(running), _as_value(size)))
    return list(reversed(strides))


def _as_value(size: ir.Value | int) -> ir.Value:
    return size if isinstance(size, ir.Value) else arith.ConstantOp(ir.IndexType.get(), size).result


def _reinterpret(source: ir.Value, result: ir.MemRefType, sizes: list[ir.Value | int]) -> ir.Value:
    """`source`'s data as a contiguous buffer of type `result` with `sizes`."""
    strides = _contiguous_strides(sizes)
    dynamic = ir.ShapedType.get_dynamic_size()
    return memref.ReinterpretCastOp(
        result, source,
        offsets=[], sizes=[s for s in sizes if isinstance(s, ir.Value)],
        strides=[s for s in strides if isinstance(s, ir.Value)],
        static_offsets=[0],
        static_sizes=[dynamic if isinstance(s, ir.Value) else s for s in sizes],
        static_strides=[dynamic if isinstance(s, ir.Value) else s for s in strides],
    ).result  # fmt: skip


def _pass_sizes(kernel: func.FuncOp) -> None:
    ftype = ir.FunctionType(kernel.attributes["function_type"].value)
    inputs = list(ftype.inputs)
    sizes = size_arguments(inputs)
    if not sizes:
        return
    for arg, _ in sizes:
        if not _contiguous(ir.MemRefType(inputs[arg])):
            raise PipelineError(
                "mlirc-cpu-size-args",
                f"@{kernel.sym_name.value} argument {arg}: {inputs[arg]} is not a contiguous buffer",
            )
    block = kernel.entry_block
    index = ir.IndexType.get()
    size_values = [block.add_argument(index, kernel.location) for _ in sizes]
    by_arg: dict[int, dict[int, ir.Value]] = {}
    for (arg, dim), value in zip(sizes, size_values, strict=True):
        by_arg.setdefault(arg, {})[dim] = value
    first = list(block.operations)[0]
    with ir.InsertionPoint(first), kernel.location:
        for arg, dims in by_arg.items():
            old = ir.MemRefType(inputs[arg])
            pointer = ir.MemRefType.get([], old.element_type)
            argument = block.arguments[arg]
            argument.set_type(pointer)
            shape = [dims.get(d, size) for d, size in enumerate(old.shape)]
            rebuilt = _reinterpret(argument, old, shape)
            argument.replace_all_uses_except(rebuilt, rebuilt.owner.operation)
            inputs[arg] = pointer
    kernel.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([*inputs, *[index] * len(sizes)], []))
    kernel.attributes[SIZE_ARGS_ATTR] = ir.DenseI64ArrayAttr.get([i for pair in sizes for i in pair])


def _contiguous(t: ir.MemRefType) -> bool:
    layout = t.layout
    return isinstance(layout, ir.AffineMapAttr) and ir.AffineMapAttr(layout).value == ir.AffineMap.get_identity(t.rank)


def _split_dynamic_groups(kernel: func.FuncOp) -> None:
    """Rebuild an expansion of a contiguous buffer into several `?` dims of one group."""
    for op in [o for o in nested_ops(kernel.operation) if o.name == "memref.expand_shape"]:
        source, result = ir.MemRefType(op.operands[0].type), ir.MemRefType(op.results[0].type)
        if not _contiguous(source) or not _contiguous(result):
            continue
        groups = [list(map(int, g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
        if all(sum(1 for d in g if result.is_dynamic_dim(d)) <= 1 for g in groups):
            continue
        static = list(ir.DenseI64ArrayAttr(op.attributes["static_output_shape"]))
        dynamic = iter(list(op.operands)[1:])
        with ir.InsertionPoint(op), op.location:
            shape = [next(dynamic) if ir.ShapedType.is_dynamic_size(s) else s for s in static]
            op.results[0].replace_all_uses_with(_reinterpret(op.operands[0], result, shape))
        erase_op(op)


def _compiled_kernels(module: ir.Operation) -> list[func.FuncOp]:
    return [
        op
        for op in module.regions[0].blocks[0].operations
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes and LIBRARY_ATTR not in op.attributes
    ]


def _fold_reinterpreted_dims(kernel: func.FuncOp) -> None:
    """`memref.dim` of any rebuilt buffer is the size it was rebuilt with (a rebuilt
    expansion's too): loop bounds read sizes, not descriptors."""
    for op in [o for o in nested_ops(kernel.operation) if o.name == "memref.dim"]:
        source = op.operands[0].owner
        if isinstance(source, ir.Block) or source.name != "memref.reinterpret_cast":
            continue
        dim = constant_index(op.operands[1])
        static = list(ir.DenseI64ArrayAttr(source.attributes["static_sizes"]))
        if dim is None or dim >= len(static):
            continue
        offsets = sum(
            1 for o in ir.DenseI64ArrayAttr(source.attributes["static_offsets"]) if ir.ShapedType.is_dynamic_size(o)
        )
        dynamic = list(source.operands)[1 + offsets :]
        before = sum(1 for s in static[:dim] if ir.ShapedType.is_dynamic_size(s))
        if ir.ShapedType.is_dynamic_size(static[dim]):
            size = dynamic[before]
        else:
            with ir.InsertionPoint(op), op.location:
                size = _as_value(static[dim])
        op.results[0].replace_all_uses_with(size)
        erase_op(op)


@register_pass("mlirc-cpu-size-args", "CPU: bufferized kernels of `?` sizes take pointers and their sizes as arguments")
def cpu_size_args(module: ir.Operation) -> None:
    for kernel in _compiled_kernels(module):
        if kernel.is_external:
            continue
        # Expansions first: they are rebuilt from the buffer they expand, which the
        # next step rebuilds from the kernel's pointer argument.
        _split_dynamic_groups(kernel)
        _pass_sizes(kernel)
        _fold_reinterpreted_dims(kernel)
