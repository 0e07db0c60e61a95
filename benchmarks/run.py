"""Eager vs Inductor vs IREE vs mlirc on the benchmark cases (benchmarks/models.py).

    python benchmarks/run.py                    # every case, each in its own process
    python benchmarks/run.py mlp softmax_512x1024 --repeat 50 --markdown out.md
    python benchmarks/run.py --results benchmarks/results   # + <host>.md and <host>.png
    python benchmarks/run.py --dynamic          # every backend with torch.compile(dynamic=True)
    python benchmarks/run.py --suite zoo --repeat 10 --results benchmarks/results   # real models
    python benchmarks/run.py --suite zoo --dtype bfloat16 bert_base@1 resnet18@1

Suites: `bench` (benchmarks/models.py: models and microbenchmarks written here, which
mlirc was tuned on) and `zoo` (benchmarks/zoo.py: transformers/timm architectures it
was not); each writes its own results files.

Peers at their documented settings: Inductor both default and with `freezing`
(Inductor's advice for CPU inference: weights become constants, batch norm folds
into convolutions, oneDNN weights are pre-packed); IREE (iree-turbine's
`turbine_cpu` backend) where the `bench` extra is installed (`pip install -e
'.[bench]'`), otherwise its column says so.

Per case and backend: cold compile time (first call after a reset, with an empty
Inductor cache), warm compile time (the same again: Inductor's on-disk caches are
now full), the median of repeated timed calls after warm-up (backends take turns,
round by round, so the machine's slow spells fall on all of them), the speedup over eager
and the max error against eager, relative to the largest magnitude of eager's output
(|mlirc - eager|.max() / |eager|.max(), worst over the outputs).  Inference (torch.no_grad); the MHA fast path is
off so eager and the compilers run the same (standard) attention path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import models  # noqa: E402

# The case table in use: a module with CASES, MODELS and make_case (--suite).
SUITES = {"bench": "models", "zoo": "zoo"}
SUITE, SUITE_NAME = models, "bench"
DTYPE = "float32"  # --dtype: the models' parameters and floating-point inputs

HERE = Path(__file__).resolve().parent
BACKENDS = ("eager", "inductor", "inductor-freezing", "iree", "mlirc")
# torch.compile's arguments per backend
COMPILE_ARGS = {
    "inductor": {"backend": "inductor"},
    "inductor-freezing": {"backend": "inductor"},
    "iree": {"backend": "turbine_cpu"},
    "mlirc": {"backend": "mlirc"},
    # with --dynamic: mlirc without it, timed in the same rounds as mlirc with it
    "mlirc-static": {"backend": "mlirc"},
}
# Inductor settings a backend compiles under (torch._inductor.config.patch around its
# first call).  Not torch.compile(options={"freezing": True}): on torch 2.13 that
# compiles without freezing (aten convolutions, no packed weights, same times as the
# default), which this table reported as Inductor+freezing until 2026-11-25.
INDUCTOR_CONFIG = {"inductor-freezing": {"freezing": True}}
# What the table's header says of each peer's settings.
SETTINGS = (
    "eager: torch.backends.mha fast path off, so every backend runs the same attention path; "
    "inductor: default options; inductor-freezing: torch._inductor.config.freezing=True; iree: turbine_cpu"
)


def _interleaved_ms(fns: dict[str, Callable], args: tuple, repeat: int, warmup: int = 3) -> dict[str, float]:
    """Median ms per call of each function, timed in rounds that take turns.

    Every round times each backend once (in a rotating order), so a slow spell of a
    shared machine lands on all backends alike instead of on whichever one happened
    to be measured then; the ratios are what the table is for.  A turn starts with an
    untimed call, since the previous backend's frees and allocations leave the heap
    in a state this one's steady state does not see (page faults on reallocated
    memory cost the second backend up to 2x).  A sample is a batch of calls lasting
    about a millisecond, so microsecond cases are not timer noise.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn(*args)
    fastest = min(_one_call_s(fn, args) for fn in fns.values())
    batch = max(1, min(100, int(1e-3 / max(fastest, 1e-7))))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for round_ in range(repeat):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            fn = fns[name]
            fn(*args)  # untimed: back in this backend's steady state (allocator, caches)
            start = time.perf_counter()
            for _ in range(batch):
                fn(*args)
            samples[name].append((time.perf_counter() - start) / batch)
    return {name: statistics.median(times) * 1e3 for name, times in samples.items()}


def _one_call_s(fn: Callable, args: tuple) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _max_error(actual, expected) -> float:
    import torch

    if isinstance(expected, torch.Tensor):
        expected, actual = [expected], [actual]
    worst = 0.0
    for a, e in zip(actual, expected, strict=True):
        if e.numel():
            scale = max(e.double().abs().nan_to_num(0.0, 0.0, 0.0).max().item(), 1e-30)
            worst = max(worst, (a.double() - e.double()).abs().nan_to_num(0.0).max().item() / scale)
    return worst


def _first_call_s(fn: Callable, backend: str, args: tuple, tag: str) -> tuple[Callable, float, object]:
    import torch
    from models import own_frame

    compiled = torch.compile(own_frame(fn, f"{backend.replace('-', '_')}_{tag}"), **COMPILE_ARGS[backend])
    with _inductor_config(backend):
        start = time.perf_counter()
        out = compiled(*args)
        return compiled, time.perf_counter() - start, out


def _inductor_config(backend: str) -> contextlib.AbstractContextManager:
    if backend not in INDUCTOR_CONFIG:
        return contextlib.nullcontext()
    import torch._inductor.config

    return torch._inductor.config.patch(INDUCTOR_CONFIG[backend])


# Backends measured together, each group in its own process with its own eager
# baseline: IREE's MLIR bindings and ours cannot be loaded into one process.
PROCESS_GROUPS = (("inductor", "inductor-freezing", "mlirc"), ("iree",))


def _peers(rows: list[dict]) -> tuple[str, ...]:
    """The table's compiler columns: BACKENDS', and mlirc-static where it ran (--dynamic)."""
    static = any("mlirc-static" in r["backends"] for r in rows)
    return (*BACKENDS[1:], *(("mlirc-static",) if static else ()))


def _make_case(name: str) -> tuple[Callable, tuple]:
    import torch

    fn, args = SUITE.make_case(name)
    dtype = getattr(torch, DTYPE)
    if dtype != torch.float32:
        fn = fn.to(dtype) if isinstance(fn, torch.nn.Module) else fn
        args = tuple(a.to(dtype) if a.is_floating_point() else a for a in args)
    return fn, args


def measure_case(name: str, repeat: int, backends: tuple[str, ...]) -> dict:
    """Run one case eagerly and on `backends` in this process; return its row."""
    import torch

    import mlirc

    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)
    row: dict = {"case": name, "backends": {}}
    missing = getattr(SUITE, "unavailable", lambda _: None)(name)
    if missing:
        row["backends"] = {b: {"error": f"not installed: {missing}"} for b in ("eager", *backends)}
        return row
    fn, args = _make_case(name)
    torch._dynamo.reset()
    with torch.no_grad():
        expected = fn(*args)
        timed: dict[str, Callable] = {"eager": fn}
        row["backends"]["eager"] = {"speedup": 1.0, "max_err": 0.0}
        for backend in backends:
            if backend == "iree" and not _iree_available():
                row["backends"][backend] = {"error": "not installed (pip install -e '.[bench]')"}
                continue
            try:
                _, cold_s, out = _first_call_s(fn, backend, args, "cold")
                if backend.startswith("mlirc"):
                    mlirc.reset_stats()  # count the second compile only
                compiled, warm_s, out = _first_call_s(fn, backend, args, "warm")
                compiled(*args)  # a failure at run time is the backend's, not the timing loop's
            except Exception as err:  # a benchmark reports a failing backend, it does not stop
                row["backends"][backend] = {"error": f"{type(err).__name__}: {err}"[:200]}
                continue
            timed[backend] = compiled
            entry = {"max_err": _max_error(out, expected), "cold_compile_s": cold_s, "warm_compile_s": warm_s}
            if backend.startswith("mlirc"):
                stats = mlirc.stats()
                entry["fallback_nodes"] = stats.fallback_nodes
                entry["kernels"] = stats.kernels
            row["backends"][backend] = entry
        medians = _interleaved_ms(timed, args, repeat)
        for backend, ms in medians.items():
            row["backends"][backend].update(median_ms=ms, speedup=medians["eager"] / ms)
    return row


def _iree_available() -> bool:
    try:
        import iree.turbine  # noqa: F401  (registers the turbine_cpu backend)
    except ImportError:
        return False
    return True


def _run_isolated(name: str, repeat: int, dynamic: bool = False) -> dict:
    """One process per case and backend group: no cache or allocator state leaks."""
    row: dict = {"case": name, "backends": {}}
    groups = [(*PROCESS_GROUPS[0], "mlirc-static"), *PROCESS_GROUPS[1:]] if dynamic else PROCESS_GROUPS
    for group in groups:
        with tempfile.TemporaryDirectory(prefix="mlirc-bench-") as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache}
            cmd = [sys.executable, str(Path(__file__).resolve()), name, "--repeat", str(repeat)]
            cmd += ["--suite", SUITE_NAME, "--dtype", DTYPE, *(["--dynamic"] if dynamic else [])]
            proc = subprocess.run([*cmd, "--json-only", ",".join(group)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            reason = (proc.stderr.strip().splitlines() or ["crashed"])[-1]
            row["backends"].update({b: {"error": f"process failed: {reason}"[:200]} for b in group})
            continue
        measured = json.loads(proc.stdout.strip().splitlines()[-1])["backends"]
        if "error" in measured.get("eager", {}):  # not installed here: every column says so
            row["backends"] = measured
            break
        row["backends"].setdefault("eager", measured["eager"])  # the first group's eager is the table's
        row["backends"].update({b: measured[b] for b in group})
    return row


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


def _cell(row: dict, backend: str, key: str, fmt: str) -> str:
    entry = row["backends"].get(backend, {})
    if "error" in entry:
        return "n/a" if entry["error"].startswith("not installed") else "error"
    return format(entry[key], fmt) if key in entry else "-"


def geometric_means(rows: list[dict]) -> dict[str, float]:
    """Per backend, over the cases where it ran."""
    means = {}
    for backend in _peers(rows):
        speedups = [r["backends"][backend]["speedup"] for r in rows if "speedup" in r["backends"].get(backend, {})]
        if speedups:
            means[backend] = statistics.geometric_mean(speedups)
    return means


def table(rows: list[dict]) -> str:
    peers = _peers(rows)
    head = (
        "| case | eager ms | "
        + " | ".join(f"{b} ms" for b in peers)
        + " | "
        + " | ".join(f"{b} x" for b in peers)
        + " | mlirc rel err | "
        + " | ".join(f"{b} compile s" for b in peers)
        + " | mlirc warm compile s | mlirc fallback |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in rows:
        cells = [
            _cell(row, "eager", "median_ms", ".3f"),
            *(_cell(row, b, "median_ms", ".3f") for b in peers),
            *(_cell(row, b, "speedup", ".2f") for b in peers),
            _cell(row, "mlirc", "max_err", ".1e"),
            *(_cell(row, b, "cold_compile_s", ".1f") for b in peers),
            _cell(row, "mlirc", "warm_compile_s", ".2f"),
            _cell(row, "mlirc", "fallback_nodes", "d"),
        ]
        lines.append(f"| {row['case']} | " + " | ".join(cells) + " |")
    models = [r for r in rows if r["case"] in SUITE.MODELS]
    for label, subset in (("models", models), ("all cases", rows)):
        means = geometric_means(subset)
        if means:
            text = ", ".join(f"{b} {m:.2f}x" for b, m in means.items())
            lines.append(f"\ngeometric-mean speedup over eager, {label} ({len(subset)}): {text}")
    return "\n".join(lines)


def plot(rows: list[dict], title: str, path: Path) -> bool:
    """Speedup over eager per case and backend, as a bar chart; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    backends = _peers(rows)
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    width = 0.8 / len(backends)
    for i, backend in enumerate(backends):
        values = [r["backends"].get(backend, {}).get("speedup", 0.0) for r in rows]
        ax.bar([x + i * width for x in range(len(rows))], values, width, label=backend)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(rows))], [r["case"] for r in rows], rotation=40, ha="right")
    ax.set_ylabel("speedup over eager (higher is better)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=8)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _merged(previous: Path, rows: list[dict]) -> list[dict]:
    """Earlier rows of this machine's results, in suite order, updated by `rows`."""
    by_case = {}
    if previous.exists():
        by_case = {r["case"]: r for r in json.loads(previous.read_text())["rows"]}
    by_case.update({r["case"]: r for r in rows})
    return [by_case[c] for c in SUITE.CASES if c in by_case]


def host_tag(machine_text: str, header: str = "") -> str:
    """A file name for a machine's results: its core count and CPU model (zoo- for
    the zoo, -dynamic for a --dynamic run and -bfloat16 for a --dtype bfloat16 one,
    kept apart from the float32 static results)."""
    cpu, cores = (part.strip().lower() for part in machine_text.split(";")[:2])
    suite = "zoo-" if "suite zoo" in header else ""
    dtype = next((f"-{d}" for d in ("bfloat16", "float16") if f"dtype {d}" in header), "")
    dynamic = "-dynamic" if "dynamic=True" in header else ""
    return f"{suite}{cores.split()[0]}-core-" + re.sub("[^a-z0-9]+", "-", cpu).strip("-")[:48] + dynamic + dtype


def _select_suite(name: str, dtype: str) -> None:
    global SUITE, SUITE_NAME, DTYPE
    SUITE, SUITE_NAME, DTYPE = __import__(SUITES[name]), name, dtype


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="cases to run (default: all of the suite's)")
    parser.add_argument("--suite", choices=tuple(SUITES), default="bench", help="which case table")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    parser.add_argument(
        "--repeat", type=int, default=30, help="timed rounds; each times every backend once (median reported)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--results", type=Path, help="write <folder>/<host>.md, .json and .png (the plot)")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        help="no runs: merge these results .json files (parts of one suite run) into --results",
    )
    parser.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (symbolic sizes)")
    parser.add_argument("--json-only", metavar="BACKENDS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    _select_suite(args.suite, args.dtype)
    cases = SUITE.CASES
    settings = SETTINGS + (f"; suite {args.suite}" if args.suite != "bench" else "")
    settings += f"; dtype {args.dtype}" if args.dtype != "float32" else ""
    if args.dynamic:
        for backend, compile_args in COMPILE_ARGS.items():
            compile_args["dynamic"] = backend != "mlirc-static"
        settings += "; every backend with dynamic=True but mlirc-static (mlirc without it, in the same rounds)"
    names = args.cases or list(cases)
    unknown = [n for n in names if n not in cases]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {', '.join(cases)}")
    if args.json_only:
        print(json.dumps(measure_case(names[0], args.repeat, tuple(args.json_only.split(",")))))
        return
    if args.merge:
        parts = [json.loads(path.read_text()) for path in args.merge]
        rows = [row for part in parts for row in part["rows"]]
        _write_results(args.results or Path("."), parts[0]["machine"], _merged_header(parts), rows)
        return
    rows = []
    for name in names:
        row = _run_isolated(name, args.repeat, args.dynamic)
        rows.append(row)
        print(f"{name}: done" + (f" (error: {row['error']})" if "error" in row else ""), file=sys.stderr)
    command = "python benchmarks/run.py " + " ".join(sys.argv[1:])
    header = (
        f"{machine()}; medians of {args.repeat} interleaved rounds after warm-up; {settings}; last made by `{command}`"
    )
    text = f"{header}\n\n{table(rows)}"
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.results:
        _write_results(args.results, machine(), header, rows)


def _merged_header(parts: list[dict]) -> str:
    """One header naming every part's command: a suite run in parts (the GPU host's
    10-minute limit per call) is reproduced by running all of them and merging."""
    first = parts[0]["header"]
    prefix = first.split("; last made by ")[0]
    commands = [part["header"].split("; last made by ")[-1] for part in parts]
    merge = "python benchmarks/run.py --merge " + " ".join(f"PART{i + 1}.json" for i in range(len(parts)))
    return f"{prefix}; made in {len(parts)} parts, {', '.join(commands)}, merged by `{merge} --results DIR`"


def _write_results(folder: Path, machine_text: str, header: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / host_tag(machine_text, header)
    rows = _merged(stem.with_suffix(".json"), rows)  # a suite can be run in parts
    text = f"{header}\n\n{table(rows)}"
    stem.with_suffix(".md").write_text(text + "\n")
    record = {"machine": machine_text, "header": header, "rows": rows}
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    if plot(rows, header, stem.with_suffix(".png")):
        print(f"wrote {stem}.md, .json and .png", file=sys.stderr)


if __name__ == "__main__":
    main()
