"""ATen's multi-tensor (`_foreach_*`) ops as one op per tensor.

Optimizers run their foreach forms by default on CUDA tensors (and with foreach=True
anywhere): `_foreach_add.List(params, grads, alpha=...)` is one dispatch over every
parameter.  Decomposed per tensor, each list element becomes the plain op
(`aten.add.Tensor(p, g, alpha=...)`), which mlirc lowers and fuses like any other:
a step's elementwise chain per parameter becomes one kernel, as Inductor's foreach
lowering makes of it.  Every functional foreach overload whose plain op exists gets
one; list arguments are indexed per element, everything else (a scalar, a 0-d tensor,
alpha) is shared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

# foreach name -> the plain op, where the names differ
RENAMED = {"norm": "linalg_vector_norm"}


def _positional(op: torch._ops.OpOverload, plain: torch._ops.OpOverloadPacket) -> int:
    """How many of the foreach op's leading arguments the plain op takes by position;
    the rest go by name.  addcmul's `value` and norm's `dtype` are keyword-only in the
    plain op, positional in the foreach one (where norm has no `dim` before it)."""
    schemas = [getattr(plain, o)._schema for o in plain.overloads()]
    most = max(sum(not a.kwarg_only for a in s.arguments) for s in schemas)
    keyword_only = {a.name for s in schemas for a in s.arguments if a.kwarg_only}
    names = [a.name for a in op._schema.arguments]
    return next((i for i, n in enumerate(names) if i >= most or n in keyword_only), len(names))


def _per_tensor(op: torch._ops.OpOverload, plain: torch._ops.OpOverloadPacket) -> Callable[..., list]:
    names = [a.name for a in op._schema.arguments]
    positional = _positional(op, plain)

    def decomposed(*args: Any, **kwargs: Any) -> list:
        kwargs = {**dict(zip(names[positional:], args[positional:], strict=False)), **kwargs}
        args = args[:positional]
        lists = [a for a in (*args, *kwargs.values()) if isinstance(a, (list, tuple))]
        count = len(lists[0]) if lists else 0

        def pick(value: Any, i: int) -> Any:
            return value[i] if isinstance(value, (list, tuple)) else value

        return [plain(*(pick(a, i) for a in args), **{k: pick(v, i) for k, v in kwargs.items()}) for i in range(count)]

    return decomposed


def foreach_decompositions() -> dict[Any, Callable[..., list]]:
    """Each functional `aten._foreach_<op>` overload -> its per-tensor decomposition
    (in-place ones are functionalized into these before decomposition)."""
    table: dict[Any, Callable[..., list]] = {}
    for name in dir(aten):
        if not name.startswith("_foreach_") or name.endswith("_"):
            continue
        base = name[len("_foreach_") :]
        plain = getattr(aten, RENAMED.get(base, base), None)
        if not isinstance(plain, torch._ops.OpOverloadPacket):
            continue
        packet = getattr(aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            table[op] = _per_tensor(op, plain)
    return table
