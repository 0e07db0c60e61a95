"""Memory kept per compile: a process that compiles new functions and deletes them
must not grow by the compiled code's LLVM modules (an engine given the module keeps
it), nor by the heap pages the compiles freed (frontend/native_memory.py).

benchmarks/compile_memory.py measures it in a fresh process: the resident size
after compiles of distinct functions, each deleted (its figures, with aot_eager's
as the floor, are in benchmarks/results/compile-memory.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "compile_memory.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; trims glibc's heap")
def test_memory_kept_per_compile():
    sys.path.insert(0, str(BENCHMARK.parent))
    try:
        from compile_memory import CHILD
    finally:
        sys.path.remove(str(BENCHMARK.parent))
    out = subprocess.run([sys.executable, "-c", CHILD, "mlirc", "60"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    kept_kb = json.loads(out.stdout.strip().splitlines()[-1])["kept_kb_per_compile"]
    assert kept_kb < 450, f"{kept_kb:.0f} KB kept per compile"
