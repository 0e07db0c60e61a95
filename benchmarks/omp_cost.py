"""What a parallel region costs on this host: an empty GOMP_parallel (fork and join)
against a GOMP_barrier inside one region, each called many times in a row on torch's
own libgomp team (the runtime mlirc's CPU kernels share, mlirc-cpu-omp-dispatch).

    python benchmarks/omp_cost.py [--threads N]

mlirc-cpu-parallelize runs a kernel's loops in one region only where its barriers
are fewer than the synchronizations of a fork and join per loop; these two figures
are why (16-core GPU host: 4.3-5.3 us a fork and join, 1.6 us a barrier).
"""

from __future__ import annotations

import argparse
import ctypes
import time
from pathlib import Path

import llvmlite.binding as llvm
import torch

IR = r"""
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare void @GOMP_barrier()
@count = global i64 0
define void @empty(ptr %ctx) { ret void }
define void @barriers(ptr %ctx) {
entry:
  %n = load i64, ptr @count
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  call void @GOMP_barrier()
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
define void @forks(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  call void @GOMP_parallel(ptr @empty, ptr null, i32 0, i32 0)
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
define void @one_region(i64 %n) {
  store i64 %n, ptr @count
  call void @GOMP_parallel(ptr @barriers, ptr null, i32 0, i32 0)
  ret void
}
"""


def _libgomp() -> str:
    found = sorted((Path(torch.__file__).parent / "lib").glob("libgomp*"))
    return str(found[0]) if found else "libgomp.so.1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--calls", type=int, default=10000)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.ones(1 << 20).sum()  # torch's OpenMP team exists
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.load_library_permanently(_libgomp())
    module = llvm.parse_assembly(IR)
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    for label, name in (("fork and join", "forks"), ("barrier", "barriers")):
        run = ctypes.CFUNCTYPE(None, ctypes.c_int64)(
            engine.get_function_address(name if name == "forks" else "one_region")
        )
        run(100)
        start = time.perf_counter()
        run(args.calls)
        print(f"{label}: {(time.perf_counter() - start) / args.calls * 1e6:.2f} us ({args.threads} threads)")


if __name__ == "__main__":
    main()
