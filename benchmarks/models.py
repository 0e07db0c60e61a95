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


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """ResNet-18's layout (two basic blocks per stage), narrower, on 96x96 images."""

    def __init__(
        self, widths: tuple[int, ...] = (32, 64, 128, 256), classes: int = 100, zero_init_residual: bool = False
    ) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)
        if zero_init_residual:
            # torchvision's flag of the same name (Goyal et al., "Accurate, Large Minibatch
            # SGD"): each block starts as the identity, the recipe ResNets are trained with.
            for block in blocks:
                nn.init.zeros_(block.bn2.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        out = torch.softmax(scores, -1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class TransformerBlock(nn.Module):
    """BERT's post-norm layer, or GPT-2's pre-norm causal block."""

    def __init__(self, dim: int = 256, heads: int = 4, gpt: bool = False) -> None:
        super().__init__()
        self.gpt = gpt
        self.attn = Attention(dim, heads, causal=gpt)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gpt:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, channels: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.channel_mlp = nn.Sequential(
            nn.Linear(channels, 4 * channels), nn.GELU(), nn.Linear(4 * channels, channels)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.ln2(x))


class MLPMixer(nn.Module):
    def __init__(self, patch: int = 8, channels: int = 128, depth: int = 4, image: int = 64) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, channels, patch, patch)
        tokens = (image // patch) ** 2
        self.blocks = nn.Sequential(*[MixerBlock(tokens, channels) for _ in range(depth)])
        self.ln = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, 100)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x).flatten(2).transpose(1, 2)
        return self.head(self.ln(self.blocks(x)).mean(1))


def _randomize_batch_norms(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):  # non-trivial running statistics
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
    return model


def _resnet() -> Case:
    return _randomize_batch_norms(ResNet()), (torch.randn(8, 3, 96, 96),)


def _bert() -> Case:
    return nn.Sequential(*[TransformerBlock() for _ in range(2)]), (torch.randn(4, 128, 256),)


def _gpt2() -> Case:
    return nn.Sequential(*[TransformerBlock(gpt=True) for _ in range(2)]), (torch.randn(4, 128, 256),)


def _mixer() -> Case:
    return MLPMixer(), (torch.randn(8, 3, 64, 64),)


def _gelu() -> Case:
    return nn.GELU(), (torch.randn(1024, 1024),)


def _row_sum() -> Case:
    return (lambda x: x.sum(-1)), (torch.randn(1024, 1024),)


def _gemm(m: int, k: int, n: int) -> Callable[[], Case]:
    def make() -> Case:
        return torch.mm, (torch.randn(m, k), torch.randn(k, n))

    return make


def _mlp() -> Case:
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10), nn.LogSoftmax(-1))
    return model, (torch.randn(64, 784),)


def _chain() -> Case:
    return chain, (torch.randn(1024, 1024), torch.randn(1024, 1024))


class MaskedEncoder(nn.Module):
    """An encoder layer with a key-padding mask (a module, so .cuda() moves it)."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.layer(x, src_key_padding_mask=mask)


def _encoder(with_mask: bool) -> Callable[[], Case]:
    def make() -> Case:
        layer = nn.TransformerEncoderLayer(64, 4, batch_first=True).eval()
        x = torch.randn(8, 128, 64)
        if not with_mask:
            return layer, (x,)
        mask = torch.zeros(8, 128, dtype=torch.bool)
        mask[:, 100:] = True
        return MaskedEncoder(layer), (x, mask)

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


# Models first (their geometric mean is the headline), then microbenchmarks.
MODELS = ("mlp", "resnet", "bert", "gpt2", "mlp_mixer", "small_cnn", "transformer_encoder", "transformer_encoder_mask")
CASES: dict[str, Callable[[], Case]] = {
    "mlp": _mlp,
    "resnet": _resnet,
    "bert": _bert,
    "gpt2": _gpt2,
    "mlp_mixer": _mixer,
    "small_cnn": _cnn,
    "transformer_encoder": _encoder(with_mask=False),
    "transformer_encoder_mask": _encoder(with_mask=True),
    "elementwise_chain": _chain,
    "gelu_1024x1024": _gelu,
    "row_sum_1024x1024": _row_sum,
    "softmax_7x33x129": _softmax,
    "softmax_512x1024": _softmax_large,
    "layer_norm_7x33x129": _layer_norm,
    "layer_norm_512x1024": _layer_norm_large,
    "gemm_64x784x512": _gemm(64, 784, 512),
    "gemm_512x512x512": _gemm(512, 512, 512),
    "gemm_1024x256x1024": _gemm(1024, 256, 1024),
}


def make_case(name: str) -> Case:
    fn, inputs = CASES[name]()
    if isinstance(fn, nn.Module):
        fn.eval()
    return fn, inputs


def own_frame(fn: Callable, tag: str) -> Callable:
    """`fn` called from a function whose code object is new, for torch.compile.

    Dynamo keeps compiled graphs, and what it learnt from earlier compiles (which
    sizes and floats to treat as dynamic), per code object.  Compiled directly, every
    backend timed on one model shares the frame of `nn.Module._call_impl`: a second
    backend's compile is a recompile that inherits the first one's state (with
    dynamic=True, floats such as a layer norm's eps became tensor arguments read with
    .item() per call), and every call first fails the other backends' guards.  Each
    backend compiling its own frame measures it as a user's process would see it."""

    def call(*args: torch.Tensor) -> torch.Tensor:
        return fn(*args)

    call.__code__ = call.__code__.replace(co_name=f"{tag}_call")
    return call
