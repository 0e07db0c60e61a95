"""Frozen arguments' prepared values (passes/hoist_frozen.py) in the host wrapper:
the entry's prepare function, the cache of its values, and the `call` that
recomputes them only when a frozen argument changed."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import PREPARE_ATTR, PREPARED_ATTR
from mlirc.errors import PipelineError


class PreparedCache:
    """The values of an entry's prepare function (passes/hoist_frozen.py), and the
    version counters and storages of the frozen arguments they were computed from."""

    def __init__(self, prepare: Callable) -> None:
        self.prepare = prepare
        self.state: tuple = (None, (), ())

    def refresh(self, key: tuple | None, frozen: tuple) -> tuple:
        values = self.prepare(*frozen)
        if key is not None:
            # The storages are kept alive so that no other tensor can take their
            # addresses: an equal data_ptr then means the same storage.
            self.state = (key, values, tuple(t.untyped_storage() for t in frozen))
        return values

    def refresh_in_place(self, frozen: tuple) -> None:
        """For a CUDA graph that reads the cached values where they are: when a frozen
        argument changed since they were computed, recompute them into the same
        buffers (backends/gpu/cudagraphs.py calls this before each replay)."""
        key = tuple(x for t in frozen for x in (t._version, t.data_ptr()))
        key_then, values, _ = self.state
        if key != key_then:
            for cached, fresh in zip(values, self.prepare(*frozen), strict=True):
                cached.copy_(fresh)
            self.state = (key, values, tuple(t.untyped_storage() for t in frozen))


def frozen_guard_source(entry: func.FuncOp, graph_capture: bool = False) -> str:
    """`call`: computes the prepared values when a frozen argument changed (or has no
    version counter: an inference tensor), then runs `call_prepared` with them.

    `graph_capture` (CUDA): while a CUDA graph captures the call, cached values are
    read in place and the capture is told (`note_capture`), so that each replay first
    refreshes them (PreparedCache.refresh_in_place); values computed now are
    computed by the graph itself, on every replay, and not cached."""
    positions = list(ir.DenseI64ArrayAttr(entry.attributes[PREPARED_ATTR]))
    count = len(ir.FunctionType(entry.attributes["function_type"].value).inputs)
    prepared = len(ir.FunctionType(_prepare_of(entry).attributes["function_type"].value).results)
    args = [f"a{i}" for i in range(count - prepared)]
    frozen = "".join(f"a{i}, " for i in positions)
    key = "".join(f"a{i}._version, a{i}.data_ptr(), " for i in positions)
    if graph_capture:
        choose = [
            "    if key is not None and state[0] == key:",
            "        values = state[1]",
            f"        if capturing(): note_capture(prepared, ({frozen}))",
            "    else:",
            f"        values = prepare({frozen}) if capturing() else prepared.refresh(key, ({frozen}))",
        ]
    else:
        choose = [
            f"    values = state[1] if key is not None and state[0] == key else prepared.refresh(key, ({frozen}))"
        ]
    return "\n".join(
        [
            f"def call({', '.join(args)}):",
            "    try:",
            f"        key = ({key})",
            "    except RuntimeError:",
            "        key = None",
            "    state = prepared.state",
            *choose,
            f"    return call_prepared({''.join(a + ', ' for a in args)}*values)",
        ]
    )


def _prepare_of(entry: func.FuncOp) -> func.FuncOp:
    name = f"{entry.sym_name.value}_prepare"
    module = entry.operation.parent
    for op in module.regions[0].blocks[0].operations:
        if isinstance(op, func.FuncOp) and op.sym_name.value == name and PREPARE_ATTR in op.attributes:
            return op
    raise PipelineError("mlirc-host-wrapper", f"entry {entry.sym_name.value} has no prepare function {name}")


def prepare_function(entry: func.FuncOp) -> func.FuncOp | None:
    return _prepare_of(entry) if PREPARED_ATTR in entry.attributes else None
