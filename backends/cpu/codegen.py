"""The CPU backend's last steps: LLVM IR out of the kernels that mlirc-stage-cpu
left in the LLVM dialect, then machine code for the host CPU (llvmlite).

Kernels use the bare-pointer calling convention (contiguous buffers): each takes
its inputs' then its outputs' data pointers, then -- a kernel of run-time sizes --
its buffers' `?` sizes (passes/cpu/size_args.py size_arguments).
"""

from __future__ import annotations

import ctypes
import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite.binding as llvm
from mlir import ir
from mlir.dialects import llvm as llvm_dialect

from mlirc.backends.cpu import jit_pool
from mlirc.backends.cpu.llvm_worker import object_code
from mlirc.config import config
from mlirc.dialects.attributes import SIZE_ARGS_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.cpu.drop_host import compiled_kernel
from mlirc.passes.cpu.size_args import size_arguments

log = logging.getLogger(__name__)


@functools.cache
def _host() -> tuple[str, str]:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def target_machine(jit: bool = False) -> llvm.TargetMachine:
    """A new target machine for the host CPU at O3 (`jit`: for an engine that loads
    object code compiled elsewhere, whose code model it must share).

    Not cached: an MCJIT engine takes ownership of its target machine and frees
    it with the engine, so sharing one would leave a dangling pointer.
    """
    cpu, features = _host()
    return llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3, jit=jit)


@dataclass
class KernelSignature:
    name: str
    num_args: int  # inputs + outputs (data pointers), then sizes
    sizes: tuple[tuple[int, int], ...] = ()  # (buffer, dim) of each size argument


@dataclass
class CompiledKernels:
    engine: llvm.ExecutionEngine
    functions: dict[str, ctypes._CFuncPtr]
    # The size arguments of each kernel of run-time sizes: (buffer, dim) pairs
    sizes: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)


def kernel_signatures(module: ir.Module) -> list[KernelSignature]:
    sigs = []
    for op in module.body.operations:
        if compiled_kernel(op):
            ftype = ir.FunctionType(op.attributes["function_type"].value)
            buffers = [*ftype.inputs, *ftype.results]
            sizes = tuple(size_arguments(buffers))
            sigs.append(KernelSignature(op.sym_name.value, len(buffers) + len(sizes), sizes))
    return sigs


def check_signatures(kernels: ir.Module, signatures: list[KernelSignature]) -> None:
    """Raise unless each kernel in the LLVM dialect takes what the host will pass: its
    argument count, and the size arguments mlirc-cpu-size-args gave it in the order
    the signature (read off the kernels before the stage) expects."""
    functions = {
        op.attributes["sym_name"].value: op.operation
        for op in kernels.body.operations
        if op.operation.name == "llvm.func"
    }
    for sig in signatures:
        fn = functions.get(sig.name)
        if fn is None:
            raise PipelineError("mlirc-emit-llvm", f"kernel {sig.name} is not in the compiled module")
        count = len(fn.regions[0].blocks[0].arguments) if fn.regions[0].blocks else None
        recorded = list(ir.DenseI64ArrayAttr(fn.attributes[SIZE_ARGS_ATTR])) if SIZE_ARGS_ATTR in fn.attributes else []
        expected = [i for pair in sig.sizes for i in pair]
        if count != sig.num_args or recorded != expected:
            raise PipelineError(
                "mlirc-emit-llvm",
                f"kernel {sig.name} takes {count} arguments, sizes {recorded}; the host passes {sig.num_args}, "
                f"sizes {expected}",
            )


def _unconverted_ops(module: ir.Module) -> list[str]:
    left: list[str] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    name = inner.operation.name
                    if not name.startswith("llvm.") and name not in left:
                        left.append(name)
                    walk(inner.operation)

    walk(module.operation)
    return left


def check_converted(module: ir.Module) -> None:
    """Raise unless mlirc-stage-cpu left `module` wholly in the LLVM dialect."""
    left = _unconverted_ops(module)
    if left:
        raise PipelineError("mlirc-emit-llvm", f"ops left unconverted to the LLVM dialect: {', '.join(left)}")


def emit_llvm(module: ir.Module) -> str:
    """The LLVM IR of a module that mlirc-stage-cpu left in the LLVM dialect (what
    `mlirc-opt --emit-llvm` prints)."""
    check_converted(module)
    return str(llvm_dialect.translate_module_to_llvmir(module.operation))


def external_functions(module: ir.Module) -> list[str]:
    """The functions the kernels call but do not define (libm, SLEEF, libgomp)."""
    funcs = [op.operation for op in module.body.operations if op.operation.name == "llvm.func"]
    return [f.attributes["sym_name"].value for f in funcs if not f.regions[0].blocks]


@functools.cache
def _process_symbols() -> ctypes.CDLL:
    return ctypes.CDLL(None)


@functools.cache
def _torch_cpu_library() -> ctypes.CDLL:
    import torch

    return ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))


def _symbol_address(library: ctypes.CDLL, name: str) -> int | None:
    try:
        return ctypes.cast(getattr(library, name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _bind_external_symbols(names: list[str]) -> None:
    """Resolve every function the kernels call but do not define, or fail cleanly.

    libc/libm functions come from the process; SLEEF (mlirc-cpu-vector-math) and
    libgomp (mlirc-cpu-omp-dispatch) from libtorch_cpu and the libraries it loaded,
    without RTLD_GLOBAL, so the JIT cannot find them alone.  An unresolved call would jump to address 0, so it is an error here.
    """
    for name in names:
        if name.startswith("llvm.") or llvm.address_of_symbol(name):
            continue
        address = _symbol_address(_process_symbols(), name)
        if address is None:  # SLEEF, and the OpenMP runtime torch runs on
            address = _symbol_address(_torch_cpu_library(), name)
        if address is None:
            raise PipelineError("llvmlite", f"kernels call {name}, which is not in this process")
        llvm.add_symbol(name, address)


# Functions the x86 code generator calls where LLVM IR has none: without AVX512-BF16 it
# keeps a bfloat value that crosses a select or phi in a float register and rounds it
# back with compiler-rt's __truncsfbf2, which neither this process nor libgcc (before
# GCC 13) has -- the call went to address 0 (a bfloat16 max pooling window).  Round to
# nearest even, NaN to the quiet NaN 0x7FC0, as c10::BFloat16 and arith-expand do.
RUNTIME_HELPERS = """
define bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %low = lshr i32 %bits, 16
  %odd = and i32 %low, 1
  %bias = add i32 %odd, 32767
  %rounded = add i32 %bits, %bias
  %high = lshr i32 %rounded, 16
  %narrow = trunc i32 %high to i16
  %nan = fcmp uno float %x, 0.0
  %result = select i1 %nan, i16 32704, i16 %narrow
  %bf = bitcast i16 %result to bfloat
  ret bfloat %bf
}
"""


@functools.cache
def _runtime_helpers() -> llvm.ExecutionEngine:
    """RUNTIME_HELPERS compiled once per process, their addresses given to the JIT's
    symbol table (kernels compiled in worker processes resolve them on loading)."""
    module = llvm.parse_assembly(RUNTIME_HELPERS)
    engine = llvm.create_mcjit_compiler(module, target_machine())
    engine.finalize_object()
    for function in module.functions:
        llvm.add_symbol(function.name, engine.get_function_address(function.name))
    return engine  # kept alive: the helpers' code lives in it


def compile_kernels(kernels: ir.Module, signatures: list[KernelSignature]) -> CompiledKernels:
    """Machine code for the kernels of an LLVM-dialect module (`check_converted`
    already: the walk costs 40 ms on a BERT layer): on the compile workers' cores
    where it is large (backends/cpu/jit_pool.py), else in-process."""
    texts = jit_pool.shard_texts(kernels, jit_pool.worker_count())
    objects = None if texts is None else jit_pool.compile_objects(texts, *_host())
    if objects is None:
        return jit(str(llvm_dialect.translate_module_to_llvmir(kernels.operation)), signatures)
    _bind_external_symbols(external_functions(kernels))
    return _load(objects, signatures)


def jit(llvm_ir: str, signatures: list[KernelSignature]) -> CompiledKernels:
    """Machine code for the host CPU, compiled in-process as a worker compiles it
    (llvm_worker.object_code: LLVM's middle end at config.llvm_opt, which CSEs and
    hoists what codegen cannot -- a row's address arithmetic, pure SLEEF calls -- then
    codegen at -O3), and a ctypes function per kernel."""
    try:
        parsed = llvm.parse_assembly(llvm_ir)
        parsed.verify()
    except RuntimeError as err:
        raise PipelineError("llvmlite", f"LLVM IR does not parse: {err}") from err
    _bind_external_symbols([fn.name for fn in parsed.functions if fn.is_declaration])
    return _load([object_code(parsed, *_host(), config.llvm_opt)], signatures)


def _load(objects: list[bytes], signatures: list[KernelSignature]) -> CompiledKernels:
    """An engine holding only the kernels' object code: an engine given the LLVM
    module keeps it (about 0.7 MB for a small graph) as long as the compiled code."""
    _runtime_helpers()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(jit=True))
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return CompiledKernels(engine, _functions(engine, signatures), _sizes(signatures))


def _sizes(signatures: list[KernelSignature]) -> dict[str, tuple[tuple[int, int], ...]]:
    return {sig.name: sig.sizes for sig in signatures if sig.sizes}


def _functions(engine: llvm.ExecutionEngine, signatures: list[KernelSignature]) -> dict[str, ctypes._CFuncPtr]:
    functions = {}
    for sig in signatures:
        address = engine.get_function_address(sig.name)
        if not address:
            raise PipelineError("llvmlite", f"kernel {sig.name} is not in the compiled code")
        # Sizes pass as pointer-sized integers: the x86-64 ABI passes both alike.
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * sig.num_args))
        functions[sig.name] = proto(address)
    return functions
