"""FX (ATen) graph -> `mlirc` dialect on tensors.

The importer walks the graph in order and maps each node through the lowering
table in `lowerings.py` (keyed by ATen OpOverload).  Types come from each node's
FakeTensor metadata through `shapes.torch_tensor_type`, the one place that would
emit `?` for symbolic dims.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx as fx
from mlir import ir
from mlir.dialects import func

from mlirc.dialects import builders, layouts, shapes
from mlirc.dialects.mlirc_dialect import TARGET_ATTR, make_context
from mlirc.dialects.runtime_checks import CHECKS_ATTR, RuntimeCheck, encode
from mlirc.dialects.verifier import verify_ops
from mlirc.errors import UnsupportedOpError, VerificationError

log = logging.getLogger(__name__)


def node_meta(node: fx.Node) -> Any:
    meta = node.meta.get("val", node.meta.get("example_value"))
    if meta is None and node.op == "get_attr":
        return _attr_value(node)
    return meta


class LoweringContext:
    """What a lowering function sees: the node's values, metadata and helpers."""

    def __init__(self, values: dict[fx.Node, Any]) -> None:
        self.values = values
        self.checks: list[tuple[ir.Value, RuntimeCheck]] = []  # (0-d i1 "ok", what eager raises)

    def require(self, ok: ir.Value, check: RuntimeCheck) -> None:
        """Raise `check` at run time unless every element of the i1 tensor `ok` holds
        (see mlirc.dialects.runtime_checks)."""
        if shapes.shape_of(ok):
            ok = builders.reduce("reduce_all", ok, list(range(len(shapes.shape_of(ok)))), False)
        self.checks.append((ok, check))

    def value(self, arg: Any, like: ir.Value | None = None, elem: ir.Type | None = None) -> ir.Value:
        """An fx argument as an IR value; Python scalars become 0-d constants."""
        if isinstance(arg, fx.Node):
            return self.values[arg]
        if isinstance(arg, (bool, int, float)):
            if elem is None:
                elem = shapes.elem_of(like) if like is not None else ir.F32Type.get()
            return builders.scalar_constant(arg, elem)
        raise VerificationError(f"cannot use {arg!r} as a tensor operand")

    def typed(self, arg: Any, dtype: torch.dtype) -> ir.Value:
        """An fx argument converted to `dtype` (the op's computation dtype)."""
        elem = shapes.element_type(dtype)
        if isinstance(arg, fx.Node):
            return builders.convert(self.values[arg], elem)
        return builders.scalar_constant(arg, elem)


def _meta_of_arg(arg: Any) -> Any:
    return node_meta(arg) if isinstance(arg, fx.Node) else arg


def result_dtype(*args: Any) -> torch.dtype:
    """torch's type promotion over tensors and Python scalars."""
    metas = [_meta_of_arg(a) for a in args]
    tensors = [m for m in metas if isinstance(m, torch.Tensor)]
    if len(metas) == 1:
        return tensors[0].dtype
    return torch.result_type(*metas[:2]) if len(metas) == 2 else _promote_many(metas)


def _promote_many(metas: Sequence[Any]) -> torch.dtype:
    dtype = torch.result_type(metas[0], metas[1])
    for m in metas[2:]:
        dtype = torch.promote_types(
            dtype, m.dtype if isinstance(m, torch.Tensor) else torch.result_type(torch.empty((), dtype=dtype), m)
        )
    return dtype


CPU_EAGER_DTYPES = frozenset({torch.float16, torch.bfloat16})
_aten = torch.ops.aten
# Ops that move or convert half values without computing on them.
HALF_SAFE_OPS = frozenset(
    {_aten.view.default, _aten._unsafe_view.default, _aten.permute.default, _aten.clone.default,
     _aten.expand.default, _aten.slice.Tensor, _aten.select.int, _aten.squeeze.dim, _aten.unsqueeze.default,
     _aten.t.default, _aten.transpose.int, _aten.alias.default}
)  # fmt: skip


def unsupported_reason(node: fx.Node) -> str | None:
    """Why `node` cannot be imported, or None when it can (used by the partitioner)."""
    from mlirc.frontend.lowerings import CHECKS, LOWERINGS

    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        return None
    if node.target not in LOWERINGS:
        return "no lowering"
    for meta in _tensor_metas(node):
        if not shapes.is_supported_dtype(meta.dtype):
            return f"dtype {meta.dtype} not supported"
        if any(not isinstance(d, int) for d in meta.shape):
            return "symbolic shapes not supported yet"
    half = _half_input_on_cpu(node)
    if half is not None:
        return half
    check = CHECKS.get(node.target)
    return check(node) if check else None


def _half_input_on_cpu(node: fx.Node) -> str | None:
    """Eager computes float16/bfloat16 ops in float32 (opmath) and rounds once; the
    CPU code rounds after every op and accumulates reductions in the half type, so
    ops that compute on half inputs run eagerly there (MLIRC_CPU_HALF=1 compiles them
    anyway).  Casts into a half type round once either way; the GPU backend keeps
    float32 intermediates and compiles them all."""
    from mlirc.config import config

    if config.cpu_half or node.target in HALF_SAFE_OPS:
        return None
    for arg in node.all_input_nodes:
        meta = node_meta(arg)
        if isinstance(meta, torch.Tensor) and meta.dtype in CPU_EAGER_DTYPES and meta.device.type == "cpu":
            return f"{meta.dtype} computes eagerly on the CPU"
    return None


def _tensor_metas(node: fx.Node) -> list[torch.Tensor]:
    metas = [node_meta(node)]
    metas += [node_meta(a) for a in node.all_input_nodes]
    flat: list[Any] = []
    for m in metas:
        flat.extend(m if isinstance(m, (tuple, list)) else [m])
    return [m for m in flat if isinstance(m, torch.Tensor)]


def constant_inputs(gm: fx.GraphModule) -> list[torch.Tensor]:
    """The values of the graph's get_attr nodes, in the importer's argument order."""
    return [_attr_value(node) for node in gm.graph.nodes if node.op == "get_attr"]


class FxImporter:
    """Imports one ATen FX graph as `func.func @main` in a new module."""

    def __init__(self, context: ir.Context | None = None) -> None:
        self.context = context or make_context()

    def import_graph(self, gm: fx.GraphModule, func_name: str = "main", target: str = "cpu") -> ir.Module:
        """`target` ("cpu" or "cuda"), kept as the module's `mlirc.target`, picks the
        device's semantics where eager's CPU and CUDA kernels differ (ties of signed
        zeros in maximum, see passes/scalar_math.py)."""
        from mlirc.frontend.lowerings import LOWERINGS

        with self.context, ir.Location.unknown():
            module = ir.Module.create()
            module.operation.attributes[TARGET_ATTR] = ir.StringAttr.get(target)
            # Lifted constant tensors (get_attr) become trailing arguments; the
            # caller appends their values (see constant_inputs).
            placeholders = [n for n in gm.graph.nodes if n.op in ("placeholder", "get_attr")]
            placeholders.sort(key=lambda n: n.op == "get_attr")
            arg_layouts = [_layout_of(n) for n in placeholders]
            arg_types = [self._buffer_type(n, lay) for n, lay in zip(placeholders, arg_layouts, strict=True)]
            output_node = next(n for n in gm.graph.nodes if n.op == "output")
            outputs = output_node.args[0]
            outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
            outputs = [n for n in outputs if n is not None]  # e.g. no grad for an input
            with ir.InsertionPoint(module.body):
                fn = func.FuncOp(func_name, (arg_types, []))
            entry = fn.add_entry_block()
            lctx = LoweringContext({})
            values = lctx.values
            with ir.InsertionPoint(entry):
                for node, arg, layout in zip(placeholders, entry.arguments, arg_layouts, strict=True):
                    values[node] = _from_buffer(arg, layout, tuple(node_meta(node).shape))
                for node in gm.graph.nodes:
                    if node.op != "call_function":
                        continue
                    with ir.Location.name(_location_name(node)):
                        values[node] = self._lower_node(node, lctx, LOWERINGS)
                eager_strides = output_node.meta.get("mlirc_eager_strides") or [None] * len(outputs)
                if len(eager_strides) != len(outputs):  # None outputs (no gradient) were left out
                    eager_strides = [None] * len(outputs)
                result_layouts = [_layout_of(n, s) for n, s in zip(outputs, eager_strides, strict=True)]
                results = [
                    _to_buffer(self._checked_output(values[n], n), layout)
                    for n, layout in zip(outputs, result_layouts, strict=True)
                ]
                # The checks' flags are results after the graph's own (the host wrapper tests them).
                returned = results + [ok for ok, _ in lctx.checks]
                func.ReturnOp(returned)
            fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [v.type for v in returned]))
            self._describe_entry(fn, lctx, arg_layouts, result_layouts, outputs, eager_strides)
            try:
                module.operation.verify()
            except ir.MLIRError as err:
                raise VerificationError(f"imported module does not verify: {err}") from err
            problems = verify_ops(module.operation)
            if problems:
                raise VerificationError("imported module does not verify:\n" + "\n".join(problems))
        return module

    def _describe_entry(
        self,
        fn: func.FuncOp,
        lctx: LoweringContext,
        arg_layouts: list,
        result_layouts: list,
        outputs: list,
        eager_strides: list,
    ) -> None:
        """What the host wrapper needs beyond the types: checks, layouts, eager's strides."""
        fn.attributes["mlirc.entry"] = ir.UnitAttr.get()
        if lctx.checks:
            fn.attributes[CHECKS_ATTR] = encode([check for _, check in lctx.checks])
        if any(arg_layouts):
            fn.attributes[layouts.ARG_LAYOUTS_ATTR] = layouts.encode(arg_layouts)
        if any(result_layouts):
            fn.attributes[layouts.RESULT_LAYOUTS_ATTR] = layouts.encode(result_layouts)
        metas = [node_meta(n) for n in outputs]
        fn.attributes[layouts.RESULT_EAGER_ATTR] = layouts.encode_eager(
            [(m.shape, s or m.stride()) for m, s in zip(metas, eager_strides, strict=True)]
        )

    def _buffer_type(self, node: fx.Node, layout: layouts.Layout | None) -> ir.Type:
        """An argument's type: the tensor's, or the dense buffer its layout holds it in."""
        if layout is None:
            return self._type_of(node)
        meta = node_meta(node)
        return shapes.torch_tensor_type(layout.buffer_shape(tuple(meta.shape)), meta.dtype)

    def _lower_node(self, node: fx.Node, lctx: LoweringContext, table: dict) -> Any:
        if node.target is operator.getitem:
            source, index = node.args
            return lctx.values[source][index]
        lowering = table.get(node.target)
        if lowering is None:
            raise UnsupportedOpError(str(node.target), "no lowering in mlirc's table")
        result = lowering(lctx, node)
        if isinstance(result, ir.Value):
            result = self._checked_output(result, node)
        return result

    def _type_of(self, node: fx.Node) -> ir.Type:
        meta = node_meta(node)
        if not isinstance(meta, torch.Tensor):
            raise UnsupportedOpError(node.name, f"graph input/output is not a tensor ({type(meta).__name__})")
        return shapes.torch_tensor_type(tuple(meta.shape), meta.dtype)

    def _checked_output(self, value: ir.Value, node: fx.Node) -> ir.Value:
        """Cross-check the dialect's shape rules against torch's metadata."""
        meta = node_meta(node)
        if isinstance(meta, torch.Tensor) and value.type != self._type_of(node):
            raise VerificationError(
                f"{node.format_node()}: mlirc type {value.type} but torch says {self._type_of(node)}"
            )
        return value


def _layout_of(node: fx.Node, strides: tuple[int, ...] | None = None) -> layouts.Layout | None:
    """The layout of a placeholder or result: its meta's strides, or `strides` (eager's,
    where decompositions changed them: mlirc.frontend.backend._keep_user_strides)."""
    meta = node_meta(node)
    if not isinstance(meta, torch.Tensor):
        return None
    return layouts.plan(tuple(meta.shape), tuple(strides or meta.stride()))


def _from_buffer(arg: ir.Value, layout: layouts.Layout | None, shape: tuple[int, ...]) -> ir.Value:
    """The tensor an argument's buffer holds: its dims put back in order, the expanded
    ones broadcast (in indexing maps, once fused: nothing is copied)."""
    if layout is None:
        return arg
    return builders.broadcast(builders.permute(arg, layout.inverse()), shape)


def _to_buffer(value: ir.Value, layout: layouts.Layout | None) -> ir.Value:
    """A result in the buffer of its eager layout: one element of each expanded dim,
    the dims in stride order (the producing kernel writes it so)."""
    if layout is None:
        return value
    if layout.expanded:
        shape = [1 if d in layout.expanded else n for d, n in enumerate(shapes.shape_of(value))]
        rank = len(shape)
        value = builders.create(
            "slice", [value], shapes.tensor_type(shape, shapes.elem_of(value)), starts=[0] * rank, steps=[1] * rank
        )
    return builders.permute(value, layout.order)


def _attr_value(node: fx.Node) -> Any:
    value = node.graph.owning_module
    for part in str(node.target).split("."):
        value = getattr(value, part)
    return value


def _location_name(node: fx.Node) -> str:
    target = getattr(node.target, "__name__", str(node.target))
    return f"{node.name}:{target}"
