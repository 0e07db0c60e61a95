"""A/B of one mlirc setting on training steps: eager, Inductor and mlirc at each value,
interleaved in one process.

    python benchmarks/train_ab.py merge_kib=-1,64 [--cases resnet,gpt2] [--rounds 15] [--phases | --forward-only]

Step times on a shared host drift by tens of percent within minutes, so settings are
compared in one process, each round running every trainer in turn (the order reversed
every other round), medians of steps timed in rounds of 3 (`--phases`: of each
phase too -- forward, backward, optimizer step).  Each mlirc trainer is compiled
while `config.<setting>` holds its value, and Dynamo is never reset between trainers:
a reset drops every compiled frame, and the earlier trainers would recompile under
the last value (an A/B of `parallel_min_kib` once compared one setting with itself).
The CPU only; the cases are train_bench.py's.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_bench import CASES, RECOMPILE_LIMIT, Trainer  # noqa: E402

from mlirc.config import SETTINGS, config  # noqa: E402


def trainers(name: str, setting: str, values: list[int]) -> tuple[dict[str, Trainer], tuple]:
    make_model, batches_for, make_optimizer = CASES[name]
    torch.manual_seed(0)
    model, batch = make_model(), batches_for["cpu"]()
    built = {}
    for label, value in [("eager", None), ("inductor", None), *((f"{setting}={v}", v) for v in values)]:
        backend = "mlirc" if value is not None else label
        if value is not None:
            setattr(config, setting, value)
        built[label] = Trainer(backend, model, make_optimizer)
        for _ in range(3):  # compiles (forward, backward, the optimizer's first steps) now
            built[label].step(*batch)
    return built, batch


def interleaved(built: dict[str, Trainer], batch: tuple, rounds: int) -> dict[str, list[float]]:
    """Median ms per step, then per phase (forward, backward, optimizer), per trainer."""
    samples = defaultdict(list)
    order = list(built.items())
    for r in range(rounds):
        for label, trainer in order if r % 2 else order[::-1]:
            steps = [trainer.phases(*batch) for _ in range(3)]
            samples[label] += [(sum(p), *p) for p in steps]
    return {label: [statistics.median(c) * 1e3 for c in zip(*s, strict=True)] for label, s in samples.items()}


def forwards(built: dict[str, Trainer], batch: tuple, rounds: int) -> dict[str, list[float]]:
    """Median ms per forward alone (its loss and autograd graph dropped), per trainer:
    whether a step's gap is in the forward's own code or in what a whole step leaves
    behind (the memory it freed, the state of the threads)."""
    samples = defaultdict(list)
    order = list(built.items())
    for r in range(rounds):
        for label, trainer in order if r % 2 else order[::-1]:
            start = time.perf_counter()
            for _ in range(10):
                trainer.forward(*batch)
            samples[label].append((time.perf_counter() - start) / 10)
    return {label: [statistics.median(s) * 1e3] for label, s in samples.items()}


def main() -> None:
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ab", help="setting=v1,v2,...: an integer setting of mlirc.config and its values")
    p.add_argument("--cases", default="resnet,gpt2,bert")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--phases", action="store_true", help="also the medians of each phase of a step")
    p.add_argument("--forward-only", action="store_true", help="time forwards alone, not steps")
    args = p.parse_args()
    setting, _, listed = args.ab.partition("=")
    if setting not in SETTINGS or not listed:
        p.error(f"{args.ab!r}: setting=v1,v2 with a setting of {', '.join(sorted(SETTINGS))}")
    values = [int(v) for v in listed.split(",")]
    default = getattr(config, setting)
    speedups = defaultdict(list)
    unit = "forward" if args.forward_only else "step"
    print(f"`python benchmarks/train_ab.py {' '.join(sys.argv[1:])}`, {torch.get_num_threads()} threads, ms per {unit}")
    for name in args.cases.split(","):
        built, batch = trainers(name, setting, values)
        setattr(config, setting, default)
        medians = (forwards if args.forward_only else interleaved)(built, batch, args.rounds)
        for label, ms in medians.items():
            speedups[label].append(medians["eager"][0] / ms[0])
        print(name, "  ".join(f"{label} {ms[0]:.2f}" for label, ms in medians.items()), flush=True)
        if args.phases and not args.forward_only:
            print(
                "  forward / backward / optimizer:",
                "  ".join(f"{k} {'/'.join(f'{v:.2f}' for v in ms[1:])}" for k, ms in medians.items()),
            )
    print(
        "geomean speedup over eager:", "  ".join(f"{k} {math.prod(v) ** (1 / len(v)):.3f}" for k, v in speedups.items())
    )


if __name__ == "__main__":
    main()
