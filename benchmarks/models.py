"""Benchmark cases: plain torch.nn models and microbenchmarks, each a factory that
returns (module or function, example inputs).  Inference sizes; fp32."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn

from mlirc.demo import chain  # the issue's ~10-op elementwise chain

Case = tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]


class SmallCNN(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(2 * width)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.pool(torch.relu(self.bn2(self.conv2(x))))
        return self.fc(torch.flatten(self.avg(x), 1))


def _mlp() -> Case:
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10), nn.LogSoftmax(-1))
    return model, (torch.randn(64, 784),)


def _chain() -> Case:
    return chain, (torch.randn(1024, 1024), torch.randn(1024, 1024))


def _encoder(with_mask: bool) -> Callable[[], Case]:
    def make() -> Case:
        layer = nn.TransformerEncoderLayer(64, 4, batch_first=True).eval()
        x = torch.randn(8, 128, 64)
        if not with_mask:
            return layer, (x,)
        mask = torch.zeros(8, 128, dtype=torch.bool)
        mask[:, 100:] = True

        def masked(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return layer(x, src_key_padding_mask=mask)

        return masked, (x, mask)

    return make


def _cnn() -> Case:
    model = SmallCNN()
    for bn in (model.bn1, model.bn2):  # non-trivial running statistics
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
    return model, (torch.randn(8, 3, 64, 64),)


def _softmax() -> Case:
    return (lambda x: torch.softmax(x, -1)), (torch.randn(7, 33, 129),)


def _softmax_large() -> Case:
    return (lambda x: torch.softmax(x, -1)), (torch.randn(512, 1024),)


def _layer_norm() -> Case:
    ln = nn.LayerNorm(129)
    nn.init.normal_(ln.weight)
    nn.init.normal_(ln.bias)
    return ln, (torch.randn(7, 33, 129),)


def _layer_norm_large() -> Case:
    return nn.LayerNorm(1024), (torch.randn(512, 1024),)


CASES: dict[str, Callable[[], Case]] = {
    "mlp": _mlp,
    "elementwise_chain": _chain,
    "transformer_encoder": _encoder(with_mask=False),
    "transformer_encoder_mask": _encoder(with_mask=True),
    "small_cnn": _cnn,
    "softmax_7x33x129": _softmax,
    "softmax_512x1024": _softmax_large,
    "layer_norm_7x33x129": _layer_norm,
    "layer_norm_512x1024": _layer_norm_large,
}


def make_case(name: str) -> Case:
    fn, inputs = CASES[name]()
    if isinstance(fn, nn.Module):
        fn.eval()
    return fn, inputs
