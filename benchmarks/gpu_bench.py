"""Eager vs Inductor vs mlirc on CUDA: the models at GPU batch sizes and the GPU
issue's microbenchmarks, in one process, one run.

    python benchmarks/gpu_bench.py [out_dir] [--cases a,b] [--backends eager,mlirc] [--dynamic]
    python benchmarks/gpu_bench.py [out_dir] --suite zoo [--cases resnet18,gpt2]
    python benchmarks/gpu_bench.py --suite zoo --cases resnet50@32@reduce-overhead   # one row

`--suite zoo` runs benchmarks/zoo.py's real architectures instead: each model at batch
ZOO_BATCH in default mode and with CUDA graphs (mode="reduce-overhead", for Inductor and
mlirc alike), and at ZOO_THROUGHPUT_BATCH in default mode; files gpu-zoo-<device>.md/.json.

With --dynamic every compiler gets torch.compile(dynamic=True) (symbolic sizes), a
column mlirc-static times mlirc without it in the same rounds, columns dynamo and
dynamo-static time torch.compile(backend="eager") with and without it (Dynamo's
own per-call cost, which every backend pays: its guards on symbolic sizes), and
the files are named gpu-<device>-dynamic.md/.json.

Times are medians over interleaved rounds (backends take turns) of
`triton.testing.do_bench` medians (CUDA events, L2 flushed between calls, after
warm-up).  Bandwidths count each tensor read or written once.  The
table goes to stdout (last) and, with out_dir, to out_dir/gpu-<device>.md/.json.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zoo  # noqa: E402
from models import MODELS, make_case, own_frame  # noqa: E402

import mlirc  # noqa: E402
from mlirc.config import config  # noqa: E402
from mlirc.demo import chain  # noqa: E402

GPU_BATCH = 8  # the CPU suite's batch x 8: GPU-sized work per call
# small models where launches dominate, compiled with CUDA graphs by both compilers
REDUCE_OVERHEAD = ("mlp@reduce-overhead", "transformer_encoder@reduce-overhead")
# GEMM variants timed per region by both compilers
MAX_AUTOTUNE = ("bf16_linear_gelu_8192x4096@max-autotune-no-cudagraphs",)
BACKENDS = ("eager", "inductor", "mlirc")
ZOO_BATCH, ZOO_THROUGHPUT_BATCH = 32, 128
# a zoo row's mode -> what the summary calls its group
ZOO_GROUPS = {None: f"batch {ZOO_BATCH}, default", "reduce-overhead": f"batch {ZOO_BATCH}, reduce-overhead"}
# with --dynamic, besides BACKENDS: column -> (torch.compile backend, dynamic)
DYNAMIC_BASELINES = {"mlirc-static": ("mlirc", None), "dynamo": ("eager", True), "dynamo-static": ("eager", None)}


# Interleaved: each round times every backend once, in a rotating order.  Within one
# process, the same launch-bound call moved by up to 3x between rounds on the GPU
# host (measured: small_cnn 126-382 us); 15 short rounds keep the median steady.
ROUNDS = 15


def _bench_ms(fn: Callable, args: tuple, rep_ms: int = 300 // ROUNDS) -> float:
    from triton.testing import do_bench

    return do_bench(lambda: fn(*args), warmup=10, rep=rep_ms, return_mode="median")


def _interleaved_ms(fns: dict[str, Callable], args: tuple) -> dict[str, float]:
    """Median over rounds of each function's do_bench median.  Launch-bound models
    move by 2x between minutes on the GPU host (its CPU launches the kernels), so
    backends take turns, as benchmarks/run.py's do, instead of one after another."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for round_ in range(ROUNDS):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            samples[name].append(_bench_ms(fns[name], args))
    return {name: statistics.median(times) for name, times in samples.items()}


def _max_error(actual: object, expected: object) -> float:
    if isinstance(expected, torch.Tensor):
        expected, actual = [expected], [actual]
    worst = 0.0
    for a, e in zip(actual, expected, strict=True):
        if e.numel():
            scale = max(1.0, e.double().abs().max().item())
            worst = max(worst, ((a.double() - e.double()).abs().nan_to_num(0.0).max().item()) / scale)
    return worst


def _gpu_sized(name: str) -> tuple[Callable, tuple]:
    fn, inputs = make_case(name)
    inputs = tuple(x.repeat(GPU_BATCH, *[1] * (x.dim() - 1)).cuda() for x in inputs)
    if isinstance(fn, torch.nn.Module):
        fn = fn.cuda()
    return fn, inputs


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Llama's RMSNorm."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def _zoo_rows(models: list[str]) -> list[str]:
    """A zoo model's three rows: `<model>@<batch>[@<mode>]`; a row named so
    (`--cases resnet50@32@reduce-overhead`) is that row alone."""
    return [
        r
        for m in models
        for r in (
            [m] if "@" in m else (f"{m}@{ZOO_BATCH}", f"{m}@{ZOO_BATCH}@reduce-overhead", f"{m}@{ZOO_THROUGHPUT_BATCH}")
        )
    ]


def _zoo_case(row: str) -> tuple[str, Callable, tuple, str | None]:
    model, batch, *mode = row.split("@")
    fn, inputs = zoo.make_model(model, int(batch))
    return f"{model}@{batch}", fn.cuda(), tuple(x.cuda() for x in inputs), (mode[0] if mode else None)


def _micro_cases() -> dict[str, tuple[Callable, tuple, float]]:
    """name -> (fn, args, bytes moved per call)"""
    big = 8192 * 8192
    x, y = torch.randn(8192, 8192, device="cuda"), torch.randn(8192, 8192, device="cuda")
    rows = torch.randn(16384, 4096, device="cuda")
    w, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    a16 = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b16 = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(x)
    xs16, w16, bias16 = (
        torch.randn(*s, device="cuda", dtype=torch.bfloat16) for s in ((8192, 4096), (4096, 4096), (4096,))
    )
    return {
        "copy_8192x8192": (lambda t: out.copy_(t), (x,), 2 * 4 * big),
        "elementwise_chain_8192x8192": (chain, (x, y), 3 * 4 * big),
        "softmax_16384x4096": (lambda t: torch.softmax(t, -1), (rows,), 2 * 4 * rows.numel()),
        "layer_norm_16384x4096": (lambda t, w, b: F.layer_norm(t, (4096,), w, b), (rows, w, b), 2 * 4 * rows.numel()),
        # reductions of other layouts and multi-pass forms (bandwidth-bound: % of copy below)
        "rms_norm_16384x4096": (_rms_norm, (rows, w), 2 * 4 * rows.numel()),
        "logsumexp_16384x4096": (lambda t: torch.logsumexp(t, -1), (rows,), 4 * rows.numel()),
        "column_sum_16384x4096": (lambda t: t.sum(0), (rows,), 4 * rows.numel()),
        "softmax_transposed_4096x16384": (lambda t: torch.softmax(t.t(), -1), (rows,), 2 * 4 * rows.numel()),
        # rows longer than a tile holds (walked in chunks)
        "softmax_4096x16384": (lambda t: torch.softmax(t.view(4096, 16384), -1), (rows,), 2 * 4 * rows.numel()),
        "bf16_mm_4096": (torch.mm, (a16, b16), 3 * 2 * 4096 * 4096),
        "bf16_linear_gelu_8192x4096": (lambda x, w, b: F.gelu(F.linear(x, w, b)), (xs16, w16, bias16), 0),
    }


# micro cases run again with mlirc's GEMMs forced to generated tt.dot kernels
GENERATED_GEMM = {"bf16_mm_4096_tt": "bf16_mm_4096"}


def run_case(
    name: str, fn: Callable, args: tuple, backends: list[str], mode: str | None = None, dynamic: bool | None = None
) -> dict:
    """`mlirc-static` is mlirc without `dynamic` (with --dynamic: the static baseline
    timed in the same rounds)."""
    row: dict = {"case": name if mode is None else f"{name} ({mode})"}
    ready: dict[str, Callable] = {}
    with torch.no_grad():
        expected = fn(*args)
        torch._dynamo.reset()  # once: every backend's entry stays for the timing rounds, in its own frame
        for backend in backends:
            mlirc.reset_stats()
            compiler, dyn = DYNAMIC_BASELINES.get(backend, (backend, dynamic))
            frame = own_frame(fn, backend.replace("-", "_"))
            compiled = fn if backend == "eager" else torch.compile(frame, backend=compiler, mode=mode, dynamic=dyn)
            start = time.perf_counter()
            try:
                result = compiled(*args)
            except Exception as err:  # one backend failing must not hide the others
                row[backend] = {"error": f"{type(err).__name__}: {str(err)[:120]}"}
                continue
            compile_s = time.perf_counter() - start
            if mode == "reduce-overhead" and backend != "eager":
                compiled(*args)  # the second call captures the CUDA graph
                result = compiled(*args)  # a replay
            entry = {"compile_s": compile_s, "max_rel_error": _max_error(result, expected)}
            if backend.startswith("mlirc"):
                entry["fallback_nodes"] = mlirc.stats().fallback_nodes
                entry["failed_regions"] = mlirc.stats().failed_regions
            row[backend] = entry
            ready[backend] = compiled
        torch.cuda.synchronize()
        for backend, ms in _interleaved_ms(ready, args).items():
            row[backend]["ms"] = ms
    return row


def _cell(row: dict, backend: str) -> str:
    entry = row.get(backend)
    if not entry:
        return "-"
    if "error" in entry:
        return "error"
    eager = row.get("eager", {}).get("ms")
    speed = f" ({eager / entry['ms']:.2f}x)" if eager and backend != "eager" else ""
    return f"{entry['ms']:.3f}{speed}"


COLUMNS = {
    "inductor": "Inductor at the row's mode (default, or as named: reduce-overhead = CUDA graphs)",
    "mlirc-static": "mlirc without dynamic=True, in the same rounds",
    "dynamo": "torch.compile(backend='eager', dynamic=True): Dynamo's own per-call cost, paid by every backend",
    "dynamo-static": "the same without dynamic=True",
}


def table(
    rows: list[dict],
    backends: list[str],
    device: str,
    traffic: dict[str, float],
    what: str = "GPU benchmarks",
    command: str = "",
) -> str:
    """`traffic`: bytes a case moves per call, for the % of copy bandwidth lines."""
    command = command or "python benchmarks/gpu_bench.py " + " ".join(sys.argv[1:])
    lines = [f"{what} on {device}, torch {torch.__version__} (ms, median; speedup over eager); `{command}`", ""]
    lines += [f"* {name}: {COLUMNS[name]}" for name in backends if name in COLUMNS] + [""]
    lines.append("| case | " + " | ".join(backends) + " | mlirc err | mlirc fallback | mlirc compile s |")
    lines.append("|---" * (len(backends) + 4) + "|")
    for row in rows:
        m = row.get("mlirc", {})
        extra = [
            f"{m['max_rel_error']:.1e}" if "max_rel_error" in m else "-",
            str(m.get("fallback_nodes", "-")),
            f"{m['compile_s']:.1f}" if "compile_s" in m else "-",
        ]
        lines.append(
            f"| {row['case']} | " + " | ".join(_cell(row, b) for b in backends) + " | " + " | ".join(extra) + " |"
        )
    lines.append("")
    for label, pick in (("models", lambda case: case in MODELS), ("cases", lambda case: True)):
        for backend in backends[1:]:
            ratios = [
                r["eager"]["ms"] / r[backend]["ms"]
                for r in rows
                if pick(r["case"]) and "group" not in r and "ms" in r.get(backend, {}) and "ms" in r.get("eager", {})
            ]
            if ratios:
                gmean = math.exp(sum(map(math.log, ratios)) / len(ratios))
                lines.append(f"geometric-mean speedup over eager, {len(ratios)} {label}: {backend} {gmean:.2f}x")
    by_case = {r["case"]: r for r in rows}
    copy = by_case.get("copy_8192x8192", {}).get("eager", {}).get("ms")
    for name, moved in traffic.items():
        for backend in backends:
            ms = by_case.get(name, {}).get(backend, {}).get("ms")
            if ms and copy and moved and not name.startswith("copy"):
                gbs, copy_gbs = moved / ms / 1e6, 2 * 4 * 8192 * 8192 / copy / 1e6
                lines.append(f"{name} {backend}: {gbs:.0f} GB/s = {gbs / copy_gbs:.0%} of copy ({copy_gbs:.0f} GB/s)")
    torch_mm = by_case.get("bf16_mm_4096", {}).get("eager", {}).get("ms")
    for name, how in (("bf16_mm_4096", "auto: cuBLAS"), ("bf16_mm_4096_tt", "generated tt.dot")):
        ms = by_case.get(name, {}).get("mlirc", {}).get("ms")
        if ms and torch_mm:
            lines.append(f"bf16 4096^3 mm, mlirc ({how}): {torch_mm / ms:.0%} of torch.mm")
    return "\n".join(lines)


def zoo_summary(rows: list[dict]) -> str:
    """Per group (batch and mode): geomean speedups over eager, mlirc over Inductor, and
    the model furthest behind."""
    lines = []
    for group in dict.fromkeys(r["group"] for r in rows if "group" in r):
        timed = [r for r in rows if r.get("group") == group and all("ms" in r.get(b, {}) for b in BACKENDS)]
        if not timed:
            continue

        def gmean(values: list[float]) -> float:
            return math.exp(sum(map(math.log, values)) / len(values))

        ratio = {r["case"]: r["inductor"]["ms"] / r["mlirc"]["ms"] for r in timed}
        worst = min(ratio, key=ratio.get)
        lines.append(
            f"{group}, {len(timed)} models: geomean over eager inductor "
            f"{gmean([r['eager']['ms'] / r['inductor']['ms'] for r in timed]):.2f}x, mlirc "
            f"{gmean([r['eager']['ms'] / r['mlirc']['ms'] for r in timed]):.2f}x; mlirc / inductor "
            f"{gmean(list(ratio.values())):.2f}x (lowest {worst} {ratio[worst]:.2f}x)"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--cases", default="", help="comma-separated case names, or zoo models (default: all)")
    p.add_argument("--suite", default="gpu", choices=("gpu", "zoo"), help="the GPU cases, or the model zoo")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (symbolic sizes)")
    args = p.parse_args()
    backends = args.backends.split(",") + (list(DYNAMIC_BASELINES) if args.dynamic else [])
    torch.manual_seed(0)
    # as benchmarks/run.py: eager and the compilers run the same (standard) attention
    torch.backends.mha.set_fastpath_enabled(False)
    dynamic = True if args.dynamic else None
    rows = []
    if args.suite == "zoo":
        models = args.cases.split(",") if args.cases else [m for m in zoo.ZOO if not zoo.unavailable(m)]
        micro: dict = {}
        for row_name in _zoo_rows(models):
            name, fn, inputs, mode = _zoo_case(row_name)
            rows.append(run_case(name, fn, inputs, backends, mode, dynamic))
            rows[-1]["group"] = ZOO_GROUPS[mode] if name.endswith(f"@{ZOO_BATCH}") else f"batch {name.split('@')[1]}"
            print(json.dumps(rows[-1]), flush=True)
            del fn, inputs
            torch.cuda.empty_cache()
    else:
        micro = _micro_cases()
        names = (
            args.cases.split(",") if args.cases else [*micro, *GENERATED_GEMM, *MAX_AUTOTUNE, *MODELS, *REDUCE_OVERHEAD]
        )
        for name in names:
            base, _, mode = name.partition("@")
            source = GENERATED_GEMM.get(base, base)
            fn, inputs = (micro[source][0], micro[source][1]) if source in micro else _gpu_sized(base)
            run = ["eager"] if base.startswith("copy") else backends
            config.gpu_gemm = "generated" if base in GENERATED_GEMM else "auto"
            rows.append(run_case(base, fn, inputs, run, mode or None, dynamic))
            print(json.dumps(rows[-1]), flush=True)
    device = torch.cuda.get_device_name()
    traffic = {name: moved for name, (_, _, moved) in micro.items()}
    what = "The model zoo (benchmarks/zoo.py)" if args.suite == "zoo" else "GPU benchmarks"
    text = table(rows, backends, device + (", every compiler with dynamic=True" if args.dynamic else ""), traffic, what)
    if args.suite == "zoo":
        text += "\n" + zoo_summary(rows)
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = "gpu-" + ("zoo-" if args.suite == "zoo" else "")
        stem += re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") + ("-dynamic" if args.dynamic else "")
        (out / f"{stem}.md").write_text(text + "\n")
        (out / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
