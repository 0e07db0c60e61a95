"""FX (ATen) graph -> `mlirc` dialect on tensors.

The importer walks the graph in order and maps each node through the lowering
table of `mlirc.frontend.lowerings` (keyed by ATen OpOverload).  Types come from each node's
FakeTensor metadata through `shapes.torch_tensor_type`, the one place that emits
`?` for symbolic dims.

A graph with symbolic sizes (Dynamo's `s0`) imports with `?` dims: a SymInt
argument becomes an `index` argument, nodes that only compute sizes (sym_size,
arithmetic on SymInts) emit nothing themselves, and the sized ops that need a
symbolic size get it as an `index` value (frontend/lowerings/sizes.py).  Tensor
arguments and results of symbolic size must be row-major at the traced sizes.
"""

from __future__ import annotations

import logging
import operator
from typing import Any

import torch
import torch.fx as fx
from mlir import ir
from mlir.dialects import func

from mlirc.dialects import builders, layouts, shapes
from mlirc.dialects.attributes import (
    ARG_LAYOUTS_ATTR,
    CHECKS_ATTR,
    ENTRY_ATTR,
    FROZEN_ATTR,
    RESULT_EAGER_ATTR,
    RESULT_LAYOUTS_ATTR,
    RESULT_UPDATES_ATTR,
    SAVED_RESULTS_ATTR,
    TARGET_ATTR,
)
from mlirc.dialects.mlirc_dialect import make_context
from mlirc.dialects.runtime_checks import encode
from mlirc.dialects.verifier import verify_ops
from mlirc.errors import UnsupportedOpError, VerificationError
from mlirc.frontend.dynamic import hint_int
from mlirc.frontend.lowerings import LOWERINGS
from mlirc.frontend.lowerings.api import LoweringContext, attr_value, computes_a_size, node_meta

log = logging.getLogger(__name__)

# Placeholder meta: the argument is a parameter or buffer that inference keeps from call
# to call (frontend/backend.py marks them); the entry lists them in `mlirc.frozen`.
FROZEN_META = "mlirc_frozen"
# Output node meta (frontend/backend.py, from AOTAutograd's metadata): ({output position:
# the placeholder whose new value it is}, the first position only the backward reads).
RESULT_ROLES_META = "mlirc_result_roles"
# Output node meta: the strides each (not None) result must have, where they are not its
# node's (eager's strides kept through decompositions, saved activations channels-last).
EAGER_STRIDES = "mlirc_eager_strides"


def constant_inputs(gm: fx.GraphModule) -> list[torch.Tensor]:
    """The values of the graph's get_attr nodes, in the importer's argument order."""
    return [attr_value(node) for node in gm.graph.nodes if node.op == "get_attr"]


class FxImporter:
    """Imports one ATen FX graph as `func.func @main` in a new module."""

    def __init__(self, context: ir.Context | None = None) -> None:
        self.context = context or make_context()

    def import_graph(self, gm: fx.GraphModule, func_name: str = "main", target: str = "cpu") -> ir.Module:
        """`target` ("cpu" or "cuda"), kept as the module's `mlirc.target`, picks the
        device's semantics where eager's CPU and CUDA kernels differ (ties of signed
        zeros in maximum, see passes/base/scalar_math.py)."""
        with self.context, ir.Location.unknown():
            module = ir.Module.create()
            module.operation.attributes[TARGET_ATTR] = ir.StringAttr.get(target)
            # Lifted constant tensors (get_attr) become trailing arguments; the
            # caller appends their values (see constant_inputs).
            placeholders = [n for n in gm.graph.nodes if n.op in ("placeholder", "get_attr")]
            placeholders.sort(key=lambda n: n.op == "get_attr")
            arg_layouts = [_layout_of(n) for n in placeholders]
            arg_types = [self._arg_type(n, lay) for n, lay in zip(placeholders, arg_layouts, strict=True)]
            output_node = next(n for n in gm.graph.nodes if n.op == "output")
            outputs = output_node.args[0]
            outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
            roles = _result_roles(output_node, outputs, placeholders)
            outputs = [n for n in outputs if n is not None]  # e.g. no grad for an input
            with ir.InsertionPoint(module.body):
                fn = func.FuncOp(func_name, (arg_types, []))
            entry = fn.add_entry_block()
            lctx = LoweringContext({})
            values = lctx.values
            with ir.InsertionPoint(entry):
                # A symbol is read off a tensor's dim before an `index` argument: then
                # a slice to that size is visibly the whole dim (canonicalization folds
                # it) and two reads of it are one value.
                for node, arg, layout in zip(placeholders, entry.arguments, arg_layouts, strict=True):
                    meta = node_meta(node)
                    if not isinstance(meta, torch.SymInt):
                        values[node] = _from_buffer(arg, layout, tuple(meta.shape))
                        lctx.sizes.bind_tensor(values[node], meta.shape)
                for node, arg in zip(placeholders, entry.arguments, strict=True):
                    if isinstance(node_meta(node), torch.SymInt):
                        values[node] = node_meta(node)
                        lctx.sizes.bind_value(values[node], arg)
                for node in gm.graph.nodes:
                    if node.op != "call_function":
                        continue
                    if computes_a_size(node):
                        values[node] = node_meta(node)
                        continue
                    with ir.Location.name(_location_name(node)):
                        values[node] = self._lower_node(node, lctx, LOWERINGS)
                eager_strides = output_node.meta.get(EAGER_STRIDES) or [None] * len(outputs)
                if len(eager_strides) != len(outputs):  # None outputs (no gradient) were left out
                    eager_strides = [None] * len(outputs)
                result_layouts = [_layout_of(n, s, padding=True) for n, s in zip(outputs, eager_strides, strict=True)]
                results = [
                    _to_buffer(self._checked_output(values[n], n), layout)
                    for n, layout in zip(outputs, result_layouts, strict=True)
                ]
                # The checks' flags are results after the graph's own (the host wrapper tests them).
                returned = results + [ok for ok, _ in lctx.checks]
                func.ReturnOp(returned)
            fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(arg_types, [v.type for v in returned]))
            self._describe_entry(fn, lctx, arg_layouts, result_layouts, outputs, eager_strides)
            _describe_roles(fn, roles, arg_layouts, result_layouts)
            frozen = [i for i, n in enumerate(placeholders) if n.op == "get_attr" or n.meta.get(FROZEN_META)]
            if frozen:
                fn.attributes[FROZEN_ATTR] = ir.DenseI64ArrayAttr.get(frozen)
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
        fn.attributes[ENTRY_ATTR] = ir.UnitAttr.get()
        if lctx.checks:
            fn.attributes[CHECKS_ATTR] = encode([check for _, check in lctx.checks])
        if any(arg_layouts):
            fn.attributes[ARG_LAYOUTS_ATTR] = layouts.encode(arg_layouts)
        if any(result_layouts):
            fn.attributes[RESULT_LAYOUTS_ATTR] = layouts.encode(result_layouts)
        eager = [
            ([shapes.static_dim(d) for d in m.shape], [shapes.static_dim(d) for d in s or m.stride()])
            for m, s in zip(map(node_meta, outputs), eager_strides, strict=True)
        ]
        if all(d is not None for shape, strides in eager for d in (*shape, *strides)):
            # else known per call only: binding the sizes sets it (passes/bind_sizes.py)
            fn.attributes[RESULT_EAGER_ATTR] = layouts.encode_eager(eager)

    def _arg_type(self, node: fx.Node, layout: layouts.Layout | None) -> ir.Type:
        """An argument's type: the tensor's, or the dense buffer its layout holds it in;
        a SymInt's size as an `index`."""
        if isinstance(node_meta(node), torch.SymInt):
            return ir.IndexType.get()
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


def _layout_of(node: fx.Node, strides: tuple[int, ...] | None = None, padding: bool = False) -> layouts.Layout | None:
    """The layout of a placeholder or result: its meta's strides, or `strides` (eager's,
    where decompositions changed them: mlirc.frontend.backend._keep_user_strides);
    `padding`: a padded buffer may hold it (results only: layouts.plan)."""
    meta = node_meta(node)
    if not isinstance(meta, torch.Tensor):
        return None
    strides = tuple(strides or meta.stride())
    shape = [shapes.static_dim(d) for d in meta.shape]
    static_strides = [shapes.static_dim(d) for d in strides]
    if None not in shape and None not in static_strides:
        return layouts.plan(shape, static_strides, padding)
    # A symbolic layout is planned at the traced sizes; the importer takes row-major
    # ones only (a permuted buffer of symbolic dims is not built yet).
    layout = layouts.plan([hint_int(d) for d in meta.shape], [hint_int(d) for d in strides])
    if layout is not None:
        raise UnsupportedOpError(node.name, "a tensor of symbolic size that is not row-major")
    return None


def _from_buffer(arg: ir.Value, layout: layouts.Layout | None, shape: tuple[int, ...]) -> ir.Value:
    """The tensor an argument's buffer holds: its dims put back in order, the expanded
    ones broadcast (in indexing maps, once fused: nothing is copied)."""
    if layout is None:
        return arg
    return builders.broadcast(builders.permute(arg, layout.inverse()), shape)


def _to_buffer(value: ir.Value, layout: layouts.Layout | None) -> ir.Value:
    """A result in the buffer of its eager layout: one element of each expanded dim,
    the dims in stride order, rows padded with zeros where eager's are (the producing
    kernel writes it so)."""
    if layout is None:
        return value
    tensor_shape = list(shapes.shape_of(value))
    if layout.expanded:
        shape = [1 if d in layout.expanded else n for d, n in enumerate(tensor_shape)]
        rank = len(shape)
        value = builders.slice_(value, [0] * rank, [1] * rank, shape)
    value = builders.permute(value, layout.order)
    if layout.padded:
        now, full = shapes.shape_of(value), layout.buffer_shape(tensor_shape)
        elem = shapes.elem_of(value)
        value = builders.create(
            "pad", [value, builders.scalar_constant(0, elem)], shapes.tensor_type(full, elem),
            low=[0] * len(full), high=[f - n for f, n in zip(full, now, strict=True)],
        )  # fmt: skip
    return value


def _location_name(node: fx.Node) -> str:
    target = getattr(node.target, "__name__", str(node.target))
    return f"{node.name}:{target}"


def _result_roles(output_node: fx.Node, outputs: list, placeholders: list) -> tuple[list[int], int | None]:
    """Per result (None outputs left out): the argument it updates, or -1; and the
    first result only the backward reads (None: all may reach the user)."""
    updates_of, saved_from = output_node.meta.get(RESULT_ROLES_META, ({}, None))
    updates, kept = [], 0
    for position, node in enumerate(outputs):
        if saved_from is not None and position == saved_from:
            saved_from = kept
        if node is None:
            continue
        target = updates_of.get(position)
        updates.append(placeholders.index(target) if target in placeholders else -1)
        kept += 1
    if saved_from is not None and saved_from >= len(outputs):
        saved_from = None
    return updates, saved_from


def _describe_roles(
    fn: func.FuncOp, roles: tuple[list[int], int | None], arg_layouts: list, result_layouts: list
) -> None:
    """RESULT_UPDATES_ATTR and SAVED_RESULTS_ATTR; an update only where argument and
    result lie alike (no layout of their own: a channels-last buffer is a permute)."""
    updates, saved_from = roles
    updates = [
        j if j >= 0 and arg_layouts[j] is None and result_layouts[i] is None else -1 for i, j in enumerate(updates)
    ]
    if any(j >= 0 for j in updates):
        fn.attributes[RESULT_UPDATES_ATTR] = ir.DenseI64ArrayAttr.get(updates)
    if saved_from is not None:
        fn.attributes[SAVED_RESULTS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), saved_from)
