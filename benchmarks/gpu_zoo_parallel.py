"""The GPU zoo on a multi-GPU host: every row of `gpu_bench.py --suite zoo` in its own
process, one process per GPU at a time, then one table.

    python benchmarks/gpu_zoo_parallel.py OUT_DIR [--cases m1,m2@32] [--deadline 560]
    python benchmarks/gpu_zoo_parallel.py OUT_DIR --merge DIR [DIR ...]

A row is `<model>@<batch>[@<mode>]` (a bare model name stands for its three rows).  Each
row's backends still take turns on one GPU, in one process, as in gpu_bench.py; rows
share nothing but the host's CPU, so a host-bound row can read a little slower than
alone.  A row's result (with the commit measured) lands in OUT_DIR/rows/<row>.json as soon as it
finishes, so a run cut off by --deadline leaves what it measured, and a second run
(rows already under OUT_DIR/rows are skipped) completes it.  --merge joins rows from several
such directories (of one GPU model) into OUT_DIR/gpu-zoo-<device>.md/.json.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import zoo  # noqa: E402
from gpu_bench import BACKENDS, ZOO_THROUGHPUT_BATCH, _zoo_rows, table, zoo_summary  # noqa: E402


def _row_file(out: Path, row: str) -> Path:
    return out / "rows" / (row.replace("@", "_") + ".json")


def _all_rows(cases: str) -> list[str]:
    models = cases.split(",") if cases else [m for m in zoo.ZOO if not zoo.unavailable(m)]
    rows = _zoo_rows(models)
    # throughput rows take longest: start them first so the queue drains evenly
    return sorted(rows, key=lambda r: r.endswith(f"@{ZOO_THROUGHPUT_BATCH}"), reverse=True)


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _run_row(row: str, gpu: str, out: Path, timeout_s: float, commit: str) -> None:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
    with tempfile.TemporaryDirectory() as scratch:
        cmd = [sys.executable, str(HERE / "gpu_bench.py"), scratch, "--suite", "zoo", "--cases", row]
        started = time.time()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, cwd=HERE)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            result = json.loads(lines[-1]) if lines else {"case": row, "error": proc.stderr[-400:]}
        except subprocess.TimeoutExpired:  # cut off by the deadline: left for the next run
            print(f"[gpu {gpu}] {row}: cut off after {timeout_s:.0f} s", flush=True)
            return
        device = next(iter(Path(scratch).glob("gpu-zoo-*.json")), None)
        result["device"] = device.stem.removeprefix("gpu-zoo-") if device else "unknown"
        if device:  # the table's first line names torch's version
            found = re.search(r"torch (\S+) ", device.with_suffix(".md").read_text())
            result["torch"] = found.group(1) if found else "unknown"
    result["wall_s"] = round(time.time() - started, 1)
    result["commit"] = commit
    _row_file(out, row).write_text(json.dumps(result, indent=1))
    print(f"[gpu {gpu}] {row}: {result['wall_s']} s{' ERROR' if 'error' in result else ''}", flush=True)


def run(out: Path, rows: list[str], gpus: list[str], deadline_s: float) -> None:
    (out / "rows").mkdir(parents=True, exist_ok=True)
    todo: queue.Queue[str] = queue.Queue()
    for row in rows:
        if not _row_file(out, row).exists():
            todo.put(row)
    end, commit = time.time() + deadline_s, _commit()

    def worker(gpu: str) -> None:
        while time.time() < end - 30:
            try:
                row = todo.get_nowait()
            except queue.Empty:
                return
            _run_row(row, gpu, out, end - time.time(), commit)

    threads = [threading.Thread(target=worker, args=(g,)) for g in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    left = [r for r in rows if not _row_file(out, r).exists()]
    print(f"rows left for a second run: {','.join(left) or 'none'}")


def merge(out: Path, dirs: list[Path]) -> None:
    found: dict[str, dict] = {}
    for d in dirs:
        for f in sorted((d / "rows").glob("*.json")):
            found[f.stem] = json.loads(f.read_text())
    order = {r.replace("@", "_"): i for i, r in enumerate(_zoo_rows(list(zoo.ZOO)))}
    rows = [found[k] for k in sorted(found, key=lambda k: order.get(k, len(order)))]
    devices = {r.get("device", "unknown") for r in rows}
    command = "python benchmarks/gpu_zoo_parallel.py " + " ".join(sys.argv[1:])
    text = table(rows, list(BACKENDS), "/".join(sorted(devices)), {}, "The model zoo (benchmarks/zoo.py)", command)
    # measured elsewhere: the torch of the rows, not of this process
    versions = "/".join(sorted({r.get("torch", "unknown") for r in rows}))
    text = text.replace(f"torch {torch.__version__} ", f"torch {versions} ", 1)
    text += "\n" + zoo_summary(rows)
    commits: dict[str, list[str]] = {}
    for r in rows:
        commits.setdefault(r.get("commit", "unknown"), []).append(r["case"])
    if len(commits) > 1:
        text += "\n\nRows by the commit measured:\n" + "\n".join(f"* {c}: {', '.join(v)}" for c, v in commits.items())
    out.mkdir(parents=True, exist_ok=True)
    stem = "gpu-zoo-" + re.sub(r"[^a-z0-9]+", "-", "-".join(sorted(devices))).strip("-")
    (out / f"{stem}.md").write_text(text + "\n")
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    print(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--cases", default="", help="models or rows, comma-separated (default: the whole zoo)")
    p.add_argument("--gpus", default="", help="GPU ids, comma-separated (default: every visible GPU)")
    p.add_argument("--deadline", type=float, default=3600.0, help="seconds; no row starts after it")
    p.add_argument("--merge", type=Path, nargs="+", help="join the rows of these run directories")
    args = p.parse_args()
    if args.merge:
        merge(args.out_dir, args.merge)
        return
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or ",".join(map(str, range(torch.cuda.device_count())))
    run(args.out_dir, _all_rows(args.cases), (args.gpus or visible).split(","), args.deadline)
    merge(args.out_dir, [args.out_dir])


if __name__ == "__main__":
    main()
