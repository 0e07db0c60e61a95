"""Training steps: eager vs Inductor vs mlirc, forward + backward + optimizer step.

    python benchmarks/train_bench.py [out_dir] [--device cpu|cuda] [--cases mlp,gpt2] [--steps 50]
        [--mode reduce-overhead] [--update-mode reduce-overhead] [--float64]
        [--autocast bfloat16|float16]
    python benchmarks/train_bench.py [out_dir] --cases zoo   # zoo models: benchmarks/train_zoo.py

Each backend trains its own copy of a model from the same initial weights on the same
batches: the model with its loss is one torch.compile'd module (AOTAutograd hands the
compiler its forward and backward graphs) and the optimizer's `step` is compiled too,
as Inductor's documentation does it.  Per model and backend the table gives

* the per-step time: medians over interleaved rounds (backends take turns) after the
  loss-curve steps have warmed every backend up;
* the loss curve's largest relative difference from eager's over `--steps` steps;
* on CUDA, the step's peak memory above what was allocated before it
  (`torch.cuda.max_memory_allocated`): activations saved for the backward, gradients
  and temporaries; weights and optimizer state are resident in every backend alike;
  and the kernels one step launches (library kernels included, one profiled step);
* mlirc's fallback nodes and failed regions over forward, backward and optimizer;
* the yardstick for the loss diffs: eager's own curve from weights moved by a relative
  1e-7: no compiler can match eager's curve closer than rounding does.  The CNN starts
  each residual block at the identity (`zero_init_residual`, as ResNets are trained):
  from PyTorch's default init instead, its batch norms at batch 8 carry that 1e-7
  to 1e-1 within 50 steps, with SGD or AdamW, so its curve could not show a wrong step;
* with `--float64`, the curves again in float64, where rounding starts at 1e-16: a
  curve that chaos carries away from eager's in float32 still shows whether the
  backend computes the step it was handed.  Each compiled backend is compared with
  aot_eager (the same Dynamo-traced step on eager's kernels), and aot_eager with eager.

The models have no dropout: generated dropout draws other masks than eager's
(docs/design/training.md, "Dropout"), so a loss curve with it could not be compared step by step.  The table
goes to stdout and, with out_dir, to out_dir/train-<host>.md/.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import ResNet, TransformerBlock, own_frame  # noqa: E402
from run import host_tag, machine  # noqa: E402

import mlirc  # noqa: E402

BACKENDS = ("eager", "inductor", "mlirc")
ROUNDS = 9
# Each Trainer compiles its optimizer's `step`: one frame (torch/optim/optimizer.py's
# wrapper) for every optimizer object, guarded on its id.  Past Dynamo's recompile
# limit (8 by default) a later trainer's step would silently run eagerly: train_ab.py
# builds 3 + values trainers per case, and its BERT rows once timed an eager AdamW.
# Set by the scripts' main(), not on import (tests import this module).
RECOMPILE_LIMIT = 256
VOCAB, SEQ, DIM = 1000, 64, 256


class WithLoss(nn.Module):
    """A model and its loss as one module, so one compiled graph ends in the loss."""

    def __init__(self, model: nn.Module, loss: Callable) -> None:
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.loss(self.model(x), target)


class Encoder(nn.Module):
    """BERT-style: token and position embeddings, post-norm layers, a classifier on
    the mean over tokens."""

    def __init__(self, layers: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.ln = nn.LayerNorm(DIM)
        self.layers = nn.Sequential(*[TransformerBlock(DIM) for _ in range(layers)])
        self.head = nn.Linear(DIM, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.ln(self.tokens(ids) + self.positions.weight[: ids.shape[1]])
        return self.head(self.layers(x).mean(1))


class Decoder(nn.Module):
    """GPT-2-style: pre-norm causal blocks, a final layer norm, the language-model head
    tied to the token embedding."""

    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        self.blocks = nn.Sequential(*[TransformerBlock(DIM, gpt=True) for _ in range(layers)])
        self.ln = nn.LayerNorm(DIM)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.tokens(ids) + self.positions.weight[: ids.shape[1]])
        return self.ln(x) @ self.tokens.weight.t()


def _next_token_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))


def _images(batch: int, size: int) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    return lambda: (torch.randn(batch, 3, size, size), torch.randint(0, 10, (batch,)))


def _tokens(batch: int, with_labels: bool) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    def make() -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, VOCAB, (batch, SEQ))
        return ids, (torch.randint(0, 10, (batch,)) if with_labels else ids)

    return make


def _sgd(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def _adamw(params) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


# name -> (model with its loss, batch maker per device, optimizer)
CASES: dict[str, tuple[Callable[[], nn.Module], dict[str, Callable], Callable]] = {
    "mlp": (
        lambda: WithLoss(
            nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)),
            F.cross_entropy,
        ),
        {
            "cpu": lambda: (torch.randn(64, 784), torch.randint(0, 10, (64,))),
            "cuda": lambda: (torch.randn(1024, 784), torch.randint(0, 10, (1024,))),
        },
        _sgd,
    ),  # fmt: skip
    "resnet": (
        lambda: WithLoss(ResNet(widths=(16, 32, 64, 128), classes=10, zero_init_residual=True), F.cross_entropy),
        {"cpu": _images(8, 32), "cuda": _images(128, 32)},
        _sgd,
    ),
    "bert": (
        lambda: WithLoss(Encoder(), F.cross_entropy),
        {"cpu": _tokens(4, True), "cuda": _tokens(64, True)},
        _adamw,
    ),
    "gpt2": (
        lambda: WithLoss(Decoder(), _next_token_loss),
        {"cpu": _tokens(4, False), "cuda": _tokens(64, False)},
        _adamw,
    ),
}


def case(name: str) -> tuple[Callable[[], nn.Module], dict[str, Callable], Callable]:
    """A benchmark case by name: one of CASES, or `zoo:<model>` (benchmarks/train_zoo.py)."""
    if name.startswith("zoo:"):
        import train_zoo

        return train_zoo.case(name.removeprefix("zoo:"))
    return CASES[name]


def _case_names(cases: str) -> list[str]:
    """`--cases`, with `zoo` standing for train_zoo.py's default zoo models."""
    import train_zoo

    names = []
    for name in cases.split(","):
        names += [f"zoo:{model}" for model in train_zoo.DEFAULT] if name == "zoo" else [name]
    return names


class Trainer:
    """One backend's copy of the model, its optimizer, and its step."""

    def __init__(
        self,
        backend: str,
        model: nn.Module,
        make_optimizer: Callable,
        mode: str = "default",
        update_mode: str = "default",
        autocast: torch.dtype | None = None,
    ) -> None:
        self.model = copy.deepcopy(model)
        self.autocast = autocast  # mixed precision: the forward under torch.autocast
        self.optimizer = make_optimizer(self.model.parameters())
        # Inductor's CUDA graph trees are told where a step begins (its graphs run in
        # an order they cannot infer otherwise), and the loss is copied out of the
        # forward's graph before another graph's replay may overwrite it.
        self.graphs = backend != "eager" and "reduce-overhead" in (mode, update_mode)
        if backend == "eager":
            self.forward, self.update = self.model, self.optimizer.step
        else:
            self.forward = torch.compile(own_frame(self.model, f"{backend}_model"), backend=backend, mode=mode)
            self.update = torch.compile(self.optimizer.step, backend=backend, mode=update_mode)

    def step(self, x: torch.Tensor, target: torch.Tensor) -> float:
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        loss = self._forward(x, target)
        loss.backward()
        loss = loss.detach().clone() if self.graphs else loss.detach()
        self.update()
        self.optimizer.zero_grad(set_to_none=True)
        return loss

    def _forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.autocast is None:
            return self.forward(x, target)
        with torch.autocast(x.device.type, dtype=self.autocast):
            return self.forward(x, target)

    def phases(self, x: torch.Tensor, target: torch.Tensor) -> tuple[float, float, float]:
        """One CPU step's forward, backward and optimizer times in seconds."""
        start = time.perf_counter()
        loss = self._forward(x, target)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        self.update()
        self.optimizer.zero_grad(set_to_none=True)
        return forward - start, backward - forward, time.perf_counter() - backward


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _peak_mb(trainer: Trainer, batch: tuple, device: str) -> float | None:
    if device != "cuda":
        return None
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    trainer.step(*batch)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def _kernels_per_step(trainer: Trainer, batch: tuple, device: str) -> int | None:
    """CUDA kernels one step launches (library kernels included): where a host-bound
    step's time goes, launch by launch."""
    if device != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        trainer.step(*batch)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def _step_ms(trainers: dict[str, Trainer], batch: tuple, device: str) -> dict[str, float]:
    """Median ms per step; each sample a few steps long, backends taking turns."""
    samples: dict[str, list[float]] = {name: [] for name in trainers}
    names = list(trainers)
    for round_ in range(ROUNDS):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            trainers[name].step(*batch)  # untimed: this backend's allocator state
            _sync(device)
            start = time.perf_counter()
            for _ in range(3):
                trainers[name].step(*batch)
            _sync(device)
            samples[name].append((time.perf_counter() - start) / 3 * 1e3)
    return {name: statistics.median(times) for name, times in samples.items()}


def measure(
    name: str,
    device: str,
    steps: int,
    backends: list[str],
    modes: tuple[str, str] = ("default", "default"),
    float64: bool = False,
    autocast: torch.dtype | None = None,
) -> dict:
    make_model, batches_for, make_optimizer = case(name)
    torch.manual_seed(0)
    model = make_model().to(device)
    batches = [tuple(t.to(device) for t in batches_for[device]()) for _ in range(steps)]
    row: dict = {"case": name, "steps": steps}
    trainers: dict[str, Trainer] = {}
    curves: dict[str, list[float]] = {}
    for backend in backends:
        torch._dynamo.reset()
        mlirc.reset_stats()
        start = time.perf_counter()
        try:
            trainer = Trainer(backend, model, make_optimizer, *modes, autocast=autocast)
            curves[backend] = [float(trainer.step(*b)) for b in batches]
        except Exception as err:  # one backend failing must not hide the others
            row[backend] = {"error": f"{type(err).__name__}: {str(err)[:160]}"}
            continue
        entry = {"curve_s": time.perf_counter() - start, "peak_mb": _peak_mb(trainer, batches[0], device)}
        entry["kernels"] = _kernels_per_step(trainer, batches[0], device)
        if backend == "mlirc":
            stats = mlirc.stats()
            entry.update(fallback_nodes=stats.fallback_nodes, failed_regions=stats.failed_regions)
        row[backend], trainers[backend] = entry, trainer
    if "eager" in curves:  # the yardstick: eager itself, its weights moved by 1e-7 (relative)
        row["eager_noise"] = _loss_diff(_perturbed_curve(model, make_optimizer, batches, autocast), curves["eager"])
    reference = curves.get("eager")
    for backend, curve in curves.items():
        if reference:
            row[backend]["loss_rel_diff"] = _loss_diff(curve, reference)
        row[backend]["loss_first_last"] = (curve[0], curve[-1])
    for backend, ms in _step_ms(trainers, batches[0], device).items():
        row[backend]["ms"] = ms
    if float64 and "eager" in curves:
        _float64_diffs(row, model, make_optimizer, batches, modes)
    return row


def _float64_diffs(row: dict, model: nn.Module, make_optimizer: Callable, batches: list, modes: tuple) -> None:
    """Float64 loss curves: each compiled backend's against aot_eager's (Dynamo's traced
    step run by eager's kernels: what the backend was handed), and aot_eager's against
    eager's (what tracing changed: a compiled AdamW computes its bias corrections from
    the float32 `step` tensor, where eager takes a Python float)."""
    model = copy.deepcopy(model).double()
    batches = [tuple(t.double() if t.is_floating_point() else t for t in b) for b in batches]
    compiled = [b for b in row if b in BACKENDS and b != "eager" and "curve_s" in row[b]]
    curves = {}
    for backend in ["eager", "aot_eager", *compiled]:
        torch._dynamo.reset()
        trainer = Trainer(backend, model, make_optimizer, *modes)
        curves[backend] = [float(trainer.step(*b)) for b in batches]
    row["traced_f64_diff"] = _loss_diff(curves["aot_eager"], curves["eager"])
    for backend in compiled:
        row[backend]["loss_f64_diff"] = _loss_diff(curves[backend], curves["aot_eager"])


def _loss_diff(curve: list[float], reference: list[float]) -> float:
    return max(abs(a - e) / max(abs(e), 1e-12) for a, e in zip(curve, reference, strict=True))


def _perturbed_curve(
    model: nn.Module, make_optimizer: Callable, batches: list, autocast: torch.dtype | None = None
) -> list[float]:
    """Eager's loss curve from weights each moved by a relative 1e-7 (float32's rounding):
    how far rounding alone carries a curve.  A compiler sums in another order, so no
    loss diff can be expected below this one."""
    trainer = Trainer("eager", model, make_optimizer, autocast=autocast)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(1)
        for p in trainer.model.parameters():
            p.mul_(1 + 1e-7 * torch.randn(p.shape, generator=generator).to(p.device))
    return [float(trainer.step(*b)) for b in batches]


def _cell(entry: dict, key: str, fmt: str) -> str:
    if "error" in entry:
        return "error"
    return format(entry[key], fmt) if entry.get(key) is not None else "-"


def table(rows: list[dict], backends: list[str]) -> str:
    float64 = any("loss_f64_diff" in r.get(b, {}) for r in rows for b in backends)
    lines = [
        "| model | " + " | ".join(f"{b} ms/step" for b in backends) + " | mlirc / inductor | "
        + " | ".join(f"{b} loss diff" for b in backends[1:]) + " | eager perturbed 1e-7 loss diff | "
        + "".join(f"{b} float64 diff from aot_eager | " for b in backends[1:] if float64)
        + ("aot_eager float64 diff from eager | " if float64 else "")
        + " | ".join(f"{b} peak MB" for b in backends) + " | "
        + " | ".join(f"{b} kernels/step" for b in backends) + " | mlirc fallback |",
    ]  # fmt: skip
    lines.append("|" + "---|" * (lines[0].count("|") - 1))
    for r in rows:
        ms = {b: r.get(b, {}).get("ms") for b in backends}
        ratio = f"{ms['inductor'] / ms['mlirc']:.2f}x" if ms.get("inductor") and ms.get("mlirc") else "-"
        m = r.get("mlirc", {})
        fallback = (
            "error" if "error" in m else f"{m.get('fallback_nodes', '-')} nodes, {m.get('failed_regions', '-')} regions"
        )
        cells = [_cell(r.get(b, {}), "ms", ".2f") for b in backends] + [ratio]
        cells += [_cell(r.get(b, {}), "loss_rel_diff", ".1e") for b in backends[1:]]
        cells += [_cell(r, "eager_noise", ".1e")]
        cells += [_cell(r.get(b, {}), "loss_f64_diff", ".1e") for b in backends[1:] if float64]
        cells += [_cell(r, "traced_f64_diff", ".1e")] if float64 else []
        cells += [_cell(r.get(b, {}), "peak_mb", ".1f") for b in backends]
        cells += [_cell(r.get(b, {}), "kernels", "d") for b in backends] + [fallback]
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    timed = [r for r in rows if all("ms" in r.get(b, {}) for b in backends)]
    for b in backends[1:]:
        if timed:
            gmean = math.exp(statistics.fmean(math.log(r["eager"]["ms"] / r[b]["ms"]) for r in timed))
            lines.append(f"\ngeometric-mean speedup over eager per step, {len(timed)} models: {b} {gmean:.2f}x")
    for r in rows:
        for b in backends:
            if "error" in r.get(b, {}):
                lines.append(f"\n{r['case']} {b}: {r[b]['error']}")
    return "\n".join(lines)


def main() -> None:
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--cases", default=",".join(CASES), help="names of CASES, zoo:<model>, or zoo (three zoo models)")
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--steps", type=int, default=50, help="loss-curve steps per backend")
    p.add_argument(
        "--mode",
        default="default",
        choices=("default", "reduce-overhead"),
        help="torch.compile mode of the model (forward and backward) for every compiled backend",
    )
    p.add_argument(
        "--update-mode", default="default", choices=("default", "reduce-overhead"), help="of the optimizer step"
    )
    p.add_argument("--float64", action="store_true", help="also each backend's loss curve in float64 against eager's")
    p.add_argument(
        "--autocast",
        choices=("bfloat16", "float16"),
        help="mixed precision: each forward under torch.autocast of this dtype (weights stay float32)",
    )
    args = p.parse_args()
    if args.autocast and args.float64:
        p.error("--float64 checks float32 steps: not with --autocast")
    autocast = getattr(torch, args.autocast) if args.autocast else None
    backends = args.backends.split(",")
    rows = [
        measure(name, args.device, args.steps, backends, (args.mode, args.update_mode), args.float64, autocast)
        for name in _case_names(args.cases)
    ]
    host = torch.cuda.get_device_name() if args.device == "cuda" else machine()
    command = "python benchmarks/train_bench.py " + " ".join(sys.argv[1:])
    precision = f"float32 under autocast {args.autocast}" if args.autocast else "float32"
    precision += "; float64 curves too" if args.float64 else ""
    header = f"Training steps on {host} ({precision}; Inductor and mlirc in mode {args.mode}, optimizer step in {args.update_mode}; {args.steps}-step loss curves); `{command}`"
    text = f"{header}\n\n{table(rows, backends)}"
    print(text)
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        gpu = re.sub("[^a-z0-9]+", "-", host.lower()).strip("-")
        stem = f"train-gpu-{gpu}" if args.device == "cuda" else f"train-{host_tag(host)}"
        stem += "".join(f"-{m}" for m in (args.mode, args.update_mode) if m != "default")[: len("-reduce-overhead")]
        stem += f"-autocast-{args.autocast}" if args.autocast else ""
        stem += "-zoo" if all(row["case"].startswith("zoo:") for row in rows) else ""
        (out / f"{stem}.md").write_text(text + "\n")
        (out / f"{stem}.json").write_text(json.dumps({"machine": host, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
