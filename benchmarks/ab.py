"""A/B: mlirc at another commit against this checkout, on the benchmark cases.

    python benchmarks/ab.py --base 064c751                 # every case
    python benchmarks/ab.py --base HEAD~3 bert gelu --rounds 40
    python benchmarks/ab.py --base HEAD~3 convnextv2_atto@1    # zoo cases too
    python benchmarks/ab.py --base-dir /tmp/base   # a tree of A without git (git archive A | tar -x)

Two mlirc versions cannot share a process (one package name), so each case runs in
two long-lived worker processes, A (the base commit, checked out into a temporary
git worktree) and B (this checkout), each holding its compiled model.  The driver
asks them for a timed batch in turn (A B, then B A, ...): the two samples of a round
are taken a fraction of a second apart, so a slow spell of a shared machine falls on
both.  The figure is the median over the rounds of B's time over A's; beside it,
B's fastest batch over A's (page faults and a neighbour's load only add time, so
the fastest batches are the code's own speed).

Why not a ratio to eager in separate processes (what this script did first): on the
2-core machine, eager's own time for one model differs up to 3x from one process to
the next and within one, so mlirc/eager ratios from different processes moved by
+-70% with no change to mlirc.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

SAMPLE_S = 0.05  # one timed batch lasts about this long


def _package_dir(checkout: Path, scratch: Path, tag: str) -> Path:
    """A folder holding `mlirc` -> checkout: on PYTHONPATH, it wins over the installed one."""
    folder = scratch / f"pkg-{tag}"
    folder.mkdir()
    (folder / "mlirc").symlink_to(checkout)
    return folder


def worker(case: str) -> None:
    """Compile `case` with mlirc, then answer each line `n` with the ms per call of n calls."""
    import torch
    import zoo
    from models import make_case

    import mlirc

    torch.manual_seed(0)
    torch.backends.mha.set_fastpath_enabled(False)
    fn, args = zoo.make_case(case) if "@" in case else make_case(case)  # `<model>@<batch>`: a zoo case
    with torch.no_grad():
        compiled = torch.compile(fn, backend="mlirc")
        for _ in range(3):
            compiled(*args)
        start = time.perf_counter()
        compiled(*args)
        print(f"ready {time.perf_counter() - start} {mlirc.stats().fallback_nodes}", flush=True)
        for line in sys.stdin:
            calls = int(line)
            compiled(*args)  # untimed: back in this version's steady state (allocator, caches)
            start = time.perf_counter()
            for _ in range(calls):
                compiled(*args)
            print((time.perf_counter() - start) / calls * 1e3, flush=True)


class _Worker:
    def __init__(self, case: str, package: Path) -> None:
        # first on the path, so this `mlirc` wins over an installed one (or a bundle's)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")]))}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", case]
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self._line().split()
        if not ready or ready[0] != "ready":
            raise RuntimeError(f"the worker for {case} ({package}) failed to start")
        self.call_s, self.fallback_nodes = float(ready[1]), int(ready[2])

    def _line(self) -> str:
        return self.proc.stdout.readline()

    def time_ms(self, calls: int) -> float:
        self.proc.stdin.write(f"{calls}\n")
        self.proc.stdin.flush()
        return float(self._line())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def compare(case: str, packages: dict[str, Path], rounds: int) -> dict:
    workers: dict[str, _Worker] = {}
    try:
        for tag, package in packages.items():
            workers[tag] = _Worker(case, package)
        calls = max(1, int(SAMPLE_S / max(min(w.call_s for w in workers.values()), 1e-6)))
        times: dict[str, list[float]] = {tag: [] for tag in workers}
        for round_ in range(rounds):
            for tag in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
                times[tag].append(workers[tag].time_ms(calls))
    except (RuntimeError, ValueError, BrokenPipeError) as err:
        return {"error": str(err)[:200]}
    finally:
        for w in workers.values():
            w.close()
    ratios = [b / a for a, b in zip(times["A"], times["B"], strict=True)]
    return {
        "A_ms": statistics.median(times["A"]),
        "B_ms": statistics.median(times["B"]),
        "ratio": statistics.median(ratios),
        "best_ratio": min(times["B"]) / min(times["A"]),
        "spread": (statistics.quantiles(ratios, n=4)[0], statistics.quantiles(ratios, n=4)[2]),
        "fallback": {tag: w.fallback_nodes for tag, w in workers.items()},
    }


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2])
        return 0
    from models import CASES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="cases (default: all)")
    base_arg = parser.add_mutually_exclusive_group(required=True)
    base_arg.add_argument("--base", help="the commit to compare against (A); B is this checkout")
    base_arg.add_argument("--base-dir", type=Path, help="A as an unpacked tree (a host without the git history)")
    parser.add_argument("--rounds", type=int, default=30, help="paired timed batches per case")
    args = parser.parse_args()
    names = args.cases or list(CASES)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlirc-ab-") as tmp:
        scratch = Path(tmp)
        base = args.base_dir.resolve() if args.base_dir else scratch / "base"
        if args.base:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.base], check=True
            )
        try:
            packages = {"A": _package_dir(base, scratch, "a"), "B": _package_dir(ROOT, scratch, "b")}
            for name in names:
                rows.append((name, compare(name, packages, args.rounds)))
                print(f"{name}: done", file=sys.stderr, flush=True)
        finally:
            if args.base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    print(f"A = {args.base or args.base_dir}, B = this checkout; median ms per call over {args.rounds} paired rounds")
    print("\n| case | A ms | B ms | B vs A (median of paired ratios) | quartiles | fastest B / fastest A |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        if "error" in r:
            print(f"| {name} | {r['error']} | | | | |")
            continue
        low, high = r["spread"]
        print(
            f"| {name} | {r['A_ms']:.3f} | {r['B_ms']:.3f} | {100 * (r['ratio'] - 1):+.1f}% "
            f"| {100 * (low - 1):+.1f}% .. {100 * (high - 1):+.1f}% | {100 * (r['best_ratio'] - 1):+.1f}% |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
