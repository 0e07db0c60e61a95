"""Eager vs Inductor vs mlirc on the benchmark cases (benchmarks/models.py).

    python benchmarks/run.py                    # every case, each in its own process
    python benchmarks/run.py mlp softmax_512x1024 --repeat 50 --markdown out.md

Per case and backend: cold compile time (first call after a reset, with an empty
Inductor cache), warm compile time (the same again: Inductor's on-disk caches are
now full), the median of repeated timed calls after warm-up, the speedup over eager
and the max error against eager.  Inference (torch.no_grad); the MHA fast path is
off so eager and the compilers run the same (standard) attention path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
BACKENDS = ("eager", "inductor", "mlirc")


def _median_s(fn: Callable, args: tuple, repeat: int, warmup: int = 3) -> float:
    from mlirc.demo import median_ms

    return median_ms(fn, *args, repeat=repeat, warmup=warmup) / 1e3


def _max_error(actual, expected) -> float:
    import torch

    if isinstance(expected, torch.Tensor):
        expected, actual = [expected], [actual]
    worst = 0.0
    for a, e in zip(actual, expected, strict=True):
        if e.numel():
            worst = max(worst, (a.double() - e.double()).abs().nan_to_num(0.0).max().item())
    return worst


def _first_call_s(fn: Callable, backend: str, args: tuple) -> tuple[Callable, float, object]:
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend)
    start = time.perf_counter()
    out = compiled(*args)
    return compiled, time.perf_counter() - start, out


def measure_case(name: str, repeat: int) -> dict:
    """Run one case on every backend in this process; return its row as a dict."""
    import torch
    from models import make_case

    import mlirc

    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)
    fn, args = make_case(name)
    row: dict = {"case": name, "backends": {}}
    with torch.no_grad():
        expected = fn(*args)
        eager_s = _median_s(fn, args, repeat)
        row["backends"]["eager"] = {"median_ms": eager_s * 1e3, "speedup": 1.0, "max_err": 0.0}
        for backend in BACKENDS[1:]:
            try:
                _, cold_s, out = _first_call_s(fn, backend, args)
                mlirc.reset_stats()  # count the second compile only
                compiled, warm_s, out = _first_call_s(fn, backend, args)
                run_s = _median_s(compiled, args, repeat)
            except Exception as err:  # a benchmark reports a failing backend, it does not stop
                row["backends"][backend] = {"error": f"{type(err).__name__}: {err}"[:200]}
                continue
            entry = {
                "median_ms": run_s * 1e3,
                "speedup": eager_s / run_s,
                "max_err": _max_error(out, expected),
                "cold_compile_s": cold_s,
                "warm_compile_s": warm_s,
            }
            if backend == "mlirc":
                stats = mlirc.stats()
                entry["fallback_nodes"] = stats.fallback_nodes
                entry["kernels"] = stats.kernels
            row["backends"][backend] = entry
    return row


def _run_isolated(name: str, repeat: int) -> dict:
    """One process per case: no cache or allocator state leaks between cases."""
    with tempfile.TemporaryDirectory(prefix="mlirc-bench-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache}
        cmd = [sys.executable, str(Path(__file__).resolve()), name, "--repeat", str(repeat), "--json-only"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"case": name, "backends": {}, "error": proc.stderr.strip().splitlines()[-1:] or ["crashed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}; {os.cpu_count()} cores; torch {torch.__version__} with {torch.get_num_threads()} threads"


def table(rows: list[dict]) -> str:
    head = "| case | eager ms | inductor ms | mlirc ms | inductor x | mlirc x | mlirc err | inductor compile s | mlirc compile s | mlirc fallback |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in rows:
        b = row["backends"]

        def cell(backend: str, key: str, fmt: str) -> str:
            entry = b.get(backend, {})
            if "error" in entry:
                return "error"
            return format(entry[key], fmt) if key in entry else "-"

        lines.append(
            f"| {row['case']} | {cell('eager', 'median_ms', '.3f')} | {cell('inductor', 'median_ms', '.3f')} "
            f"| {cell('mlirc', 'median_ms', '.3f')} | {cell('inductor', 'speedup', '.2f')} "
            f"| {cell('mlirc', 'speedup', '.2f')} | {cell('mlirc', 'max_err', '.1e')} "
            f"| {cell('inductor', 'cold_compile_s', '.1f')} | {cell('mlirc', 'cold_compile_s', '.1f')} "
            f"| {cell('mlirc', 'fallback_nodes', 'd')} |"
        )
    speedups = {
        k: [r["backends"][k]["speedup"] for r in rows if "speedup" in r["backends"].get(k, {})] for k in BACKENDS
    }
    geo = " ".join(f"{k} {statistics.geometric_mean(v):.2f}x" for k, v in speedups.items() if v and k != "eager")
    lines.append(f"\ngeometric-mean speedup over eager: {geo}")
    return "\n".join(lines)


def main() -> None:
    from models import CASES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: all of {', '.join(CASES)})")
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per backend (median reported)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    names = args.cases or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
    if args.json_only:
        print(json.dumps(measure_case(names[0], args.repeat)))
        return
    rows = []
    for name in names:
        row = _run_isolated(name, args.repeat)
        rows.append(row)
        print(f"{name}: done" + (f" (error: {row['error']})" if "error" in row else ""), file=sys.stderr)
    text = f"{machine()}; medians of {args.repeat} calls after warm-up\n\n{table(rows)}"
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
