"""Where a compiled model's CPU time goes: the top kernels and library calls per call,
mlirc beside Inductor (with freezing, its CPU inference setting), and eager's total.

    python benchmarks/zoo.py --profile resnet18@8 [--top 12]

mlirc's kernels are named by MLIRC_PROFILE (each call in a profiler range: `mlirc
kernel_3 [8x40x40x64]`, `mlirc conv2d_nhwc_packed library_2 [...]`), Inductor's by
its kernel profiling (`cpp_fused_...`); library calls (oneDNN, BLAS) are the aten ops
under them.  Times are self CPU time per call: a library call's range holds little
besides its aten op, which has a row of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

CALLS = 10
# Rows that stand for a whole call, not for work in it.
WRAPPER_ROWS = ("Torch-Compiled Region", "## Call CompiledFxGraph", "TorchDynamo Cache Lookup", "Pregraph bytecode")


def _ms_per_call(fn: Callable, args: tuple) -> float:
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return sorted(times)[CALLS // 2] * 1e3


def _top(fn: Callable, args: tuple, top: int) -> list[tuple[float, int, str]]:
    from torch.profiler import profile

    with profile() as prof:
        for _ in range(CALLS):
            fn(*args)
    rows = [
        (e.self_cpu_time_total / 1e3 / CALLS, e.count // CALLS, e.key)
        for e in prof.key_averages()
        if not e.key.startswith(WRAPPER_ROWS)
    ]
    return sorted(rows, reverse=True)[:top]


def _compiled(model: torch.nn.Module, backend: str) -> Callable:
    torch._dynamo.reset()
    if backend == "mlirc":
        from mlirc.config import config

        config.profile = True
        return torch.compile(model, backend="mlirc")
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True
    inductor_config.cpp.enable_kernel_profile = True
    return torch.compile(model)


def profile_case(model: torch.nn.Module, inputs: tuple, top: int = 12) -> str:
    """The side-by-side table, as markdown."""
    results = {}
    with torch.no_grad():
        for backend in ("eager", "mlirc", "inductor+freezing"):
            fn = model if backend == "eager" else _compiled(model, backend)
            for _ in range(3):  # compile, then warm up
                fn(*inputs)
            results[backend] = (_ms_per_call(fn, inputs), [] if backend == "eager" else _top(fn, inputs, top))
    lines = ["| backend | ms per call |", "|---|---|"]
    lines += [f"| {name} | {ms:.3f} |" for name, (ms, _) in results.items()]
    lines += [
        "",
        "| mlirc ms | calls | mlirc kernel | Inductor ms | calls | Inductor kernel |",
        "|---|---|---|---|---|---|",
    ]
    mlirc_rows, inductor_rows = results["mlirc"][1], results["inductor+freezing"][1]
    for i in range(max(len(mlirc_rows), len(inductor_rows))):
        cells = []
        for rows in (mlirc_rows, inductor_rows):
            ms, count, name = rows[i] if i < len(rows) else (None, None, "")
            cells += ["" if ms is None else f"{ms:.3f}", "" if count is None else str(count), f"`{name[:70]}`"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
