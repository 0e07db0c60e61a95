"""Inputs a graph writes (AOTAutograd's in-graph input mutations).

mlirc asks AOTAutograd to keep input mutations in the graph
(`keep_inference_input_mutations`, as Inductor does): an optimizer's parameters and
state, batch norm's running statistics then end the graph as `aten.copy_(input,
new_value)` instead of being returned for AOTAutograd's runtime wrapper to copy
back, one Python-level `copy_` per tensor and call (an AdamW step over 30
parameters made 120 per step: on a GPU, whose training step is host-bound, ~0.3 ms).

`take_input_writes` turns those trailing copies into leading results whose role is
"the new value of this argument"; the kernel making such a value writes it straight
into the argument's buffer where it can (backends/memory_plan.py, in_place), and
`WritesInputs` copies only the values that were not (a non-contiguous argument, a
CUDA graph's static buffer, a reduction's result, an eager fallback), all in one
multi-tensor copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx

aten = torch.ops.aten


def take_input_writes(gm: fx.GraphModule) -> list[int]:
    """Rewrites `gm`: each `copy_(placeholder, value)` that nothing follows in reading
    the placeholder becomes a leading result `value`.  Returns, per leading result,
    the position of the argument it is the new value of ([] if none)."""
    nodes = list(gm.graph.nodes)
    order = {node: i for i, node in enumerate(nodes)}
    argument = {n: i for i, n in enumerate(n for n in nodes if n.op == "placeholder")}
    output = nodes[-1]
    writes: dict[fx.Node, fx.Node] = {}  # placeholder -> its new value
    for copy in [n for n in nodes if n.op == "call_function" and n.target is aten.copy_.default]:
        target, value = copy.args[0], copy.args[1]
        if copy.kwargs or target not in argument or copy.users or not isinstance(value, fx.Node):
            continue
        # a read after the copy would see the new value once the write moves to the end
        if target in writes or any(order[user] > order[copy] and user is not output for user in target.users):
            continue
        writes[target] = value
        gm.graph.erase_node(copy)
    if not writes:
        return []
    results = output.args[0]
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    output.args = (tuple(writes.values()) + tuple(results),)
    gm.recompile()
    return [argument[target] for target in writes]


class WritesInputs:
    """A compiled graph whose first results are new values of its arguments
    (`take_input_writes`): writes each into its argument unless the kernel already
    did (the result is then that argument itself), and returns the rest."""

    def __init__(self, fn: Callable, targets: list[int]) -> None:
        self.fn, self.targets, self.count = fn, targets, len(targets)
        if hasattr(fn, "call_list"):
            self.call_list = self._call_list

    def _write(self, inputs: list[torch.Tensor], results: Any) -> Any:
        pairs = [(argument, value) for argument, value in zip(inputs, results, strict=False) if value is not argument]
        if pairs:
            # one multi-tensor copy, not a copy (a launch, on a GPU) per tensor: a
            # CNN's forward leaves each batch norm's two running statistics to copy
            with torch.no_grad():
                torch._foreach_copy_([a for a, _ in pairs], [v for _, v in pairs])
        return results[self.count :]

    def __call__(self, *args: Any) -> Any:
        inputs = [args[i] for i in self.targets]
        return self._write(inputs, self.fn(*args))

    def _call_list(self, args: list) -> Any:
        inputs = [args[i] for i in self.targets]  # the wrapper empties `args`
        return self._write(inputs, self.fn.call_list(args))
