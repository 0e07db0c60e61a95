"""A/B: mlirc at another commit against this checkout, on the benchmark cases.

    python benchmarks/ab.py --base 064c751                 # every case
    python benchmarks/ab.py --base HEAD~3 bert gelu --rounds 3 --repeat 15

Two mlirc versions cannot share a process (one package name), so each round runs
every case once per version, in turn (A B, then B A, ...), each in its own process
that times mlirc against eager in interleaved rounds (benchmarks/run.py).  A
version's figure is its median over the rounds of mlirc's time over eager's in the
same process: eager is the same code in both, so the ratio cancels the machine's
slow spells.  The table gives both and B / A - 1 (positive: B is slower).
The base commit is checked out into a temporary git worktree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))


def _package_dir(checkout: Path, scratch: Path, tag: str) -> Path:
    """A folder holding `mlirc` -> checkout: on PYTHONPATH, it wins over the installed one."""
    folder = scratch / f"pkg-{tag}"
    folder.mkdir()
    (folder / "mlirc").symlink_to(checkout)
    return folder


def _measure(case: str, package: Path, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(package)}
    cmd = [sys.executable, str(HERE / "run.py"), case, "--repeat", str(repeat), "--json-only", "mlirc"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["crashed"])[-1][:200]}
    backends = json.loads(proc.stdout.strip().splitlines()[-1])["backends"]
    if "error" in backends["mlirc"]:
        return {"error": backends["mlirc"]["error"]}
    return {
        "ratio": backends["mlirc"]["median_ms"] / backends["eager"]["median_ms"],
        "ms": backends["mlirc"]["median_ms"],
    }


def main() -> int:
    from models import CASES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="cases (default: all)")
    parser.add_argument("--base", required=True, help="the commit to compare against (A); B is this checkout")
    parser.add_argument("--rounds", type=int, default=3, help="processes per case and version")
    parser.add_argument("--repeat", type=int, default=15, help="interleaved timing rounds inside each process")
    args = parser.parse_args()
    names = args.cases or list(CASES)
    with tempfile.TemporaryDirectory(prefix="mlirc-ab-") as tmp:
        scratch = Path(tmp)
        base = scratch / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base), args.base], check=True)
        try:
            versions = {"A": _package_dir(base, scratch, "a"), "B": _package_dir(ROOT, scratch, "b")}
            rows = []
            for name in names:
                samples: dict[str, list[dict]] = {"A": [], "B": []}
                for round_ in range(args.rounds):
                    for tag in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
                        samples[tag].append(_measure(name, versions[tag], args.repeat))
                rows.append((name, samples))
                print(f"{name}: done", file=sys.stderr, flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    print(f"A = {args.base}, B = this checkout; mlirc time / eager time, median of {args.rounds} processes")
    print("\n| case | A (x eager time) | B (x eager time) | B vs A |\n|---|---|---|---|")
    for name, samples in rows:
        ratios = {t: [s["ratio"] for s in samples[t] if "ratio" in s] for t in samples}
        if not ratios["A"] or not ratios["B"]:
            errors = {t: next((s["error"] for s in samples[t] if "error" in s), "") for t in samples}
            print(f"| {name} | {errors['A'] or '-'} | {errors['B'] or '-'} | - |")
            continue
        a, b = statistics.median(ratios["A"]), statistics.median(ratios["B"])
        print(f"| {name} | {a:.3f} | {b:.3f} | {100 * (b / a - 1):+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
