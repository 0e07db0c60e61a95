"""What a symbolic graph's wrapper for every size needs from the FX graph: each entry
argument's sizes as Dynamo's SymInts, where the wrapper reads each symbol, and
eager's results (backends/symbolic_wrapper.py and its CPU and GPU builders make the wrapper).

The entry of a symbolic module takes the graph's placeholders in order (tensors and
SymInts), then the prepared values (passes/hoist_frozen.py), which are static.  A
placeholder of symbolic sizes is row-major in every call that reaches the wrapper
(frontend/dynamic.py checks it per call signature), so its `?` dims are its sizes.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy
import torch
import torch.fx as fx
from mlir import ir

from mlirc.backends import backend_for
from mlirc.backends.symbolic_sizes import SymbolicSizes
from mlirc.backends.symbolic_wrapper import build_every_size_wrapper
from mlirc.dialects import layouts
from mlirc.dialects.attributes import RESULT_LAYOUTS_ATTR
from mlirc.errors import UnsupportedOpError
from mlirc.frontend.dynamic import hint_int, no_new_guards
from mlirc.passes import bind_sizes


def placeholder_values(gm: fx.GraphModule) -> list:
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]


def traced_sizes(gm: fx.GraphModule, slots: list[tuple[int, int | None]]) -> tuple[int, ...]:
    """The entry's sizes (mlirc-bind-sizes' order) as Dynamo traced the graph."""
    values = placeholder_values(gm)
    return tuple(hint_int(values[i] if d is None else values[i].shape[d]) for i, d in slots)


def entry_arguments(entry: ir.Operation, values: list) -> list:
    """Per entry argument, its dims (a tensor's) or its value (an index's), with
    Dynamo's SymInts for the `?` sizes."""
    arguments: list = []
    for k, arg in enumerate(entry.regions[0].blocks[0].arguments):
        value = values[k] if k < len(values) else None
        if isinstance(arg.type, ir.RankedTensorType):
            t = ir.RankedTensorType(arg.type)
            dynamic = [d for d in range(t.rank) if t.is_dynamic_dim(d)]
            if dynamic and not (isinstance(value, torch.Tensor) and value.dim() == t.rank):
                raise UnsupportedOpError("mlirc-host-wrapper", f"argument {k}'s `?` sizes match no placeholder")
            arguments.append([value.shape[d] if d in dynamic else t.shape[d] for d in range(t.rank)])
        elif isinstance(value, (torch.SymInt, int)):
            arguments.append(value)
        else:
            raise UnsupportedOpError("mlirc-host-wrapper", f"index argument {k} is no SymInt placeholder")
    return arguments


def symbol_sources(values: list) -> dict[sympy.Symbol, str]:
    """Where the wrapper reads each symbol: a tensor argument's size, or a SymInt argument."""
    sources: dict[sympy.Symbol, str] = {}
    for k, value in enumerate(values):
        sizes = [(value, f"arg{k}")] if isinstance(value, torch.SymInt) else []
        if isinstance(value, torch.Tensor):
            sizes = [(size, f"arg{k}.shape[{d}]") for d, size in enumerate(value.shape)]
        for size, source in sizes:
            if isinstance(size, torch.SymInt) and isinstance(size.node.expr, sympy.Symbol):
                sources.setdefault(size.node.expr, source)
    return sources


def _check_results(module: ir.Module, sizes: SymbolicSizes, eager: list) -> None:
    """The entry's results have eager's sizes, for every value of the symbols (a
    question the ranges cannot answer raises under no_new_guards)."""
    entry = bind_sizes.entry_function(module.operation)
    ret = list(entry.entry_block.operations)[-1]
    result_layouts = layouts.decode(entry.attributes, RESULT_LAYOUTS_ATTR, len(eager))
    for i, ((shape, _), layout) in enumerate(zip(eager, result_layouts, strict=True)):
        expected = list(layout.buffer_shape(shape) if layout else shape)
        got = sizes.shape(ret.operands[i])
        if len(got) != len(expected) or not all(bool(a == b) for a, b in zip(got, expected, strict=True)):
            raise UnsupportedOpError("mlirc-host-wrapper", f"result {i} is {got}, eager's {expected}")


def build(
    gm: fx.GraphModule,
    module: ir.Module,
    compiled: object,
    result_dtypes: list[torch.dtype],
    device: torch.device,
    eager: list,
) -> tuple[Callable, Callable[..., bool], str]:
    """(call, fits, source) of `module`'s wrapper for every size (see the module docstring)."""
    values = placeholder_values(gm)
    entry = bind_sizes.entry_function(module.operation)
    arguments = entry_arguments(entry, values)
    with module.context, no_new_guards(values):
        sizes = SymbolicSizes(module, arguments)
        _check_results(module, sizes, eager)
        wrap, make_builder = backend_for(device.type).every_size_wrappers(compiled)
        return build_every_size_wrapper(
            wrap,
            make_builder,
            module,
            compiled,
            result_dtypes,
            device,
            sizes,
            eager,
            symbol_sources(values),
            len(values),
        )
