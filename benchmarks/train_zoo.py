"""Zoo models (benchmarks/zoo.py) as training cases for train_bench.py.

    python benchmarks/train_bench.py [out_dir] --cases zoo:resnet18,zoo:bert_base,zoo:gpt2

A zoo model trains with the loss its kind is trained with: image classifiers on their
1000-class logits, decoders on next-token prediction, encoders (which return hidden
states) on a 10-class head over the first token, as BERT is fine-tuned.  Dropout is set
to 0 in the model's config: generated dropout draws other masks than eager's, and the
loss curves are compared step by step.  Batch norms keep a fresh model's init (no
zero-init residual), so a CNN's curve is as chaotic as its eager noise column says.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
import zoo

# per family: (CPU batch, CUDA batch); the CPU ones keep 50 steps of three backends
# within minutes on 2 cores
BATCHES = {"cnn": (4, 32), "vit": (2, 32), "mixer": (2, 32), "encoder": (2, 16), "decoder": (2, 16)}
DEFAULT = ("resnet18", "bert_base", "gpt2")
_DROPOUT = re.compile(r"(dropout|pdrop|drop_rate|drop_path)")


class ZooWithLoss(nn.Module):
    def __init__(self, model: nn.Module, family: str, key: str | None, hidden: int | None) -> None:
        super().__init__()
        self.model, self.family, self.key = model, family, key
        self.head = nn.Linear(hidden, 10) if family == "encoder" else None

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        out = out if self.key is None else getattr(out, self.key)
        if self.family == "decoder":
            return F.cross_entropy(out[:, :-1].flatten(0, 1), target[:, 1:].flatten())
        if self.head is not None:
            out = self.head(out[:, 0])
        return F.cross_entropy(out, target)


def _without_dropout(spec: zoo.ZooModel) -> zoo.ZooModel:
    """The spec with every dropout rate its config (or timm's kwargs) knows set to 0."""
    library, name = spec.source.split(":")
    if library == "transformers":
        import transformers

        defaults = getattr(transformers, name).config_class().to_dict()
    else:
        defaults = {"drop_rate": 0.0, "drop_path_rate": 0.0}
    zeros = {k: 0.0 for k, v in defaults.items() if _DROPOUT.search(k) and isinstance(v, float)}
    return zoo.ZooModel(spec.family, spec.source, {**spec.config, **zeros}, spec.batch, spec.tokens)


def _model(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        spec = _without_dropout(zoo.ZOO[name])
        model, key = spec.build()
        for m in model.modules():  # what a config field did not reach
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        config = getattr(model, "config", None)
        return ZooWithLoss(model, spec.family, key, getattr(config, "hidden_size", None))

    return make


def _batches(name: str, batch: int) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    spec = zoo.ZOO[name]
    config = None
    if spec.family in ("encoder", "decoder"):
        import transformers

        config = getattr(transformers, spec.source.split(":")[1]).config_class(**spec.config)

    def make() -> tuple[torch.Tensor, torch.Tensor]:
        (x,) = spec.inputs(batch, config)
        if spec.family == "decoder":
            return x, x
        return x, torch.randint(0, 10 if spec.family == "encoder" else 1000, (batch,))

    return make


def _sgd(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.01, momentum=0.9)


def _adamw(params) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)


def case(name: str) -> tuple[Callable[[], nn.Module], dict[str, Callable], Callable]:
    """train_bench's (model with its loss, batch maker per device, optimizer) for zoo model `name`."""
    if name not in zoo.ZOO:
        raise KeyError(f"no zoo model {name!r} (benchmarks/zoo.py --list)")
    reason = zoo.unavailable(name)
    if reason:
        raise RuntimeError(f"zoo:{name}: {reason}")
    cpu, cuda = BATCHES[zoo.ZOO[name].family]
    optimizer = _sgd if zoo.ZOO[name].family == "cnn" else _adamw
    return _model(name), {"cpu": _batches(name, cpu), "cuda": _batches(name, cuda)}, optimizer
