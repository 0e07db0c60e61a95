"""Training: a CNN's saved activations stay channels-last between forward and backward.

mlirc computes a CNN in NHWC (passes/channels_last.py), but a forward graph's results
are written in the strides AOTAutograd traced: NCHW.  In training most results are
activations saved for the backward, so each was an NCHW copy of an NHWC value, and
the backward's `convolution_backward` calls (oneDNN / cuDNN) then ran on NCHW data:
on 2 EPYC cores a 1x1 stride-2 convolution's backward took 1.0 ms on NCHW against
0.27 ms on NHWC (ResNet training step, torch.profiler), the step 34 ms against
Inductor's 28 ms, which keeps these activations channels-last for the same reason.

* The forward writes each saved 4-D activation channels-last (the importer's result
  layout: the NHWC value is returned as it is, no copy) and reports its strides to
  AOTAutograd (TracingContext.output_strides), which gives the backward's
  placeholders those strides.
* A convolution's weight saved for the backward is saved as the channels-last copy
  the forward convolves with (Inductor's layout optimization saves it so too): the
  backward converted each weight again per step, 17 copy kernels of a ResNet's
  backward.  The copy is tagged with the weight's version, which the backward
  checks: an in-place edit of the weight in between raises autograd's error, as the
  weight itself, saved, would.
* The backward propagates its placeholders' strides through its graph
  (FakeTensorProp): gradients of channels-last activations are channels-last, as
  eager's TensorIterator makes them, so `convolution_backward` gets NHWC operands and
  the regions around it read and write NHWC buffers.

Graphs with symbolic sizes keep the traced strides (as Inductor's layout
optimization does): a permuted buffer of symbolic dims is not built yet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx
from torch._guards import TracingContext, detect_fake_mode
from torch._prims_common import make_channels_last_2d_strides_for
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from mlirc.backends.wrapper_scope import with_strides
from mlirc.frontend.importer import EAGER_STRIDES

log = logging.getLogger(__name__)

CONVOLUTIONS = frozenset({torch.ops.aten.convolution.default})


def _static(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and all(isinstance(d, int) for d in (*value.shape, *value.stride()))


def _saved_activation(node: Any) -> bool:
    """A 4-D value the graph computes with more than one channel and pixel: NHWC is
    a different layout from NCHW for it."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return False
    meta = node.meta.get("val")
    if not _static(meta) or meta.dim() != 4:
        return False
    _, c, h, w = meta.shape
    return c > 1 and h * w > 1


def _convolution_weights(gm: fx.GraphModule) -> set[fx.Node]:
    """The graph's inputs that convolutions read as weights: saved for the backward
    channels-last (a copy the forward makes for its own convolution anyway), the
    backward's `convolution_backward` takes them as they are, where it converted
    each weight again per step (Inductor's layout optimization saves them so too)."""
    return {
        n.args[1]
        for n in gm.graph.nodes
        if n.op == "call_function"
        and n.target in CONVOLUTIONS
        and isinstance(n.args[1], fx.Node)
        and n.args[1].op == "placeholder"
        and _static(n.args[1].meta.get("val"))
        and n.args[1].meta["val"].dim() == 4
    }


def keep_saved_channels_last(gm: fx.GraphModule, saved_from: int | None) -> list | None:
    """In a training forward with convolutions and static sizes, the strides of every
    result (None where it is not a tensor), the saved activations' channels-last,
    recorded on the output node for the importer; None where nothing changes."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    if saved_from is None or not any(n.op == "call_function" and n.target in CONVOLUTIONS for n in gm.graph.nodes):
        return None
    metas = [n.meta.get("val") if isinstance(n, fx.Node) else None for n in results]
    if not all(_static(m) for m in metas if isinstance(m, torch.Tensor)):
        return None
    visible = set(results[:saved_from])  # also a user's output or an update: eager's strides
    strides = [tuple(m.stride()) if isinstance(m, torch.Tensor) else None for m in metas]
    changed = False
    weights = _convolution_weights(gm)
    for i in range(saved_from, len(results)):
        if results[i] not in visible and (_saved_activation(results[i]) or results[i] in weights):
            strides[i] = make_channels_last_2d_strides_for(metas[i].shape)
            changed = True
    if not changed:
        return None
    output.meta[EAGER_STRIDES] = [s for n, s in zip(results, strides, strict=True) if n is not None]
    return strides


def saved_weight_copies(gm: fx.GraphModule, strides: list | None) -> list[tuple[int, int]]:
    """(result, argument) positions of the weights `keep_saved_channels_last` saves
    as channels-last copies."""
    if strides is None:
        return []
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    arguments = [n for n in gm.graph.nodes if n.op == "placeholder"]
    weights = _convolution_weights(gm)
    return [
        (i, arguments.index(node))
        for i, (node, stride) in enumerate(zip(results, strides, strict=True))
        if node in weights and stride != tuple(node.meta["val"].stride())
    ]


# A saved weight copy's (weight, the weight's version when it was copied).  The copy
# has a version counter of its own, where the weight itself, saved, shares the
# parameter's: an in-place edit of the weight between forward and backward raises in
# eager (autograd's saved-tensor check), and the backward's check below keeps that.
COPIED_FROM = "_mlirc_copied_from"


class TagsWeightCopies:
    """A forward whose results at `copies` (result, argument) are copies of its
    arguments: each copy is tagged with its argument and the argument's version."""

    def __init__(self, fn: Callable, copies: list[tuple[int, int]]) -> None:
        self.fn, self.copies = fn, copies
        if hasattr(fn, "call_list"):
            self.call_list = self._call_list

    def _tag(self, weights: list[tuple[torch.Tensor, int]], results: Any) -> Any:
        for (result, _), source in zip(self.copies, weights, strict=True):
            setattr(results[result], COPIED_FROM, source)
        return results

    def __call__(self, *args: Any) -> Any:
        weights = [(args[i], args[i]._version) for _, i in self.copies]
        return self._tag(weights, self.fn(*args))

    def _call_list(self, args: list) -> Any:
        weights = [(args[i], args[i]._version) for _, i in self.copies]  # the wrapper empties `args`
        return self._tag(weights, self.fn.call_list(args))


def checks_weight_versions(fn: Callable, example_inputs: Sequence[Any]) -> Callable:
    """A backward that raises autograd's error where a weight saved as a copy
    (`TagsWeightCopies`) was edited in place since the forward copied it."""
    positions = [
        i
        for i, value in enumerate(example_inputs)
        if isinstance(value, torch.Tensor)
        and value.dim() == 4
        and value.is_contiguous(memory_format=torch.channels_last)
    ]
    if not positions:
        return fn

    def check(args: Sequence[Any]) -> None:
        for i in positions:
            source = getattr(args[i], COPIED_FROM, None)
            if source is not None and source[0]._version != source[1]:
                weight, version = source
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{weight.type()} {list(weight.shape)}] is at version {weight._version}; "
                    f"expected version {version} instead (a convolution's weight, which mlirc saved for the "
                    "backward as its channels-last copy)"
                )

    def call(*args: Any) -> Any:
        check(args)
        return fn(*args)

    inner = getattr(fn, "call_list", None)
    if inner is not None:

        def call_list(args: list) -> Any:
            check(args)
            return inner(args)

        call.call_list = call_list  # type: ignore[attr-defined]
    return call


def report_output_strides(strides: list) -> None:
    """Tell AOTAutograd the forward's result strides, so that it compiles the backward
    for the saved activations as they are (Inductor reports its own the same way)."""
    context = TracingContext.try_get()
    if context is not None and context.output_strides is not None and not context.output_strides:
        context.output_strides.extend(strides)


def follow_input_strides(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> list[tuple[int, tuple[int, ...]]]:
    """A backward graph's node metadata for the strides its inputs arrive in (the
    forward's reported ones), propagated as ATen's kernels propagate them.  Returns
    the inputs whose strides the graph still does not describe (propagation failed):
    the caller copies those into their traced strides per call."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return []
    differ = [
        (i, tuple(node.meta["val"].stride()))
        for i, (node, value) in enumerate(zip(placeholders, example_inputs, strict=True))
        if isinstance(value, torch.Tensor)
        and isinstance(node.meta.get("val"), torch.Tensor)
        and _static(value)
        and _static(node.meta["val"])
        and value.stride() != node.meta["val"].stride()
    ]
    if not differ:
        return []
    mode = detect_fake_mode(example_inputs)
    try:
        if mode is None:
            raise RuntimeError("no fake mode among the inputs")
        FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*example_inputs)
        if _convolve_channels_last(gm):
            FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*example_inputs)
    except Exception:  # an op without a fake kernel: the traced strides stay, per call
        log.debug("backward graph not restrided; its inputs are copied", exc_info=True)
        return differ
    return []


def _channels_last(value: Any) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and value.dim() == 4
        and value.is_contiguous(memory_format=torch.channels_last)
        and not value.is_contiguous()
    )


def _convolve_channels_last(gm: fx.GraphModule) -> bool:
    """Each `convolution_backward` with a channels-last activation or gradient gets
    all three channels-last: given one NCHW operand (a weight, the network's input
    image), ATen converts it inside the call, and the whole backward in NCHW (1.5 ms
    for a 128x128x3x3 weight's backward on 2 cores, against 0.3 ms).  The
    conversion is a `clone` in the region before the call, a copy kernel."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.convolution_backward.default:
            continue
        operands = node.args[:3]
        if not any(_channels_last(a.meta.get("val")) for a in operands[:2]):
            continue
        for position, operand in enumerate(operands):
            meta = operand.meta.get("val")
            if not isinstance(meta, torch.Tensor) or meta.dim() != 4:
                continue
            if meta.is_contiguous(memory_format=torch.channels_last):  # also a 1x1 weight's either layout
                continue
            with gm.graph.inserting_before(node):
                converted = gm.graph.call_function(
                    torch.ops.aten.clone.default, (operand,), {"memory_format": torch.channels_last}
                )
            node.update_arg(position, converted)
            changed = True
    if changed:
        gm.recompile()
    return changed


def as_traced(fn: Callable, traced: list[tuple[int, tuple[int, ...]]]) -> Callable:
    """`fn` with the arguments at the positions in `traced` copied into their strides."""

    def call(*args: Any) -> Any:
        args = list(args)
        for i, stride in traced:
            args[i] = with_strides(args[i], stride)
        return fn(*args)

    inner = getattr(fn, "call_list", None)
    if inner is not None:  # boxed: the list converted in place, and emptied by `fn`

        def call_list(args: list) -> Any:
            for i, stride in traced:
                args[i] = with_strides(args[i], stride)
            return inner(args)

        call.call_list = call_list  # type: ignore[attr-defined]
    return call
