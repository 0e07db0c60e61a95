"""Memory a process keeps per compile: distinct functions compiled, called and deleted.

    python benchmarks/compile_memory.py --count 500 --backends aot_eager,mlirc [--results benchmarks/results]

Each backend runs in its own process: 20 warm-up compiles (torch's and the backend's
caches filled), then `--count` compiles of functions Dynamo has not seen (each a new
code object, so each is a compile, not a recompile), each deleted after two calls.
After `gc.collect()` and `torch._dynamo.reset()`, the growth of the resident set over
the count is what a long-running service that compiles new graphs would keep per
compile.  `aot_eager` is the floor: Dynamo's and AOTAutograd's own records.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import gc, json, sys, time, torch
import mlirc  # registers the backend; its import is in the baseline for every backend

backend, count = sys.argv[1], int(sys.argv[2])
OPS = ["torch.sin", "torch.tanh", "torch.relu", "torch.exp", "torch.sigmoid"]

def fresh(i):
    src = (f"def f{i}(x):\n    y = x * {i + 0.5} + {OPS[i % 5]}(x)\n"
           f"    return (y.relu() + {i}).sum(-1) if {i % 2} else {OPS[(i // 5) % 5]}(y) - {i}\n")
    scope = {"torch": torch}
    exec(compile(src, f"<fresh{i}>", "exec"), scope)
    return scope[f"f{i}"]

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

x = torch.randn(8, 33)
def compile_and_drop(i):
    f = torch.compile(fresh(i), backend=backend)
    f(x); f(x)
    del f

def settle():
    gc.collect(); torch._dynamo.reset(); gc.collect()

for i in range(20):
    compile_and_drop(i)
settle()
before = rss_mb()
start = time.perf_counter()
for i in range(20, 20 + count):
    compile_and_drop(i)
seconds = time.perf_counter() - start
settle()
after = rss_mb()
print(json.dumps({"backend": backend, "count": count, "rss_before_mb": before, "rss_after_mb": after,
                  "kept_kb_per_compile": (after - before) * 1024 / count, "seconds": seconds}))
"""


def measure(backend: str, count: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, backend, str(count)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{backend}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict], command: str) -> str:
    floor = next((r["kept_kb_per_compile"] for r in rows if r["backend"] == "aot_eager"), None)
    lines = [
        f"# Memory kept per compile ({platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')})",
        "",
        f"`{command}`",
        "",
        "| backend | compiles | RSS before (MB) | RSS after (MB) | kept per compile (KB) | vs aot_eager | compile time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = f"{r['kept_kb_per_compile'] / floor:.2f}x" if floor else "-"
        lines.append(
            f"| {r['backend']} | {r['count']} | {r['rss_before_mb']:.1f} | {r['rss_after_mb']:.1f} "
            f"| {r['kept_kb_per_compile']:.0f} | {ratio} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--backends", default="aot_eager,mlirc")
    parser.add_argument("--results", help="folder for compile-memory.md / .json")
    args = parser.parse_args()
    rows = [measure(b, args.count) for b in args.backends.split(",")]
    text = table(rows, "python " + " ".join(sys.argv))
    print(text)
    if args.results:
        folder = Path(args.results)
        (folder / "compile-memory.md").write_text(text)
        (folder / "compile-memory.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
