"""mode="reduce-overhead" on CUDA: a compiled graph replayed as one CUDA graph.

The first call runs normally (it loads the Triton modules and cuBLAS handles that
capture cannot create); the second captures the graph into static buffers; every
later call copies its inputs in, replays, and returns the static outputs (new
tensor objects over their buffers).  A replay overwrites those buffers, and a
result that changes under the caller's feet would be a wrong answer (Inductor's
reduce-overhead does that), so a graph is replayed only while nothing outside it
holds its outputs' storage (a storage's use count: a result kept, a view of it, a
training forward's saved activations).  A caller that keeps the last result while
calling again (`y = model(x)` in a loop) gets a second graph of its own buffers and
the two alternate; one that keeps both gets a plain call, whose results are fresh.
Copying the outputs out instead cost GPT-2's 823 MB of logits at batch 32 a
read and a write per call (~0.6 ms of a 12 ms replay on the H100).

Static inputs -- Dynamo's parameters and buffers, and any nn.Parameter -- are
captured in place: no copy per call, and a replay reads their current values (an
optimizer's in-place update included).  A replay checks only their addresses, not
their shapes: Dynamo guards those (parameters' shapes are static), and a model has
hundreds of them (ResNet-50: 267), where a full signature per call cost ~1 ms of
Python against a 1.7 ms replay.  Any other tensor is copied into its static buffer;
a call where one differs in shape, strides, dtype or device, or a static input
moved (`p.data = ...`), or another argument differs, is captured again.  A graph
that cannot be captured (a host sync inside) runs uncaptured from then on, with a
warning.

A graph that writes its inputs (an optimizer step: parameters and their state; a
training batch norm's running statistics) writes a static one in place on every
replay, and the capture's warm-up run, which really runs, must not count as an
update: those inputs are restored after it (one copy of each, at capture time).  A
result that is such an input itself is returned as the caller's tensor, and its
storage -- the caller's own -- never keeps a replay back.

A training backward reads the activations its forward saved: where that forward is
a captured graph too, they lie in its static output buffers, at the same addresses
every step.  The backward's graph reads them there (as Inductor's cudagraph trees
do) rather than copying each into a buffer of its own per call (BERT's 40-odd
saved tensors: 40 copy launches, ~0.3 ms of a 2 ms host-bound step).  A replay
checks their addresses and layouts; where they moved (the forward ran uncaptured,
or from its second graph) it replays another graph that matches, or captures one
(up to MAX_CAPTURES per signature, the least recently used given up).  The
backward's graph holds no reference to them, so the forward's buffers are free
again once autograd drops the saved tensors.

Prepared values (work on parameters alone, passes/hoist_frozen.py) are read from
their cache in place too: a region's wrapper tells the capture which caches it read
(`note_capture`), and each replay first refreshes those whose frozen arguments
changed, into the same buffers.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch

log = logging.getLogger(__name__)

# While a graph is captured: the prepared caches its wrappers read, with their
# frozen arguments (appended by note_capture).
_noted: list[tuple[Any, tuple]] | None = None


def note_capture(prepared: Any, frozen: tuple) -> None:
    """Called by a wrapper that read cached prepared values while a graph captured it."""
    if _noted is not None:
        _noted.append((prepared, frozen))


MAX_GRAPHS = 2  # per signature: the last result kept while calling again
MAX_CAPTURES = 4  # per signature, of inputs at other addresses: a forward's two graphs

# The storage (by address) of each live captured graph's outputs -> that capture: an
# input found here is read where it is by a graph captured on it.
_graph_outputs: weakref.WeakValueDictionary[int, _Capture] = weakref.WeakValueDictionary()


def _aliases(value: Any) -> Any:
    """The static outputs as new tensor objects, so that each one the caller keeps
    counts as a use of its storage.  (`detach`, not `view`: a forward returns its
    saved activations too, BERT's ~80 tensors a step, and detach costs a seventh.)"""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_aliases(v) for v in value)
    return value


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _in_graph_output(t: torch.Tensor) -> bool:
    return t.untyped_storage().data_ptr() in _graph_outputs


def _use_count(storage: torch.UntypedStorage) -> int:
    return torch._C._storage_Use_Count(storage._cdata)


class _Capture:
    """One captured graph and what a call must match to replay it."""

    def __init__(self, args: tuple, static: frozenset[int], written: frozenset[int]) -> None:
        tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        self.static = [i for i in tensors if i in static]
        # other graphs' outputs (a captured forward's saved activations): read in place
        self.elsewhere = [i for i in tensors if i not in static and i not in written and _in_graph_output(args[i])]
        self.copied = [i for i in tensors if i not in static and i not in self.elsewhere]
        self.values = [(i, a) for i, a in enumerate(args) if not isinstance(a, torch.Tensor)]
        self.addresses = [args[i].data_ptr() for i in self.static]
        self.elsewhere_addresses = [args[i].data_ptr() for i in self.elsewhere]
        self.unpinned = sorted(self.copied + self.elsewhere)  # any address: layouts checked
        self.layouts = [self._layout(args[i]) for i in self.unpinned]
        copied = set(self.copied)
        self.inputs = [a.clone() if i in copied else a for i, a in enumerate(args)]
        self.graph = torch.cuda.CUDAGraph()
        self.output: Any = None
        self.prepared: list[tuple[Any, tuple]] = []  # the caches the graph reads
        self.storages: list[tuple[torch.UntypedStorage, int]] = []  # each output storage, its own uses
        self.passed_through: list[int | None] = []  # per output: the input it is, if one read in place

    def hold_outputs(self, output: Any) -> None:
        """Keep the captured outputs and count the uses of their storage that are this
        graph's own (the outputs themselves, several where they share a buffer).  An
        output that is a static input itself (written in place) is the caller's."""
        self.output = output
        in_place = self.static + self.elsewhere
        inputs = {id(self.inputs[i]): i for i in in_place}
        self.passed_through = [inputs.get(id(t)) for t in (output if isinstance(output, (tuple, list)) else ())]
        callers = {self.inputs[i].untyped_storage().data_ptr() for i in in_place}
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage() for t in _tensors(output)}
        kept = [s for ptr, s in storages.items() if ptr not in callers]
        for i in self.elsewhere:  # a use of the other graph's storage would keep it from replaying
            self.inputs[i] = None
        self.storages = [(s, _use_count(s)) for s in kept]  # counted with `storages` alone alive
        for s in kept:
            _graph_outputs[s.data_ptr()] = self

    def outputs_free(self) -> bool:
        """Is nothing outside the graph holding its outputs, so that a replay may overwrite them?"""
        return all(_use_count(s) <= own for s, own in self.storages)

    @staticmethod
    def _layout(t: torch.Tensor) -> tuple:
        return (t.shape, t.stride(), t.dtype, t.device)

    def same_signature(self, args: tuple) -> bool:
        """Could a graph of this signature run `args` (one captured on them, or this one)?"""
        return (
            [args[i].data_ptr() for i in self.static] == self.addresses
            and [self._layout(args[i]) for i in self.unpinned] == self.layouts
            and all(args[i] is v or args[i] == v for i, v in self.values)
        )

    def reads(self, args: tuple) -> bool:
        """Does this graph read `args` where they are?  (Its signature checked.)"""
        return [args[i].data_ptr() for i in self.elsewhere] == self.elsewhere_addresses

    def replay(self, args: tuple) -> Any:
        inputs = self.inputs
        for i in self.copied:
            inputs[i].copy_(args[i])
        for prepared, frozen in self.prepared:
            prepared.refresh_in_place(frozen)
        self.graph.replay()
        output = _aliases(self.output)
        if any(i is not None for i in self.passed_through):
            output = type(output)(v if i is None else args[i] for v, i in zip(output, self.passed_through, strict=True))
        return output


class CudaGraphed:
    def __init__(self, fn: Callable, static_inputs: Iterable[int] = (), written: Iterable[int] = ()) -> None:
        self.fn = fn
        self.static = frozenset(static_inputs)
        self.written = frozenset(written)  # inputs the graph writes (WritesInputs' targets)
        self.calls = 0
        self.failed = False
        self.captures: list[_Capture] = []  # of one signature, up to MAX_GRAPHS

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.failed or self.calls == 1:
            return self.fn(*args)
        if self.captures and not self.captures[0].same_signature(args):
            self.captures = []
        readers = [c for c in self.captures if c.reads(args)]
        capture = next((c for c in readers if c.outputs_free()), None)
        if capture is None:
            if len(readers) >= MAX_GRAPHS:  # every graph's results are still held
                return self.fn(*args)
            try:
                capture = self._capture(args)
            except RuntimeError as err:  # e.g. an eager fallback op that syncs with the host
                self.failed, self.captures = True, []
                warnings.warn(f"mlirc: reduce-overhead: this graph runs without CUDA graphs: {err}", stacklevel=2)
                return self.fn(*args)
            if len(self.captures) == MAX_CAPTURES:
                self.captures.pop(0)
            self.captures.append(capture)
        elif capture is not self.captures[-1]:  # least recently used first
            self.captures.remove(capture)
            self.captures.append(capture)
        return capture.replay(args)

    def _capture(self, args: tuple) -> _Capture:
        static = self.static | {i for i, a in enumerate(args) if isinstance(a, torch.nn.Parameter)}
        capture = _Capture(args, static, self.written)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        # the warm-up updates what it writes in place; a copied input is copied in again
        # before each replay, a static one is put back
        before = {i: args[i].clone() for i in capture.static if i in self.written}
        with torch.cuda.stream(stream):
            self.fn(*capture.inputs)  # settle allocations before capture
        torch.cuda.current_stream().wait_stream(stream)
        with torch.no_grad():
            for i, value in before.items():
                args[i].copy_(value)
        global _noted
        _noted = capture.prepared
        try:
            with torch.cuda.graph(capture.graph):
                output = self.fn(*capture.inputs)
        finally:
            _noted = None
        capture.hold_outputs(output)
        log.info(
            "mlirc: captured a CUDA graph (%d inputs, %d in place, %d read from other graphs' outputs)",
            len(args), len(capture.static), len(capture.elsewhere),
        )  # fmt: skip
        return capture
