"""Feed mlirc-opt mutated lit inputs: it must end every one with output or a
diagnostic and exit 0 or 1 -- never abort, print a traceback or hang.

    python tests/fuzz_mlirc_opt.py --count 1000 --seed 0

Each input is a lit test's .mlir with one to three mutations (lines deleted,
duplicated or swapped, numbers and types replaced, brackets and attributes
inserted, the text cut short), run through the passes its RUN line names.  CI runs
a fixed-seed sample (tests/test_mlirc_opt.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

LIT = Path(__file__).resolve().parent.parent / "lit"
NUMBERS = ["-1", "0", "1", "2", "3", "7", "64", "4294967296", "9223372036854775807", "-9223372036854775808"]
TYPES = ["f32", "f64", "f16", "bf16", "i1", "i8", "i64", "index", "tensor<?xf32>", "memref<4xf32>", "none"]
SNIPPETS = [
    "{", "}", "(", ")", "[", "]", "%0", "%arg9", "^bb1:", "^bb1", "array<index: 1>", "array<i64>", "dense<>",
    "dense<1.0> : tensor<2xf32>", ":", "->", ",", '"mlirc.add"', "#map", "loc(unknown)", "attributes {x}",
    '"mlirc.reduce_sum"(%arg0) {dims = array<i64: 5>, keepdim = false} : (tensor<2xf32>) -> tensor<f32>',
    "affine_map<(d0) -> (d0 floordiv 0)>", "tensor<0x?xf32>", "<<", "\\", "\x00",
]  # fmt: skip


def _inputs() -> list[tuple[str, str, list[str]]]:
    """(name, text, mlirc-opt pass arguments) of every .mlir lit test."""
    found = []
    for path in sorted(LIT.rglob("*.mlir")):
        text = path.read_text()
        run = re.search(r"RUN:.*?mlirc-opt %s([^|]*)", text)
        args = shlex.split(run.group(1)) if run else []  # quoted pipelines with pass options
        keep = [a for a in args if a.startswith(("-p", "--pass-pipeline", "mlirc-", "--split-input-file"))]
        passes = []
        for i, a in enumerate(args):
            if a == "-p" and i + 1 < len(args):
                passes += ["-p", args[i + 1]]
            elif a.startswith("--pass-pipeline"):
                passes.append(a.strip("'\""))
        if "--split-input-file" in keep:
            passes.append("--split-input-file")
        found.append((str(path.relative_to(LIT)), text, passes))
    return found


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        lines = text.splitlines()
        kind = rng.randrange(8)
        if kind == 0 and lines:
            del lines[rng.randrange(len(lines))]
        elif kind == 1 and lines:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
        elif kind == 2 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            spots = list(re.finditer(r"-?\b\d+\b", text))
            if spots:
                m = rng.choice(spots)
                text = text[: m.start()] + rng.choice(NUMBERS) + text[m.end() :]
            continue
        elif kind == 4:
            spots = list(re.finditer(r"\b(f32|f64|i64|i32|i1|i8|index|bf16|f16)\b", text))
            if spots:
                m = rng.choice(spots)
                text = text[: m.start()] + rng.choice(TYPES) + text[m.end() :]
            continue
        elif kind == 5:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(SNIPPETS) + text[at:]
            continue
        elif kind == 6 and text:
            text = text[: rng.randrange(len(text))]
            continue
        elif kind == 7 and text:
            at = rng.randrange(len(text))
            text = text[:at] + text[at + rng.randint(1, 12) :]
            continue
        text = "\n".join(lines) + "\n"
    return text


@dataclass
class Report:
    runs: int = 0
    ok: int = 0
    diagnosed: int = 0
    crashes_caught: int = 0  # the child crashed, mlirc-opt said so and exited 1
    failures: list[str] = field(default_factory=list)  # tracebacks, other exit codes, hangs


def fuzz(count: int, seed: int, timeout: int = 60, workdir: Path | None = None) -> Report:
    from mlirc.tools import mlirc_opt

    rng = random.Random(seed)
    inputs = _inputs()
    report = Report()
    workdir = workdir or Path(os.environ.get("TMPDIR", "/tmp"))
    path = workdir / f"mlirc-opt-fuzz-{os.getpid()}.mlir"
    for i in range(count):
        name, text, passes = rng.choice(inputs)
        mutated = mutate(text, rng)
        path.write_text(mutated, errors="replace")
        err = io.StringIO()
        started = time.monotonic()
        with contextlib.redirect_stderr(err):
            try:
                code = mlirc_opt.main([str(path), *passes, "-o", os.devnull, "--timeout", str(timeout)])
            except BaseException as exc:  # noqa: BLE001 - that is a failure to report
                code = f"raised {type(exc).__name__}: {exc}"
        report.runs += 1
        said = err.getvalue()
        where = f"#{i} ({name}, seed {seed})"
        if code not in (0, 1) or "Traceback" in said or "gave up after" in said:
            report.failures.append(f"{where}: exit {code}, {time.monotonic() - started:.1f} s: {said[-600:]}")
            (workdir / f"mlirc-opt-fuzz-failure-{seed}-{i}.mlir").write_text(mutated, errors="replace")
        elif "MLIR crashed" in said:
            report.crashes_caught += 1
        elif code == 0:
            report.ok += 1
        else:
            report.diagnosed += 1
            if "error" not in said:
                report.failures.append(f"{where}: exit 1 without a diagnostic")
    path.unlink(missing_ok=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=60, help="seconds per input before it counts as a hang")
    args = parser.parse_args()
    started = time.monotonic()
    report = fuzz(args.count, args.seed, args.timeout)
    print(
        f"{report.runs} mutated inputs (seed {args.seed}) in {time.monotonic() - started:.0f} s: {report.ok} ok,"
        f" {report.diagnosed} diagnosed, {report.crashes_caught} MLIR crashes caught and diagnosed,"
        f" {len(report.failures)} failures"
    )
    for failure in report.failures:
        print(failure)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
