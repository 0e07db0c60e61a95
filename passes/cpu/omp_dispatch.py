"""mlirc-cpu-omp-dispatch: run chunked kernels on torch's OpenMP threads.

Runs on the LLVM dialect, after mlirc-cpu-parallelize made `kernel_N` call
`kernel_N_parallel(<args>, lb, ub)`, declared with the chunked loop's step in its
`mlirc.parallel` attribute.  This pass defines it: a GOMP_parallel call; each
thread computes its share of the loop's trips and runs `kernel_N_chunk` on it.

Why libgomp's GOMP_parallel: torch's CPU wheels run their own ops on libgomp, so
our kernels share its thread team (no second pool spinning against torch's, as
libomp's __kmpc_fork_call would bring), and the team size follows
torch.set_num_threads() (num_threads 0 = omp_get_max_threads()).  The team is
never sized down to a short loop's trip count (threads past it get empty chunks):
on a 16-core host, resizing libgomp's team between our kernels and torch's GEMMs
made those GEMMs 2x slower.  Nested inside another parallel region a kernel runs
on one thread.
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects.attributes import PARALLEL_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.base.registry import register_pass

RUNTIME = {
    "omp_get_num_threads": "llvm.func @omp_get_num_threads() -> i32",
    "omp_get_thread_num": "llvm.func @omp_get_thread_num() -> i32",
    "GOMP_parallel": "llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)",
}


def _worker(name: str, types: list[str], step: int) -> str:
    """Each thread's share of [lo, hi): the arguments, lo and hi come in a context
    array of 8-byte slots (pointers and sizes alike)."""
    count = len(types)
    loads = "\n".join(
        f"    %p{i} = llvm.getelementptr %ctx[{i}] : (!llvm.ptr) -> !llvm.ptr, i64\n"
        f"    %a{i} = llvm.load %p{i} : !llvm.ptr -> {t}"
        for i, t in enumerate(types)
    )
    args = ", ".join(f"%a{i}" for i in range(count - 2))
    return f"""
  llvm.func internal @{name}_worker(%ctx: !llvm.ptr) {{
{loads}
    %nt32 = llvm.call @omp_get_num_threads() : () -> i32
    %t32 = llvm.call @omp_get_thread_num() : () -> i32
    %nt = llvm.sext %nt32 : i32 to i64
    %t = llvm.sext %t32 : i32 to i64
    %step = llvm.mlir.constant({step} : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %span = llvm.sub %a{count - 1}, %a{count - 2} : i64
    %span_up = llvm.add %span, %step : i64
    %span_up1 = llvm.sub %span_up, %one : i64
    %trips = llvm.sdiv %span_up1, %step : i64
    %first = llvm.mul %trips, %t : i64
    %lo_trip = llvm.sdiv %first, %nt : i64
    %next = llvm.add %t, %one : i64
    %last = llvm.mul %trips, %next : i64
    %hi_trip = llvm.sdiv %last, %nt : i64
    %lo_off = llvm.mul %lo_trip, %step : i64
    %lo = llvm.add %a{count - 2}, %lo_off : i64
    %hi_off = llvm.mul %hi_trip, %step : i64
    %hi_step = llvm.add %a{count - 2}, %hi_off : i64
    %hi = llvm.intr.smin(%hi_step, %a{count - 1}) : (i64, i64) -> i64
    llvm.call @{name}_chunk({args}, %lo, %hi) : ({", ".join(types)}) -> ()
    llvm.return
  }}"""


def _dispatcher(name: str, types: list[str]) -> str:
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    stores = "\n".join(
        f"    %p{i} = llvm.getelementptr %ctx[{i}] : (!llvm.ptr) -> !llvm.ptr, i64\n"
        f"    llvm.store %a{i}, %p{i} : {t}, !llvm.ptr"
        for i, t in enumerate(types)
    )
    return f"""
  llvm.func internal @{name}_parallel({params}) {{
    %n = llvm.mlir.constant({len(types)} : i64) : i64
    %ctx = llvm.alloca %n x i64 : (i64) -> !llvm.ptr
{stores}
    %fn = llvm.mlir.addressof @{name}_worker : !llvm.ptr
    %threads = llvm.mlir.constant(0 : i32) : i32
    %flags = llvm.mlir.constant(0 : i32) : i32
    llvm.call @GOMP_parallel(%fn, %ctx, %threads, %flags) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
    llvm.return
  }}"""


PARALLEL_SUFFIX = "_parallel"


@register_pass(
    "mlirc-cpu-omp-dispatch", "Define chunked kernels' parallel calls (mlirc-cpu-parallelize) with GOMP_parallel"
)
def cpu_omp_dispatch(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    declarations = [
        op.operation
        for op in body.operations
        if PARALLEL_ATTR in op.operation.attributes and not op.operation.regions[0].blocks
    ]
    if not declarations:
        return
    # The snippet declares what it calls, so that it verifies alone; the module keeps
    # its own declarations (the team runtime a parallel region's body calls too).
    text = list(RUNTIME.values())
    for declaration in declarations:
        symbol = ir.StringAttr(declaration.attributes["sym_name"]).value
        if not symbol.endswith(PARALLEL_SUFFIX):
            raise PipelineError(
                "mlirc-cpu-omp-dispatch", f"@{symbol} is marked parallel but is not a kernel's _parallel"
            )
        name = symbol[: -len(PARALLEL_SUFFIX)]
        ftype = ir.TypeAttr(declaration.attributes["function_type"]).value
        types = llvm_dialect_inputs(ftype)
        (step,) = ir.DenseI64ArrayAttr(declaration.attributes[PARALLEL_ATTR])
        # The snippet must verify alone: it declares the chunk, which the module defines.
        text += [f"  llvm.func @{name}_chunk({', '.join(types)})", _worker(name, types, step), _dispatcher(name, types)]
        erase_op(declaration)
    parsed = ir.Module.parse("module {\n" + "\n".join(text) + "\n}", module.context)
    defined = {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in body.operations}
    for op in list(parsed.body.operations):
        if ir.StringAttr(op.operation.attributes["sym_name"]).value in defined:
            continue
        op.operation.detach_from_parent()
        body.append(op.operation)


def llvm_dialect_inputs(function_type: ir.Type) -> list[str]:
    """The parameter types of an `!llvm.func<void (ptr, i64, ...)>` type (pointers
    and integers: what kernels take), as the LLVM dialect spells them in an op."""
    text = str(function_type)
    inside = text[text.index("(") + 1 : text.rindex(")")]
    return ["!llvm.ptr" if t.strip() == "ptr" else t.strip() for t in inside.split(",") if t.strip()]
