"""The OpInfo sweep: every op of PyTorch's `op_db` through torch.compile, against eager.

    python tests/opinfo_sweep.py                      # CI sample, mlirc: summary table
    python tests/opinfo_sweep.py --full               # every sample input
    python tests/opinfo_sweep.py --backend inductor   # the reference point
    python tests/opinfo_sweep.py --update             # rewrite tests/opinfo_expected.tsv
    python tests/opinfo_sweep.py --ops add,softmax -v # a few ops, with reasons
    python tests/opinfo_sweep.py --device cuda --dtypes float32,float16,bfloat16
                                                      # the same sample on CUDA tensors
    python tests/opinfo_sweep.py --dynamic --check    # torch.compile(dynamic=True): every
                                                      # size symbolic; against the static file

For each (op, dtype) all sample inputs (or the first few, in the CI sample) are
called in one compiled function, so one compile covers the pair.  Its status is the
worst over the samples:

  compiled  every output matches eager and no node of any graph fell back
            (library kernels -- LAPACK, FFT -- are not fallback, as for Inductor)
  fallback  matches eager, but some nodes ran eagerly (reason: the ops and why)
  eager     matches eager, but Dynamo sent no graph with compute to the backend
  wrong     an output differs from eager (never acceptable for mlirc)
  error     compiling or running raised (or the worker crashed / timed out)

Cases run in worker processes, so a crash or a hang costs one case, not the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "opinfo_expected.tsv"
DTYPES = ("float32", "float64", "int64", "bool")
HALF_DTYPES = ("float16", "bfloat16")
EXTRA_DTYPES = HALF_DTYPES  # on request (--dtypes), e.g. for the GPU sweep
STATUSES = ("compiled", "fallback", "eager", "wrong", "error")
CI_SAMPLES = 3  # samples per (op, dtype) in the CI sweep
CASE_TIMEOUT_S = 180

# Ops whose outputs are random or uninitialized: eager and compiled cannot agree.
NONDETERMINISTIC = frozenset(
    {
        "bernoulli",
        "cauchy",
        "empty",
        "empty_like",
        "empty_permuted",
        "empty_strided",
        "exponential",
        "geometric",
        "log_normal",
        "multinomial",
        "new_empty",
        "new_empty_strided",
        "nn.functional.alpha_dropout",
        "nn.functional.dropout",
        "nn.functional.dropout2d",
        "nn.functional.dropout3d",
        "nn.functional.feature_alpha_dropout",
        "nn.functional.rrelu",
        "normal",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "uniform",
        "torch._refs.nn.functional.dropout",
    }
)

# Outputs that are uninitialized memory: attention's dropout seed and offset are
# `at::empty` when dropout_p is 0 (the CUDA-only fused attention ops).
UNDEFINED_OUTPUTS = {
    "torch.ops.aten._efficient_attention_forward": (2, 3),
    "torch.ops.aten._flash_attention_forward": (2, 3),
}

# (atol, rtol) per output dtype; integer and bool results must be exact.
TOLERANCE = {
    "torch.float16": (1e-3, 1e-3),
    "torch.bfloat16": (1e-2, 1.6e-2),
    "torch.float32": (1e-4, 1e-4),
    "torch.complex32": (1e-3, 1e-3),
    "torch.complex64": (1e-4, 1e-4),
    "torch.float64": (1e-7, 1e-7),
    "torch.complex128": (1e-7, 1e-7),
}


@dataclass
class Result:
    case: str  # "<op>[.<variant>]|<dtype>"
    status: str
    reason: str = ""
    seconds: float = 0.0
    # with --dynamic: the symbolic graphs mlirc imported once with their symbolic sizes,
    # of those it was given ("2/3"; the rest are specialized per size)
    symbolic: str = ""


def case_name(op, dtype: str) -> str:
    name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    return f"{name}|{dtype}"


def all_cases(only: set[str] | None = None, dtypes: tuple[str, ...] = DTYPES, device: str = "cpu") -> list[str]:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    cases = []
    for op in op_db:
        if op.name in NONDETERMINISTIC or (only and op.name not in only):
            continue
        supported = op.supported_dtypes(device)
        cases += [case_name(op, d) for d in dtypes if getattr(torch, d) in supported]
    return cases


# ---------------------------------------------------------------- one case (worker side)


def _find_op(name: str):
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if case_name(op, "x").split("|")[0] == name:
            return op
    raise KeyError(name)


def _clone(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _compare(actual, expected, skip: tuple[int, ...] = ()) -> str | None:
    """None if equal within each output dtype's tolerance, else a short description.
    Flat outputs numbered in `skip` hold no defined value and are not compared."""
    import torch
    from torch.utils._pytree import tree_flatten

    got, got_spec = tree_flatten(actual)
    want, want_spec = tree_flatten(expected)
    if got_spec != want_spec:
        return f"output structure differs: {got_spec} vs {want_spec}"
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        if i in skip:
            continue
        atol, rtol = TOLERANCE.get(str(getattr(e, "dtype", None)), (0, 0))
        try:
            torch.testing.assert_close(a, e, atol=atol, rtol=rtol, equal_nan=True, check_device=False)
        except (AssertionError, TypeError, ValueError, RuntimeError) as err:
            return f"output {i}: " + " ".join(str(err).split())[:160]
    return None


def _eager_samples(op, dtype, max_samples: int | None, device: str = "cpu"):
    """Samples on which eager runs, each with its expected output."""
    import torch

    good = []
    for sample in op.sample_inputs(device, getattr(torch, dtype), requires_grad=False):
        if max_samples is not None and len(good) >= max_samples:
            break
        torch.manual_seed(0)
        try:
            expected = op(*_clone([sample.input, *sample.args]), **_clone(sample.kwargs))
        except Exception:  # eager rejects the sample: nothing to compare
            continue
        good.append((sample, expected))
    return good


def _reference_in_float(fn, sample, expected):
    """Eager's answer computed in float32 and rounded to each output's dtype.

    A fused kernel keeps half-precision intermediates in float32 (as Inductor's
    do), so it can differ from eager's op-by-op rounding -- by being closer to the
    exact answer.  Such a result is right if it matches this reference, which is
    how Inductor's own OpInfo tests judge half precision (reference_in_float)."""
    import torch
    from torch.utils._pytree import tree_map

    wider = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.complex32: torch.complex64}

    def upcast(x):
        return x.to(wider[x.dtype]) if isinstance(x, torch.Tensor) and x.dtype in wider else x

    args, kwargs = tree_map(upcast, _clone([sample.input, *sample.args])), tree_map(upcast, _clone(sample.kwargs))
    torch.manual_seed(0)
    try:  # no float32 path for these arguments, or other outputs: eager's answer stands
        wide = fn(*args, **kwargs)
        return tree_map(lambda e, w: w.to(e.dtype) if isinstance(e, torch.Tensor) else e, expected, wide)
    except Exception:
        return expected


def _as_accurate_as_eager(got, expected, fn, sample, skip: tuple[int, ...]) -> bool:
    """Half precision: `got` matches eager computed in float32, or is no farther
    from it than eager's own answer is (library kernels such as cuFFT round
    differently for different input layouts)."""
    import torch
    from torch.utils._pytree import tree_flatten

    reference = _reference_in_float(fn, sample, expected)
    if _compare(got, reference, skip) is None:
        return True
    flat = [tree_flatten(t)[0] for t in (got, expected, reference)]
    if len({len(f) for f in flat}) != 1:
        return False
    for i, (g, e, r) in enumerate(zip(*flat, strict=True)):
        if i in skip:
            continue
        if not isinstance(e, torch.Tensor) or not (e.is_floating_point() or e.is_complex()):
            if _compare(g, e) is not None:  # integers, bools, indices: exact, as always
                return False
            continue
        atol = TOLERANCE.get(str(e.dtype), (0, 0))[0]
        g, e, r = (t.to(torch.complex128 if t.is_complex() else torch.float64) for t in (g, e, r))
        if g.shape != e.shape or not torch.equal(g.isnan(), e.isnan()):
            return False
        if g.numel() and (g - r).abs().nan_to_num(0).max() > (e - r).abs().nan_to_num(0).max() + atol:
            return False
    return True


def _reaches_compute(call_all, inputs) -> bool:
    """Whether Dynamo hands any backend an ATen op for these inputs.  Where it does
    not (graph breaks, alias-only results), no backend compiles anything, so such a
    case counts as `eager` for every backend, as mlirc's stats report it."""
    import torch
    from torch._dynamo.backends.common import aot_autograd

    ops = 0

    def count(gm, _example_inputs):
        nonlocal ops
        ops += sum(1 for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload))
        return gm

    torch._dynamo.reset()
    torch.manual_seed(0)
    torch.compile(call_all, backend=aot_autograd(fw_compiler=count))(inputs)
    return ops > 0


def _fallback_reason(stats) -> str:
    if stats.fallback_ops:
        # One line: the expectations file is a TSV with one case per line.
        return " ".join("; ".join(sorted(stats.fallback_ops)).split())[:200]
    return f"{stats.failed_regions} region(s) failed to compile"


def run_case(case: str, backend: str, max_samples: int | None, device: str = "cpu", dynamic: bool = False) -> Result:
    import torch

    import mlirc

    start = time.perf_counter()
    name, dtype = case.split("|")
    op = _find_op(name)
    samples = _eager_samples(op, dtype, max_samples, device)
    if not samples:
        return Result(case, "eager", "eager rejects every sample input")

    fn = op.op  # the function itself: Dynamo need not trace the OpInfo object

    def call_all(inputs):
        return [fn(*args, **kwargs) for args, kwargs in inputs]

    inputs = [([_clone(s.input), *_clone(s.args)], _clone(s.kwargs)) for s, _ in samples]
    torch._dynamo.reset()
    mlirc.reset_stats()
    torch.manual_seed(0)
    try:
        actual = torch.compile(call_all, backend=backend, dynamic=dynamic or None)(inputs)
    except Exception as err:
        return Result(case, "error", f"{type(err).__name__}: {' '.join(str(err).split())}"[:200])
    skip = UNDEFINED_OUTPUTS.get(name, ())
    for i, ((sample, expected), got) in enumerate(zip(samples, actual, strict=True)):
        diff = _compare(got, expected, skip)
        if diff is not None and dtype in HALF_DTYPES and _as_accurate_as_eager(got, expected, fn, sample, skip):
            diff = None
        if diff is not None:
            return Result(case, "wrong", f"sample {i}: {diff}", time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    if backend != "mlirc":
        fresh = [([_clone(s.input), *_clone(s.args)], _clone(s.kwargs)) for s, _ in samples]
        if not _reaches_compute(call_all, fresh):  # judged as mlirc's cases are
            return Result(case, "eager", "no graph with compute reached the backend", elapsed)
        return Result(case, "compiled", "", elapsed)
    stats = mlirc.stats()
    if stats.fallback_nodes or stats.failed_regions:
        return Result(case, "fallback", _fallback_reason(stats), elapsed)
    if stats.compiled_nodes == 0 and stats.library_nodes == 0:
        return Result(case, "eager", "no graph with compute reached mlirc", elapsed)
    symbolic = f"{stats.symbolic_imports}/{stats.symbolic_graphs}" if stats.symbolic_graphs else ""
    return Result(case, "compiled", "", elapsed, symbolic)


def worker(backend: str, max_samples: int | None, device: str, dynamic: bool = False) -> None:
    """Read case names on stdin; write one JSON result per line on stdout."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    out = sys.stdout
    sys.stdout = sys.stderr  # ops that print must not corrupt the protocol
    for line in sys.stdin:
        case = line.strip()
        if case:
            out.write(json.dumps(asdict(run_case(case, backend, max_samples, device, dynamic))) + "\n")
            out.flush()


# ---------------------------------------------------------------- the sweep (parent side)


class _Worker:
    def __init__(self, backend: str, max_samples: int | None, device: str, dynamic: bool = False) -> None:
        self.args = (backend, max_samples, device, dynamic)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--backend", backend, "--device", device]
        cmd += ["--dynamic"] if dynamic else []
        cmd += ["--full"] if max_samples is None else ["--samples", str(max_samples)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        self.case: str | None = None
        self.started = 0.0

    def send(self, case: str) -> None:
        self.case, self.started = case, time.perf_counter()
        self.proc.stdin.write(case + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def sweep(
    cases: list[str], backend: str, max_samples: int | None, jobs: int, progress: bool, device: str = "cpu",
    dynamic: bool = False,
) -> list[Result]:  # fmt: skip
    pending, results = list(reversed(cases)), []
    workers = [_Worker(backend, max_samples, device, dynamic) for _ in range(min(jobs, len(cases)))]
    for w in workers:
        if pending:
            w.send(pending.pop())
    while any(w.case for w in workers):
        busy = {w.proc.stdout.fileno(): w for w in workers if w.case}
        ready, _, _ = select.select(list(busy), [], [], 5.0)
        for fd in ready:
            w = busy[fd]
            line = w.proc.stdout.readline()
            if line:
                results.append(Result(**json.loads(line)))
            else:  # the worker died inside this case
                results.append(Result(w.case, "error", f"worker crashed (exit {w.proc.wait()})"))
                w.__init__(*w.args)
            _next(w, pending)
            if progress:
                print(f"[{len(results)}/{len(cases)}] {results[-1].case}: {results[-1].status}", file=sys.stderr)
        for w in workers:
            if w.case and time.perf_counter() - w.started > CASE_TIMEOUT_S:
                w.close()
                results.append(Result(w.case, "error", f"timed out after {CASE_TIMEOUT_S}s"))
                w.__init__(*w.args)
                _next(w, pending)
    for w in workers:
        w.close()
    return sorted(results, key=lambda r: r.case)


def _next(w: _Worker, pending: list[str]) -> None:
    if pending:
        w.send(pending.pop())
    else:
        w.case = None


# ---------------------------------------------------------------- expectations and report


def read_expected(path: Path = EXPECTED) -> dict[str, tuple[str, str]]:
    expected = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            case, status, *reason = line.split("\t")
            expected[case] = (status, reason[0] if reason else "")
    return expected


def write_expected(results: list[Result], path: Path = EXPECTED) -> None:
    lines = [
        "# OpInfo sweep expectations (CI sample): case<TAB>status<TAB>reason.",
        "# Regenerate with `python tests/opinfo_sweep.py --update`; CI fails on any change.",
    ]
    lines += [f"{r.case}\t{r.status}\t{r.reason}".rstrip("\t") for r in results]
    path.write_text("\n".join(lines) + "\n")


def compare_with_expected(results: list[Result], expected: dict[str, tuple[str, str]]) -> list[str]:
    """Every difference in status (regressions and improvements alike)."""
    problems = []
    got = {r.case: r for r in results}
    for case in sorted(set(got) | set(expected)):
        want = expected.get(case, ("(absent)", ""))[0]
        have = got[case].status if case in got else "(absent)"
        if want != have:
            kind = "changed"
            if want in STATUSES and have in STATUSES:
                kind = "improved" if STATUSES.index(have) < STATUSES.index(want) else "REGRESSED"
            detail = got[case].reason if case in got else ""
            problems.append(f"{kind}: {case}: expected {want}, got {have} {detail}".rstrip())
    return problems


def summary(results: list[Result], backend: str) -> str:
    lines = [f"OpInfo sweep with backend={backend}: {len(results)} (op, dtype) cases"]
    header = f"{'dtype':10}" + "".join(f"{s:>10}" for s in STATUSES)
    lines.append(header)
    for dtype in (*DTYPES, *EXTRA_DTYPES):
        counts = Counter(r.status for r in results if r.case.endswith("|" + dtype))
        if not counts:
            continue
        lines.append(f"{dtype:10}" + "".join(f"{counts[s]:>10}" for s in STATUSES))
    reasons = Counter()
    for r in results:
        if r.status == "fallback":
            for part in r.reason.split("; "):
                reasons[part] += 1
    symbolic = [r for r in results if r.symbolic]
    if symbolic:
        imported = sum(int(r.symbolic.split("/")[0]) for r in symbolic)
        given = sum(int(r.symbolic.split("/")[1]) for r in symbolic)
        whole = sum(r.symbolic.split("/")[0] == r.symbolic.split("/")[1] for r in symbolic)
        lines.append(
            f"\nsymbolic graphs imported once with their symbolic sizes: {imported} of {given}"
            f" ({whole} of {len(symbolic)} compiled cases had all theirs imported so)"
        )
    if reasons:
        lines.append("\nfallback reasons, by number of cases:")
        lines += [f"{n:6}  {reason}" for reason, n in reasons.most_common()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="mlirc")
    parser.add_argument("--full", action="store_true", help="every sample input (default: the CI sample)")
    parser.add_argument("--samples", type=int, default=CI_SAMPLES, help="samples per (op, dtype)")
    parser.add_argument("--ops", help="comma-separated op names (default: all)")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--device", default="cpu", help="where the sample inputs live (cpu, cuda)")
    parser.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (symbolic sizes)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--update", action="store_true", help=f"rewrite {EXPECTED.name}")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if results differ from {EXPECTED.name}")
    parser.add_argument("--json", type=Path, help="write every result to this file")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    max_samples = None if args.full else args.samples
    if args.device != "cpu" and (args.update or args.check):
        parser.error(f"{EXPECTED.name} holds the CPU sweep; --update/--check need --device cpu")
    if args.dynamic and args.update:
        parser.error(f"{EXPECTED.name} holds the static sweep; --dynamic checks against it, never rewrites it")
    if args.worker:
        worker(args.backend, max_samples, args.device, args.dynamic)
        return 0
    dtypes = tuple(args.dtypes.split(","))
    cases = all_cases(set(args.ops.split(",")) if args.ops else None, dtypes, args.device)
    results = sweep(cases, args.backend, max_samples, args.jobs, args.verbose, args.device, args.dynamic)
    if args.verbose:
        for r in results:
            print(f"{r.case:45} {r.status:9} {r.seconds:6.1f}s {r.reason}")
    print(summary(results, args.backend))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    if args.update:  # with --ops/--dtypes: only those cases change in the file
        if args.ops or args.dtypes != ",".join(DTYPES):
            merged = {case: Result(case, status, reason) for case, (status, reason) in read_expected().items()}
            merged.update({r.case: r for r in results})
            results = sorted(merged.values(), key=lambda r: r.case)
        write_expected(results)
    if args.check:
        expected = read_expected()
        if args.ops or args.dtypes != ",".join(DTYPES):  # a subset: compare just those cases
            expected = {case: expected[case] for case in (r.case for r in results) if case in expected}
        problems = compare_with_expected(results, expected)
        print("\n".join(problems) or "matches the expectations")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
