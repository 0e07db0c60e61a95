"""Compile one supported FX region: import, run the stages, JIT, wrap.

On a pass failure the stage's input IR is written to a file and the error names
the pass and a ready `mlirc-opt` command that reproduces it.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.fx as fx
from mlir import ir

from mlirc.backends import backend_for
from mlirc.config import config
from mlirc.dialects import layouts, make_context, shapes
from mlirc.dialects.attributes import PREPARE_ATTR, RESULT_EAGER_ATTR, RESULT_LAYOUTS_ATTR
from mlirc.errors import MlircError, PipelineError, SizeAssumptionFailed
from mlirc.frontend import every_size
from mlirc.frontend.hot_sizes import HotSizeCall
from mlirc.frontend.importer import FxImporter, constant_inputs
from mlirc.frontend.lowerings.api import node_meta
from mlirc.frontend.native_memory import release_freed_memory
from mlirc.frontend.stats import stats
from mlirc.passes import bind_sizes
from mlirc.passes.base.ir_utils import has_deferred
from mlirc.passes.base.registry import format_element, run_passes
from mlirc.passes.cpu.merge_small_kernels import CpuMergeSmallKernelsOptions
from mlirc.passes.cpu.parallelize import CpuParallelizeOptions
from mlirc.passes.cpu.vectorize import CpuVectorizeOptions
from mlirc.passes.gpu.matmul import GpuMatmulOptions
from mlirc.passes.outline_library_calls import OutlineLibraryCallsOptions
from mlirc.passes.pipelines import AFTER_BINDING, SYMBOLIC_STAGES, configured
from mlirc.passes.split_reductions import SplitReductionsOptions

log = logging.getLogger(__name__)


@dataclass
class CompiledRegion:
    call: Callable
    wrapper_source: str
    kernel_count: int
    stage_ir: dict[str, str]


def _dump(name: str, stage: str, text: str, ext: str = "mlir") -> str | None:
    if not config.dump_dir:
        return None
    os.makedirs(config.dump_dir, exist_ok=True)
    path = os.path.join(config.dump_dir, f"{name}.{stage}.{ext}")
    with open(path, "w") as f:
        f.write(text)
    return path


PassOptions = dict[str, object]  # pass name -> its options dataclass


def pass_options(device_type: str = "cpu") -> PassOptions:
    """The passes' options for a compile on `device_type`: the backend's policy
    (PASS_OPTIONS) with the config's settings (MLIRC_*) on top, read once per
    compile: passes themselves never read the config or ask for the target."""
    backend = backend_for(device_type)
    settings: dict[str, tuple[type, dict[str, object]]] = {
        "mlirc-outline-library-calls": (OutlineLibraryCallsOptions, {"library_gemm": config.library_gemm}),
        "mlirc-cpu-vectorize": (
            CpuVectorizeOptions,
            {"vector_bytes": config.vector_bytes, "vectorize": config.vectorize},
        ),
        "mlirc-cpu-parallelize": (CpuParallelizeOptions, {"parallel_min_kib": config.parallel_min_kib}),
        "mlirc-cpu-merge-small-kernels": (
            CpuMergeSmallKernelsOptions,
            {"max_kib": config.merge_kib, "large": bool(config.merge_large)},
        ),
        "mlirc-gpu-matmul": (GpuMatmulOptions, {"mode": config.gpu_gemm, "tile": config.gpu_gemm_tile}),
    }
    options: PassOptions = dict(backend.pass_options)
    for name, (kind, values) in settings.items():
        options[name] = dataclasses.replace(options.get(name) or kind(), **values)  # type: ignore[type-var]
    return options


def _repro(stage_input: str, name: str, pipeline: str) -> str:
    stage = pipeline.split("{")[0].removeprefix("mlirc-stage-")
    return f"mlirc-opt {_saved(stage_input, name, f'before-{stage}')} -p '{pipeline}'"


def _saved(text: str, name: str, what: str, ext: str = "mlir") -> str:
    """`text` in the dump folder, or else in a temporary file: the path a repro names."""
    path = _dump(name, what, text, ext)
    if path is None:
        fd, path = tempfile.mkstemp(prefix=f"mlirc-{name}-{what}-", suffix=f".{ext}")
        with os.fdopen(fd, "w") as f:
            f.write(text)
    return path


def _step(step: str, run: Callable, repro: Callable[[], str | None] = lambda: None):
    """run(), with any exception that is not already an MlircError reported as the
    failure of `step` (an internal error: a bug, but the region still falls back)."""
    try:
        return run()
    except MlircError:
        raise
    except Exception as err:
        log.debug("%s failed", step, exc_info=True)
        raise PipelineError(step, f"internal error: {type(err).__name__}: {err}", repro()) from err


def _run_stage(
    module: ir.Module,
    stage: str,
    name: str,
    stage_ir: dict[str, str],
    options: PassOptions,
    before: str,
    keep_text: bool = True,
) -> None:
    """`before` is the module's text now (the previous stage's, kept in `stage_ir`:
    printing a large module again costs ~15 ms a stage).  Without `keep_text` the
    result is printed only to be dumped: the last stage's, which no later stage
    starts from (the CPU kernels in the LLVM dialect: 0.13 s to print for resnet)."""
    pipeline = configured(stage, options)
    start = time.perf_counter()
    try:
        run_passes(module, [pipeline], stage=f"mlirc-stage-{stage}")
    except PipelineError as err:  # any kind (a stage's caller only asks whether it failed) gets the repro
        raise PipelineError(err.pass_name, str(err).split(": ", 1)[-1], _repro(before, name, pipeline)) from err
    log.info("%s: stage %s in %.1f ms (%s)", name, stage, 1e3 * (time.perf_counter() - start), pipeline)
    if keep_text or config.dump_dir:
        stage_ir[stage] = str(module)
        _dump(name, stage, stage_ir[stage])
    _trace(name, stage, lambda: stage_ir.get(stage) or str(module))


def _trace(name: str, stage: str, text: Callable[[], str]) -> None:
    """A stage's IR as a tlparse artifact (TORCH_TRACE); `text` runs only when traced."""
    torch._logging.trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": f"mlirc_{name}_{stage}", "encoding": "string"},
        payload_fn=text,
    )


class _Driver:
    """The compile driver's services to the backends (backends/base.py Driver)."""

    run_stage = staticmethod(_run_stage)
    step = staticmethod(_step)
    saved = staticmethod(_saved)
    dump = staticmethod(_dump)


DRIVER = _Driver()


def _with_none_outputs(call: Callable, is_none: list[bool]) -> Callable:
    """Put back the graph's None outputs (backward graphs have them) around the tensors."""

    def wrapped(*args: torch.Tensor) -> tuple:
        tensors = iter(call(*args))
        return tuple(None if none else next(tensors) for none in is_none)

    if hasattr(call, "call_list"):

        def wrapped_list(args: list) -> tuple:
            tensors = iter(call.call_list(args))
            return tuple(None if none else next(tensors) for none in is_none)

        wrapped.call_list = wrapped_list  # type: ignore[attr-defined]
    return wrapped


_region_numbers = itertools.count(1)  # next() is atomic: compiles on two threads get two names


def _with_constants(call: Callable, constants: list[torch.Tensor]) -> Callable:
    """The graph's lifted constants are the compiled function's trailing arguments."""

    def wrapped(*args: torch.Tensor) -> tuple:
        return call(*args, *constants)

    return wrapped


def compile_region(gm: fx.GraphModule, device: torch.device | None = None, autotune: bool = False) -> CompiledRegion:
    """`autotune` (mode="max-autotune"): on a GPU, time the GEMM variants and keep
    the fastest (mlirc.frontend.autotune)."""
    device = device or torch.device("cpu")
    options = pass_options(device.type)
    try:
        if autotune and device.type == "cuda":
            from mlirc.frontend import autotune as tuner

            if tuner.has_gemm(gm):
                return tuner.autotune_region(
                    gm, device, lambda overrides: _compile_region(gm, device, options | overrides)
                )
        return _compile_region(gm, device, options)
    finally:
        release_freed_memory()  # the contexts, modules and engines the compile dropped


def _import(gm: fx.GraphModule, device: torch.device, name: str) -> tuple[ir.Module, dict[str, str]]:
    backend_for(device.type).prepare()
    start = time.perf_counter()
    module = _step(
        "mlirc-import",
        lambda: FxImporter(make_context()).import_graph(gm, target=device.type),
        lambda: f"the FX graph is in {_saved(gm.print_readable(print_output=False), name, 'fx-graph', 'py')}",
    )
    stage_ir = {"mlirc": str(module)}
    nodes = len(gm.graph.nodes)
    log.info(
        "%s: %d FX nodes imported for %s in %.1f ms", name, nodes, device.type, 1e3 * (time.perf_counter() - start)
    )
    _dump(name, "mlirc", stage_ir["mlirc"])
    _trace(name, "mlirc", lambda: stage_ir["mlirc"])
    return module, stage_ir


def _compile_region(gm: fx.GraphModule, device: torch.device, options: PassOptions) -> CompiledRegion:
    name = f"region{next(_region_numbers)}"
    module, stage_ir = _import(gm, device, name)
    return _finish(gm, module, device, options, name, stage_ir, "mlirc")


def _finish(
    gm: fx.GraphModule,
    module: ir.Module,
    device: torch.device,
    options: PassOptions,
    name: str,
    stage_ir: dict[str, str],
    done: str,
    build: Callable[..., tuple[Callable, str, int]] | None = None,
) -> CompiledRegion:
    """The stages after `done` (a stage's name, or "mlirc": none) on `module`, then the
    call (made by `build`, the backend's where None)."""
    outputs = _outputs(gm)
    result_dtypes = [node_meta(n).dtype for n in outputs if n is not None]
    backend = backend_for(device.type)
    stages = backend.stages[backend.stages.index(done) + 1 :] if done in backend.stages else backend.stages
    with module.context:
        before = stage_ir[done]
        for stage in stages:
            _run_stage(module, stage, name, stage_ir, options, before)
            before = stage_ir[stage]
        build = build or backend.build
        start = time.perf_counter()
        call, source, kernel_count = build(module, name, stage_ir, result_dtypes, device, options, DRIVER)
    if any(PREPARE_ATTR in op.attributes for op in module.body.operations):
        stats().prepared_regions += 1
    log.info(
        "%s: %d kernels built for %s in %.1f ms (the kernel stage, code generation, the host wrapper)",
        name,
        kernel_count,
        device.type,
        1e3 * (time.perf_counter() - start),
    )
    _dump(name, "wrapper", source, ext="py")
    _trace(name, "wrapper", lambda: source)
    return CompiledRegion(_completed(gm, call, outputs), source, kernel_count, stage_ir)


def _outputs(gm: fx.GraphModule) -> list:
    outputs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def _completed(gm: fx.GraphModule, call: Callable, outputs: list) -> Callable:
    """The wrapper's call with the graph's None results and constant inputs put back."""
    if any(n is None for n in outputs):
        call = _with_none_outputs(call, [n is None for n in outputs])
    constants = constant_inputs(gm)
    if constants:
        call = _with_constants(call, constants)
    return call


def _check_bound_results(entry: ir.Operation, eager: list) -> None:
    """The bound results have eager's shapes (in their buffers' layouts), or the
    binding is refused: a wrong rule for a `?` dim never reaches a kernel."""
    results = ir.FunctionType(entry.attributes["function_type"].value).results
    result_layouts = layouts.decode(entry.attributes, RESULT_LAYOUTS_ATTR, len(eager))
    for i, ((shape, _), layout) in enumerate(zip(eager, result_layouts, strict=True)):
        expected = tuple(layout.buffer_shape(shape) if layout else shape)
        if shapes.shape_of(results[i]) != expected:
            raise PipelineError(
                "mlirc-bind-sizes", f"result {i} is {list(shapes.shape_of(results[i]))}, eager's {list(expected)}"
            )


@dataclass(frozen=True)
class _SharedKernels:
    """A symbolic graph's kernels compiled once, for every size (they take their
    sizes as arguments: passes/cpu/size_args.py, passes/gpu/lower_to_tt.py): the
    module after row fusion, which each size binds for its host wrapper, and the
    compiled kernels (the backend's Backend.compile_kernels)."""

    fused: str
    compiled: object
    kernel_count: int


@dataclass
class _Lowered:
    """A symbolic graph through the stages that ran on its `?` dims: each stage's
    text, and the last that ran (what each size binds); on the CPU, its kernels
    compiled for every size, once tried (None where they could not be)."""

    stage_ir: dict[str, str]
    bound_after: str
    shared: _SharedKernels | None = None
    shared_tried: bool = False


class SymbolicRegion:
    """A graph of symbolic sizes imported once, then compiled at each concrete size by
    binding its sizes (passes/bind_sizes.py) and running the stages after the last
    one that compiled its `?` dims (`bound_after`).
    The importer does not guard on a symbolic size: what it cannot import without
    (frontend/dynamic.py no_new_guards) raises here, and the caller compiles that
    graph per size from its FX graph instead.

    The linalg stage runs once, on `?` dims: what its passes must know a size to
    decide (a convolution's padded input) waits as a deferred mlirc op
    (passes/base/ir_utils.py defer), and the stage runs again after the binding.  Where an op
    cannot wait (StaticSizesNeeded: one on booleans) or the stage fails on a `?` dim,
    the sizes are bound right after import.  Where nothing waited, the stages up to
    kernel formation run on `?` dims too (SYMBOLIC_STAGES: fusion and outlining
    decide nothing on a row count), and the binding moves after the last that
    succeeded: a new size then only binds the kernels and compiles them, a step
    towards kernels that take their sizes at run time.

    A sum over a `?` length is compiled unsplit, under an assertion that it stays
    short (passes/split_reductions.py: a softmax over a sequence then waits for
    nothing).  A size that breaks it is compiled from a second lowering that assumes
    nothing (made on the first such size): that sum then waits for its size."""

    def __init__(self, gm: fx.GraphModule, device: torch.device, options: PassOptions | None = None) -> None:
        self.gm, self.device = gm, device
        self.options = pass_options(device.type) if options is None else options
        self.name = f"region{next(_region_numbers)}"
        module, stage_ir = _import(gm, device, self.name)
        self.context = module.context
        self.slots = bind_sizes.symbolic_slots(bind_sizes.entry_function(module.operation))
        short = dataclasses.replace(
            self.options.get("mlirc-split-reductions") or SplitReductionsOptions(), assume_short_sums=True
        )
        assuming = self.options | {"mlirc-split-reductions": short}
        self.lowered = self._lower(module, stage_ir, assuming, self.name)
        self._assuming_nothing: _Lowered | None = None
        self._every: tuple[Callable, Callable[..., bool]] | None | bool = None  # False: none
        stats().symbolic_lowered += self.lowered.bound_after != "mlirc"
        stats().symbolic_kernels += self.lowered.bound_after == "kernels"

    def _lower(self, module: ir.Module, stage_ir: dict[str, str], options: PassOptions, name: str) -> _Lowered:
        bound_after = "mlirc"
        with module.context:
            for stage in backend_for(self.device.type).stages:
                if stage not in SYMBOLIC_STAGES or (stage != "linalg" and has_deferred(module.operation)):
                    break  # what waits for its sizes is lowered after the binding, then fuses
                try:
                    _run_stage(module, stage, name, stage_ir, options, stage_ir[bound_after])
                except MlircError as err:
                    log.debug("%s: the %s stage on symbolic sizes failed, bound before it: %s", name, stage, err)
                    break
                bound_after = stage
        return _Lowered({k: stage_ir[k] for k in ("mlirc", bound_after)}, bound_after)

    def _without_assumptions(self) -> _Lowered:
        if self._assuming_nothing is None:
            text = self.lowered.stage_ir["mlirc"]
            module = ir.Module.parse(text, self.context)
            self._assuming_nothing = self._lower(module, {"mlirc": text}, self.options, f"{self.name}-deferring")
        return self._assuming_nothing

    def sizes(self, args: list) -> tuple[int, ...]:
        """The entry's symbolic sizes in a call with `args` (the graph's placeholders'
        values, in order): what mlirc-bind-sizes takes."""
        return tuple(int(args[i]) if d is None else int(args[i].shape[d]) for i, d in self.slots)

    def compile_at(self, sizes: tuple[int, ...], eager: list | None, hot: bool = False) -> CompiledRegion:
        """The region at `sizes`; `eager`: (shape, strides) per result, as eager's are.
        `hot`: the size is hot already (its own kernels are compiled at its next call)."""
        try:
            return self._compile_at(self.lowered, sizes, eager, hot)
        except SizeAssumptionFailed as err:
            log.debug("%s: %s; lowering it again without assumptions", self.name, err)
            stats().symbolic_assumption_misses += 1
            return self._compile_at(self._without_assumptions(), sizes, eager, hot)

    def _compile_at(
        self, lowered: _Lowered, sizes: tuple[int, ...], eager: list | None, hot: bool = False
    ) -> CompiledRegion:
        name = f"{self.name}-{'x'.join(map(str, sizes))}"
        shared = self._shared_kernels(lowered)
        if shared is None:
            return self._compile_per_size(lowered, sizes, eager, name)
        try:
            region = self._wrap_shared(shared, sizes, eager, name)
        except SizeAssumptionFailed:
            raise
        except MlircError as err:  # this size's own kernels, as without shared ones
            log.debug("%s: the kernels for every size failed at %s: %s", self.name, sizes, err)
            return self._compile_per_size(lowered, sizes, eager, name)
        static = lambda _args: self._compile_per_size(lowered, sizes, eager, f"{name}-hot").call  # noqa: E731
        return dataclasses.replace(region, call=HotSizeCall(region.call, static, hot))

    def every_size(self, eager: Callable[[], list]) -> tuple[Callable, Callable[..., bool]] | None:
        """(call, fits): one host wrapper for every size over the kernels compiled for
        every size (backends/symbolic_wrapper.py, CPU or GPU), and whether a call's sizes
        hold its size assertions; None where there are no such kernels or the
        wrapper needs a size's value (each size is then bound).  `eager()`: (shape,
        strides) per result, in Dynamo's SymInts (asked once, at the build).  Built once."""
        if self._every is None:
            self._every = self._build_every_size(eager()) or False
        return self._every or None

    def every_size_kernels(self) -> int:
        shared = self.lowered.shared
        return shared.kernel_count if shared is not None else 0

    def _build_every_size(self, eager: list) -> tuple[Callable, Callable[..., bool]] | None:
        shared = self._shared_kernels(self.lowered)
        if shared is None:
            return None
        name = f"{self.name}-every-size"
        module = ir.Module.parse(shared.fused, self.context)
        outputs = _outputs(self.gm)
        dtypes = [node_meta(n).dtype for n in outputs if n is not None]
        try:
            # Bound at the traced sizes first: binding verifies what no `?` dim shows
            # (two sizes a kernel takes as one), as each size's binding did before.
            self._bind(
                ir.Module.parse(shared.fused, self.context),
                bind_sizes.BindSizesOptions(every_size.traced_sizes(self.gm, self.slots), keep_kernel_arguments=True),
                [],
                None,
            )
            call, fits, source = every_size.build(self.gm, module, shared.compiled, dtypes, self.device, eager)
        except Exception as err:  # noqa: BLE001 - each size is bound instead, as without it
            log.debug("%s: no wrapper for every size: %s", self.name, err, exc_info=True)
            return None
        _dump(name, "wrapper", source, ext="py")
        stats().symbolic_every_size += 1
        return _completed(self.gm, call, outputs), fits

    def _compile_per_size(
        self, lowered: _Lowered, sizes: tuple[int, ...], eager: list | None, name: str
    ) -> CompiledRegion:
        """The kernels of this size alone: the module bound, then the stages after."""
        bound_after = lowered.bound_after
        module = ir.Module.parse(lowered.stage_ir[bound_after], self.context)
        pipeline = [configured(stage, self.options) for stage in AFTER_BINDING[bound_after]]
        self._bind(module, bind_sizes.BindSizesOptions(sizes), pipeline, eager)
        stage_ir = {bound_after: str(module)}
        _dump(name, "bound", stage_ir[bound_after])
        return _finish(self.gm, module, self.device, self.options, name, stage_ir, bound_after)

    def _bind(
        self, module: ir.Module, options: bind_sizes.BindSizesOptions, then: list[str], eager: list | None
    ) -> None:
        """Bind `module`'s sizes, run `then`, and check the results against eager's."""
        with module.context:
            pipeline = [format_element("mlirc-bind-sizes", options), *then]
            _step("mlirc-bind-sizes", lambda: run_passes(module, pipeline, stage="mlirc-bind-sizes"))
            if eager is not None:
                entry = bind_sizes.entry_function(module.operation)
                _check_bound_results(entry, eager)
                entry.attributes[RESULT_EAGER_ATTR] = layouts.encode_eager(eager)

    def _shared_kernels(self, lowered: _Lowered) -> _SharedKernels | None:
        """The kernels of a graph whose kernels were formed on `?` dims, compiled
        once for every size (tried once per lowering; None where they could not be:
        then each size compiles its own, as before)."""
        backend = backend_for(self.device.type)
        if backend.device_type != self.device.type or not config.runtime_sizes or lowered.bound_after != "kernels":
            return None
        if not lowered.shared_tried:
            lowered.shared_tried = True
            name = f"{self.name}-sizes"
            fusion = backend.fusion_stage
            module = ir.Module.parse(lowered.stage_ir["kernels"], self.context)
            stage_ir = {"kernels": lowered.stage_ir["kernels"]}
            try:
                with module.context:
                    _run_stage(module, fusion, name, stage_ir, self.options, stage_ir["kernels"])
                    compiled = backend.compile_kernels(module, name, stage_ir, self.options, DRIVER)
            except MlircError as err:
                log.debug("%s: kernels for every size failed, compiled per size: %s", self.name, err)
                return None
            lowered.shared = _SharedKernels(stage_ir[fusion], compiled, backend.kernel_count(compiled))
            stats().symbolic_shared += 1
        return lowered.shared

    def _wrap_shared(
        self, shared: _SharedKernels, sizes: tuple[int, ...], eager: list | None, name: str
    ) -> CompiledRegion:
        """A size of a graph whose kernels serve every size: bound only for its host
        wrapper, which calls the shared kernels with this size's sizes."""
        module = ir.Module.parse(shared.fused, self.context)
        self._bind(module, bind_sizes.BindSizesOptions(sizes, keep_kernel_arguments=True), [], eager)
        backend = backend_for(self.device.type)
        fusion = backend.fusion_stage
        stage_ir = {fusion: str(module)}
        _dump(name, "bound", stage_ir[fusion])

        def wrap(
            module: ir.Module, name: str, _ir: dict, result_dtypes: list, device: torch.device, _options: dict, driver
        ) -> tuple[Callable, str, int]:
            call, source = backend.wrap(module, name, shared.compiled, result_dtypes, device, driver)
            return call, source, shared.kernel_count

        return _finish(self.gm, module, self.device, self.options, name, stage_ir, fusion, wrap)
