"""benchmarks/run.py --merge: a suite run in parts (the GPU host's per-call limit)
becomes one results file whose header names every part's command."""

import json
import subprocess
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
MACHINE = "Test CPU; 4 cores; torch 0 with 4 threads"


def _part(tmp_path: Path, index: int, case: str, command: str) -> Path:
    row = {
        "case": case,
        "backends": {"eager": {"speedup": 1.0, "median_ms": 2.0}, "mlirc": {"speedup": 2.0, "median_ms": 1.0}},
    }
    header = f"{MACHINE}; medians of 15 interleaved rounds after warm-up; last made by `{command}`"
    path = tmp_path / f"part{index}.json"
    path.write_text(json.dumps({"machine": MACHINE, "header": header, "rows": [row]}))
    return path


def test_merge_names_every_part(tmp_path):
    parts = [
        _part(tmp_path, 1, "mlp", "python benchmarks/run.py mlp"),
        _part(tmp_path, 2, "softmax_512x1024", "python benchmarks/run.py softmax_512x1024"),
    ]
    out = tmp_path / "results"
    subprocess.run([sys.executable, str(RUN), "--merge", *map(str, parts), "--results", str(out)], check=True)
    record = json.loads((out / "4-core-test-cpu.json").read_text())
    assert [r["case"] for r in record["rows"]] == ["mlp", "softmax_512x1024"]
    header = record["header"]
    assert header.startswith(f"{MACHINE}; medians of 15")
    assert "made in 2 parts, `python benchmarks/run.py mlp`, `python benchmarks/run.py softmax_512x1024`" in header
    assert "--merge PART1.json PART2.json" in header
    assert (out / "4-core-test-cpu.md").read_text().startswith(header)
