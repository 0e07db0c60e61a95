"""mlirc-cpu-omp-dispatch: run chunked kernels on torch's OpenMP threads.

Runs on the LLVM dialect, after mlirc-cpu-parallelize made `kernel_N` a call of
`kernel_N_chunk(<args>, lo, hi)` over the whole range (its `mlirc.parallel`
attribute holds lb, ub, step).  kernel_N's body becomes a GOMP_parallel call; each
thread computes its share of the loop's trips and runs the chunk on it.

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

from mlirc.dialects.attributes import KERNEL_ATTR, PARALLEL_ATTR
from mlirc.passes.registry import register_pass

RUNTIME = {
    "omp_get_num_threads": "llvm.func @omp_get_num_threads() -> i32",
    "omp_get_thread_num": "llvm.func @omp_get_thread_num() -> i32",
    "GOMP_parallel": "llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)",
}


def _worker(name: str, num_args: int, lb: int, ub: int, step: int) -> str:
    trips = (ub - lb + step - 1) // step
    loads = "\n".join(
        f"    %p{i} = llvm.getelementptr %ctx[{i}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr\n"
        f"    %a{i} = llvm.load %p{i} : !llvm.ptr -> !llvm.ptr"
        for i in range(num_args)
    )
    args = ", ".join(f"%a{i}" for i in range(num_args))
    types = ", ".join(["!llvm.ptr"] * num_args)
    return f"""
  llvm.func internal @{name}_worker(%ctx: !llvm.ptr) {{
    %nt32 = llvm.call @omp_get_num_threads() : () -> i32
    %t32 = llvm.call @omp_get_thread_num() : () -> i32
    %nt = llvm.sext %nt32 : i32 to i64
    %t = llvm.sext %t32 : i32 to i64
    %trips = llvm.mlir.constant({trips} : i64) : i64
    %lb = llvm.mlir.constant({lb} : i64) : i64
    %step = llvm.mlir.constant({step} : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %first = llvm.mul %trips, %t : i64
    %lo_trip = llvm.sdiv %first, %nt : i64
    %next = llvm.add %t, %one : i64
    %last = llvm.mul %trips, %next : i64
    %hi_trip = llvm.sdiv %last, %nt : i64
    %lo_off = llvm.mul %lo_trip, %step : i64
    %lo = llvm.add %lb, %lo_off : i64
    %hi_off = llvm.mul %hi_trip, %step : i64
    %hi = llvm.add %lb, %hi_off : i64
{loads}
    llvm.call @{name}_chunk({args}, %lo, %hi) : ({types}, i64, i64) -> ()
    llvm.return
  }}"""


def _dispatcher(name: str, num_args: int, attrs: str) -> str:
    params = ", ".join(f"%a{i}: !llvm.ptr" for i in range(num_args))
    stores = "\n".join(
        f"    %p{i} = llvm.getelementptr %ctx[{i}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr\n"
        f"    llvm.store %a{i}, %p{i} : !llvm.ptr, !llvm.ptr"
        for i in range(num_args)
    )
    return f"""
  llvm.func @{name}({params}) attributes {attrs} {{
    %n = llvm.mlir.constant({num_args} : i64) : i64
    %ctx = llvm.alloca %n x !llvm.ptr : (i64) -> !llvm.ptr
{stores}
    %fn = llvm.mlir.addressof @{name}_worker : !llvm.ptr
    %threads = llvm.mlir.constant(0 : i32) : i32
    %flags = llvm.mlir.constant(0 : i32) : i32
    llvm.call @GOMP_parallel(%fn, %ctx, %threads, %flags) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
    llvm.return
  }}"""


@register_pass("mlirc-cpu-omp-dispatch", "Run chunked kernels (mlirc-cpu-parallelize) through GOMP_parallel")
def cpu_omp_dispatch(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    kernels = [op.operation for op in body.operations if PARALLEL_ATTR in op.operation.attributes]
    if not kernels:
        return
    declared = {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in body.operations}
    text = [decl for fn, decl in RUNTIME.items() if fn not in declared]
    for kernel in kernels:
        name = ir.StringAttr(kernel.attributes["sym_name"]).value
        num_args = len(kernel.regions[0].blocks[0].arguments)
        lb, ub, step = ir.DenseI64ArrayAttr(kernel.attributes[PARALLEL_ATTR])
        kept = {a: kernel.attributes[a] for a in (KERNEL_ATTR,) if a in kernel.attributes}
        attrs = "{" + ", ".join(f"{k} = {v}" for k, v in kept.items()) + "}" if kept else "{}"
        # The snippet must verify alone: it declares the chunk, which the module defines.
        chunk_decl = f"  llvm.func @{name}_chunk({', '.join(['!llvm.ptr'] * num_args)}, i64, i64)"
        text += [chunk_decl, _worker(name, num_args, lb, ub, step), _dispatcher(name, num_args, attrs)]
        kernel.erase()
    parsed = ir.Module.parse("module {\n" + "\n".join(text) + "\n}", module.context)
    defined = {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in body.operations}
    for op in list(parsed.body.operations):
        if ir.StringAttr(op.operation.attributes["sym_name"]).value in defined:
            continue
        op.operation.detach_from_parent()
        body.append(op.operation)
