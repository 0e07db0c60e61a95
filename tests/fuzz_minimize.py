"""Minimizing a failing fuzzer graph: intermediate values become inputs, and steps
go, while the graph still fails (tests/fuzz_graphs.py prints what is left)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch
import torch.nn.functional as F
from fuzz_oracle import Graph


def _cut(graph: Graph, keep_output: str) -> Graph:
    """Only what `keep_output` needs."""
    needed = {keep_output}
    steps = []
    for name, expr in reversed(graph.steps):
        if name in needed:
            steps.append((name, expr))
            needed |= {tok for tok in _names(expr)}
    used_inputs = [i for i in range(len(graph.inputs)) if f"a{i}" in needed]
    rename = {f"a{old}": f"a{new}" for new, old in enumerate(used_inputs)}
    steps = [(n, _rename(e, rename)) for n, e in reversed(steps)]
    return Graph([graph.inputs[i] for i in used_inputs], steps, [keep_output])


def _names(expr: str) -> set[str]:

    return set(re.findall(r"\b[at]\d+\b", expr))


def _rename(expr: str, mapping: dict[str, str]) -> str:

    return re.sub(r"\b[a]\d+\b", lambda m: mapping.get(m.group(0), m.group(0)), expr)


def minimize(graph: Graph, still_fails: Callable[[Graph], bool]) -> Graph:
    """Fewer outputs, then fewer steps: each step in turn becomes an input holding
    its eager value, while the graph still fails."""
    for out in graph.outputs:
        smaller = _cut(graph, out)
        if still_fails(smaller):
            graph = smaller
            break
    changed = True
    while changed:
        changed = False
        for k, (name, _) in enumerate(graph.steps[:-1]):
            env = dict(zip([f"a{i}" for i in range(len(graph.inputs))], graph.inputs, strict=True))
            for n, e in graph.steps[: k + 1]:
                env[n] = eval(e, {"torch": torch, "F": F, "math": math}, env)  # noqa: S307
            new_input = f"a{len(graph.inputs)}"
            steps = [(n, _rename_step(e, name, new_input)) for n, e in graph.steps[k + 1 :]]
            candidate = _cut(Graph([*graph.inputs, env[name]], steps, graph.outputs), graph.outputs[0])
            if still_fails(candidate):
                graph, changed = candidate, True
                break
    return graph


def _rename_step(expr: str, old: str, new: str) -> str:

    return re.sub(rf"\b{old}\b", new, expr)
