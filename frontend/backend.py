"""The `mlirc` Dynamo backend: AOTAutograd -> partition -> compile regions.

`torch.compile(model, backend="mlirc")` reaches `mlirc_backend` through the
`torch_dynamo_backends` entry point (or `import mlirc`, which registers it).
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._functorch.partitioners import min_cut_rematerialization_partition

from mlirc.backends import backend_for
from mlirc.config import config, parse_options
from mlirc.errors import MlircError, UnsupportedOpError
from mlirc.frontend import dynamic, partitioner, training_layouts
from mlirc.frontend.compile import SymbolicRegion, compile_region
from mlirc.frontend.decompositions import decomposition_table
from mlirc.frontend.importer import EAGER_STRIDES, FROZEN_META, RESULT_ROLES_META
from mlirc.frontend.library_kernels import is_library_kernel
from mlirc.frontend.lowerings.api import computes_a_size
from mlirc.frontend.stats import stats
from mlirc.frontend.written_inputs import WritesInputs, take_input_writes

log = logging.getLogger(__name__)


def _compute_nodes(gm: fx.GraphModule) -> int:
    """The graph's ATen ops, but those that compute sizes (sym_size of a symbolic graph)."""
    return sum(
        1
        for n in gm.graph.nodes
        if n.op == "call_function" and n.target.__class__.__name__ == "OpOverload" and not computes_a_size(n)
    )


def _device_of(example_inputs: Sequence[Any]) -> torch.device:
    """Where the graph computes: eager lets 0-d CPU tensors (Dynamo's dynamic floats,
    a user's torch.tensor(2.0)) join CUDA ones, so any CUDA tensor decides."""
    devices = [x.device for x in example_inputs if isinstance(x, torch.Tensor)]
    return next((d for d in devices if d.type != "cpu"), torch.device("cpu"))


def _cpu_scalars_to(device: torch.device, fn: Callable, example_inputs: Sequence[Any]) -> Callable:
    """`fn` with the 0-d CPU tensor arguments of a CUDA graph copied to the device per
    call: its kernels read every tensor from device memory (with dynamic=True, Dynamo
    passes Python floats as such tensors: addcmul's value, softplus's beta)."""
    positions = [
        i
        for i, x in enumerate(example_inputs)
        if isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.dim() == 0
    ]
    if device.type == "cpu" or not positions:
        return fn

    def call(*args: Any) -> Any:
        moved = list(args)
        for i in positions:
            moved[i] = args[i].to(device, non_blocking=True)
        return fn(*moved)

    return call


class _RegionModule(torch.nn.Module):
    """Stands in for a fused submodule: calls the compiled region."""

    def __init__(self, call: Callable, single_output: bool) -> None:
        super().__init__()
        self.call = call
        self.single_output = single_output

    def forward(self, *args: torch.Tensor) -> Any:
        out = self.call(*args)
        return out[0] if self.single_output else out


def _dynamo_control_flow(err: Exception) -> bool:
    """Dynamo's own signals (restart the analysis, skip a frame) pass through a
    backend as exceptions: they are not failures, and swallowing one breaks Dynamo.
    A data-dependent output (`.item()` of a traced tensor) is one too: Dynamo splits
    the graph around it, so the rest still compiles, where catching it here would
    run the whole graph eagerly."""
    return isinstance(
        err, (torch._dynamo.exc.TorchDynamoException, *torch._dynamo.exc.exceptions_allowed_to_be_fallback)
    )


def _try_compile(gm: fx.GraphModule, device: torch.device, autotune: bool = False) -> Callable | None:
    st = stats()
    try:
        region = compile_region(gm, device, autotune)
    except Exception as err:  # not only MlircError: no internal error reaches the user
        if _dynamo_control_flow(err):
            raise
        st.failed_regions += 1
        st.fallback_nodes += _compute_nodes(gm)
        text = str(err) if isinstance(err, MlircError) else f"internal error: {type(err).__name__}: {err}"
        st.fallback_ops[f"region failed: {text.splitlines()[0][:120]}"] += 1
        if config.strict:
            raise
        log.debug("region failed", exc_info=True)
        warnings.warn(f"mlirc: a region runs eagerly because compilation failed: {text}", stacklevel=2)
        return None
    st.compiled_regions += 1
    st.compiled_nodes += _compute_nodes(gm)
    st.kernels += region.kernel_count
    return region.call


def _output_is_single(gm: fx.GraphModule) -> bool:
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return not isinstance(out, (tuple, list))


# torch.compile's modes, as Inductor reads them; a mode that does not apply to the
# device (CUDA graphs on a CPU) is accepted and has no effect there.
MODES = frozenset({"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"})
CUDA_GRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})
AUTOTUNE_MODES = frozenset({"max-autotune", "max-autotune-no-cudagraphs"})


def compile_fx_graph(
    gm: fx.GraphModule,
    example_inputs: Sequence[Any],
    mode: str = "default",
    user_outputs: list | None = None,
    inference: bool = False,
    forward: bool = False,
) -> Callable:
    """An AOTAutograd fw/bw compiler: a callable with the graph's semantics, taking
    its arguments boxed (one list), which is the convention AOTAutograd expects.
    `user_outputs`: the Dynamo graph's outputs (fake tensors), whose strides the
    forward graph's results keep (see _keep_user_strides).  `inference`: autograd
    was off when Dynamo handed the graph over (AOTAutograd compiles with it off).
    `forward`: the forward (or inference) graph, whose results AOTAutograd's metadata
    describes (see _mark_result_roles)."""
    autotune = mode in AUTOTUNE_MODES
    if inference:
        _mark_frozen(gm)
    written = take_input_writes(gm)
    saved_strides, copied = None, []
    if forward:
        saved_from = _mark_result_roles(gm, inference, written)
        saved_strides = training_layouts.keep_saved_channels_last(gm, saved_from)
    else:
        _mark_result_roles(gm, inference, written, with_metadata=False)
        copied = training_layouts.follow_input_strides(gm, example_inputs)
    if dynamic.is_symbolic(example_inputs):
        fn = _compile_symbolic(gm, example_inputs, autotune, user_outputs)
    else:
        fn = _compile_static(gm, example_inputs, autotune, user_outputs)
    weight_copies = []
    if saved_strides is not None and not isinstance(fn, fx.GraphModule):  # compiled whole: as recorded
        training_layouts.report_output_strides(saved_strides[len(written) :])  # what AOTAutograd sees
        weight_copies = [(r - len(written), a) for r, a in training_layouts.saved_weight_copies(gm, saved_strides)]
    if copied:
        fn = training_layouts.as_traced(fn, copied)
    if not forward and not inference:
        fn = training_layouts.checks_weight_versions(fn, example_inputs)
    device = _device_of(example_inputs)
    if mode in CUDA_GRAPH_MODES and device.type == "cuda":
        # Dynamo's static inputs index the forward's (or inference graph's) arguments;
        # a backward reads its parameters in place as nn.Parameters, and the forward's
        # saved activations where its graph left them (backends/gpu/cudagraphs.py).
        # A CPU scalar is copied to the GPU per call (below): never read in place.
        static = [
            i for i in (_static_inputs() if forward else []) if i < len(example_inputs)
            and isinstance(example_inputs[i], torch.Tensor) and example_inputs[i].device == device
        ]  # fmt: skip
        fn = backend_for(device.type).graph_replayed(fn, static, written)
    fn = _cpu_scalars_to(device, fn, example_inputs)  # outside the graph: a copy from the host
    if written:
        fn = WritesInputs(fn, written)
    if weight_copies:
        fn = training_layouts.TagsWeightCopies(fn, weight_copies)
    return _boxed(fn)


def _boxed(fn: Callable) -> Callable:
    """AOTAutograd's boxed function: the argument list goes to the wrapper, which
    empties it and drops each argument after its last use (a backward frees the
    activations it has read as it goes, as Inductor's does); through
    make_boxed_func where some layer (a CUDA graph, lifted constants) keeps them."""
    call_list = getattr(fn, "call_list", None)
    if call_list is None:
        return make_boxed_func(fn)

    def boxed(args: list) -> Any:
        return call_list(args)

    boxed._boxed_call = True  # type: ignore[attr-defined]
    return boxed


def _first_result(call: Callable) -> Callable:
    """A one-result graph's call (the wrapper returns a tuple)."""

    def first(*args: Any) -> Any:
        return call(*args)[0]

    if hasattr(call, "call_list"):
        first.call_list = lambda args: call.call_list(args)[0]  # type: ignore[attr-defined]
    return first


def _static_inputs() -> list[int]:
    """The forward graph's parameters and buffers (Dynamo's static inputs), which a
    CUDA graph reads in place."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None)
    return list(metadata.static_input_indices) if metadata is not None else []


def _mark_result_roles(
    gm: fx.GraphModule, inference: bool, written: list[int], with_metadata: bool = True
) -> int | None:
    """What becomes of the forward's results (importer.RESULT_ROLES_META): the first
    ones are new values of inputs -- written into them (`written`, see
    frontend/written_inputs.py), then those AOTAutograd copies back (mutations it
    keeps out of the graph) -- the kernel making one may write straight into its
    input; in training, the results from `num_forward` on are saved for the backward
    alone (returned: None in inference or without the metadata, which describes
    the forward graph alone: `with_metadata`)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    updates = {position: placeholders[index] for position, index in enumerate(written)}
    output = next(n for n in gm.graph.nodes if n.op == "output")
    metadata = getattr(torch._guards.TracingContext.try_get(), "fw_metadata", None) if with_metadata else None
    if metadata is None or len(metadata.input_info) != len(placeholders):
        output.meta[RESULT_ROLES_META] = (updates, None)
        return None
    for position, index in enumerate(metadata.mutated_inp_runtime_indices):
        info = metadata.input_info[index]
        if info.mutates_data and not info.mutates_metadata:
            updates[len(written) + position] = placeholders[index]
    saved_from = None if inference else len(written) + metadata.num_forward
    output.meta[RESULT_ROLES_META] = (updates, saved_from)
    return saved_from


def _mark_frozen(gm: fx.GraphModule) -> None:
    """In inference (autograd off when Dynamo hands the graph over, as Inductor's
    freezing asks), the placeholders that are parameters and buffers -- Dynamo's
    static inputs, less any the graph mutates -- are marked frozen: work on them
    alone runs once and is cached until one changes (passes/hoist_frozen.py)."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None)
    if not config.freeze or metadata is None:
        return
    mutated = {i for i, info in enumerate(metadata.input_info) if info.mutates_data or info.mutates_metadata}
    static = set(metadata.static_input_indices) - mutated
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        if i in static and isinstance(node.meta.get("val"), torch.Tensor):
            node.meta[FROZEN_META] = True


def _compile_static(
    gm: fx.GraphModule, example_inputs: Sequence[Any], autotune: bool, user_outputs: list | None
) -> Callable:
    if user_outputs is not None:
        _keep_user_strides(gm, user_outputs)
    try:
        return _compile_fx_graph(gm, example_inputs, autotune)
    except Exception as err:  # partitioning failed (a region's own failure is handled in _try_compile)
        return _graph_failed(gm, "partitioning", err)


def _graph_failed(gm: fx.GraphModule, step: str, err: Exception) -> Callable:
    if config.strict or _dynamo_control_flow(err):
        raise err
    st = stats()
    st.failed_regions += 1
    st.fallback_nodes += _compute_nodes(gm)
    st.fallback_ops[f"graph failed: {type(err).__name__}: {str(err)[:120]}"] += 1
    log.debug("graph failed", exc_info=True)
    warnings.warn(f"mlirc: a graph runs eagerly because {step} failed: {err!r}", stacklevel=3)
    return gm


def _compile_symbolic(
    gm: fx.GraphModule, example_inputs: Sequence[Any], autotune: bool, user_outputs: list | None
) -> Callable:
    """A graph with symbolic sizes, compiled per concrete size (frontend/dynamic.py);
    the sizes Dynamo traced with are compiled now, as a static graph is."""

    def compile_static(static: fx.GraphModule, tensors: list, outputs: list | None) -> Callable:
        return _compile_static(static, tensors, autotune, outputs)

    def specialize_failed(err: Exception) -> Callable:
        return _graph_failed(gm, "specializing its symbolic sizes", err)

    def symbolic() -> _SymbolicGraph:
        unsupported = partitioner.unsupported_nodes(gm, symbolic=True)
        if unsupported:
            node, reason = unsupported[0]
            raise UnsupportedOpError(str(node.target), reason)
        return _SymbolicGraph(gm, _device_of(example_inputs))

    stats().symbolic_graphs += 1
    specialized = dynamic.SizeSpecialized(
        gm, example_inputs, compile_static, user_outputs, specialize_failed, None if autotune else symbolic
    )
    specialized.prepare(dynamic.hinted_arguments(example_inputs))
    return specialized


class _SymbolicGraph:
    """A whole graph imported with symbolic sizes, compiled per size by binding them
    (frontend/compile.py SymbolicRegion), counted in the stats as a static compile is."""

    def __init__(self, gm: fx.GraphModule, device: torch.device) -> None:
        self.region = SymbolicRegion(gm, device)
        stats().symbolic_imports += 1
        self.single = _output_is_single(gm)
        self.nodes = _compute_nodes(gm)
        self.counted = False  # the wrapper for every size, in the stats

    def sizes(self, args: list) -> tuple[int, ...]:
        return self.region.sizes(args)

    def compile_at(self, sizes: tuple[int, ...], eager: list, hot: bool = False) -> Callable:
        compiled = self.region.compile_at(sizes, eager, hot)
        st = stats()
        st.graphs += 1
        st.compiled_regions += 1
        st.compiled_nodes += self.nodes
        st.kernels += compiled.kernel_count
        st.symbolic_binds += 1
        call = compiled.call
        return call if not self.single else (lambda *a: call(*a)[0])

    def every_size(self, eager: Callable[[], list]) -> tuple[Callable, Callable[..., bool]] | None:
        """The region's one wrapper for every size (counted once as a compiled graph)."""
        every = self.region.every_size(eager)
        if every is None:
            return None
        if not self.counted:
            self.counted = True
            st = stats()
            st.graphs += 1
            st.compiled_regions += 1
            st.compiled_nodes += self.nodes
            st.kernels += self.region.every_size_kernels()
        call, fits = every
        return (call if not self.single else (lambda *a: call(*a)[0])), fits


def _keep_user_strides(gm: fx.GraphModule, user_outputs: list) -> None:
    """Decompositions change strides: a decomposed batch norm follows its input's
    layout where eager's kernel returns a contiguous tensor.  The Dynamo graph's
    outputs carry eager's strides, so where the forward graph's results are those
    outputs one for one (inference, nothing mutated or aliased), its output node
    records them for the importer (Inductor keeps them the same way)."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    if len(results) != len(user_outputs):
        return
    strides = []
    for node, user in zip(results, user_outputs, strict=True):
        meta = node.meta.get("val") if isinstance(node, fx.Node) else None
        same = isinstance(meta, torch.Tensor) and isinstance(user, torch.Tensor)
        if not same or tuple(meta.shape) != tuple(user.shape) or meta.dtype != user.dtype:
            return
        strides.append(tuple(user.stride()))
    output.meta[EAGER_STRIDES] = strides


def _compile_fx_graph(gm: fx.GraphModule, example_inputs: Sequence[Any], autotune: bool = False) -> Callable:
    st = stats()
    st.graphs += 1
    device = _device_of(example_inputs)
    unsupported = partitioner.unsupported_nodes(gm)
    if not unsupported:
        call = _try_compile(gm, device, autotune)
        if call is not None:
            return call if not _output_is_single(gm) else _first_result(call)
        return gm
    for node, reason in unsupported:
        op = str(node.target)
        if is_library_kernel(node):
            st.library_nodes += 1
            st.library_ops[op] += 1
            continue
        if config.strict:
            raise UnsupportedOpError(op, reason)
        partitioner.log_fallback_once(op, reason)
        st.fallback_nodes += 1
        st.fallback_ops[f"{op}: {reason}"] += 1
    split = partitioner.partition(gm)
    for name, sub in list(split.named_children()):
        if not name.startswith("fused_") or not isinstance(sub, fx.GraphModule):
            continue
        call = _try_compile(sub, device, autotune)
        if call is not None:
            setattr(split, name, _RegionModule(call, _output_is_single(sub)))
    split.recompile()
    split.call_list = _taking_argument_list(split)
    return split


class _ArgumentList(fx.CodeGen):
    """forward(self, args): the placeholders unpacked from one list, which is then
    emptied (AOTAutograd's boxed convention).  Each is dropped after its last use, as
    FX's code drops every value: a split backward frees the activations it has read
    as it goes, where a caller's argument tuple kept them all to the end."""

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str, **kwargs: Any) -> str:
        names = [v.split(":")[0].split("=")[0].strip() for v in free_vars if v.strip() != "self"]
        head = super().gen_fn_def(["self", "args"], maybe_return_annotation, **kwargs)
        return head if not names else f"{head}\n    {', '.join(names)}, = args\n    args.clear()"


def _taking_argument_list(split: fx.GraphModule) -> Callable[[list], Any]:
    """`split` called with its arguments in one list (see _ArgumentList); `split`
    itself keeps taking them one by one (a CUDA graph replays it so)."""
    graph = fx.Graph()
    graph.output(graph.graph_copy(split.graph, {}))
    graph.set_codegen(_ArgumentList())
    return fx.GraphModule(split, graph)


def mlirc_backend(
    gm: fx.GraphModule, example_inputs: Sequence[Any], mode: str | None = None, options: dict | None = None
) -> Callable:
    """The Dynamo backend entry point; `mode` is torch.compile's (see MODES),
    `options` mlirc's settings for this compile (config.parse_options), over the
    environment's, for everything compiled from this graph: its backward, and each
    size or region compiled when it is first called."""
    mode = mode or "default"
    if mode not in MODES:
        raise MlircError(f"mlirc: unknown torch.compile mode {mode!r}; expected one of {sorted(MODES)}")
    settings = parse_options(options)
    with config.overriding(settings):
        return _compile_dynamo_graph(gm, example_inputs, mode, settings)


def _under_settings(compiler: Callable, settings: dict[str, Any]) -> Callable:
    """An AOTAutograd compiler that compiles, and runs (a call may compile a new
    size), with `settings` in force."""
    if not settings:
        return compiler

    def compile_under(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        with config.overriding(settings):
            boxed = compiler(gm, example_inputs)

        def call(args: list) -> Any:
            with config.overriding(settings):
                return boxed(args)

        call._boxed_call = True  # type: ignore[attr-defined]
        return call

    return compile_under


def _compile_dynamo_graph(
    gm: fx.GraphModule, example_inputs: Sequence[Any], mode: str, settings: dict[str, Any]
) -> Callable:
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    user_outputs = [n.meta.get("example_value") if isinstance(n, fx.Node) else None for n in results]
    try:
        return aot_autograd(
            fw_compiler=_under_settings(
                functools.partial(
                    compile_fx_graph,
                    mode=mode,
                    user_outputs=user_outputs,
                    inference=not torch.is_grad_enabled(),
                    forward=True,
                ),
                settings,
            ),
            bw_compiler=_under_settings(functools.partial(compile_fx_graph, mode=mode), settings),
            decompositions=decomposition_table(),
            # Training: the forward saves what the backward cannot recompute cheaply;
            # pointwise chains between saved values are recomputed in the backward,
            # where they fuse into its kernels (as Inductor's partition).
            partition_fn=min_cut_rematerialization_partition,
            # Mutated inputs (an optimizer's state, batch norm's running statistics)
            # are written by the graph, not copied back per tensor by AOTAutograd's
            # runtime wrapper: see frontend/written_inputs.py.
            keep_inference_input_mutations=True,
        )(gm, example_inputs)
    except Exception as err:  # AOTAutograd itself failed (torch 2.11 asserts on some decomposed copies)
        if config.strict or _dynamo_control_flow(err):
            raise
        st = stats()
        st.failed_regions += 1
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
        st.fallback_ops[f"AOTAutograd failed: {type(err).__name__}: {first_line[:120]}"] += 1
        log.debug("AOTAutograd failed", exc_info=True)
        warnings.warn(f"mlirc: a graph runs eagerly because AOTAutograd failed on it: {err!r}"[:500], stacklevel=2)
        return gm
