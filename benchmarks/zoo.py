"""The model zoo: real architectures that mlirc was not written or tuned on.

Every model is built from a transformers config (timm's, where timm imports: it needs a
torchvision built for the installed torch), randomly initialized -- nothing is
downloaded -- and run in inference at batch 1 (latency) and a throughput batch.  Cases
are named `<model>@<batch>`; `benchmarks/run.py --suite zoo` times them against the
same peers as the benchmark suite, and `python benchmarks/zoo.py --check` compiles each
with mlirc alone and compares it with eager (correctness and fallbacks, no timings);
`--profile CASE` prints its top kernels and library calls, mlirc beside Inductor.

Sizes: CNNs at 160x160 and vision transformers at 224x224 (their patch grids need it),
text at 128 tokens.  Transformer stacks keep their published widths, heads and feed-forward
sizes but at most 4 layers (`layers` in the table below), so that the zoo runs on a
2-core machine in one sitting; every layer of a stack is the same code, so a layer's
speedup is the model's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

IMAGE = 160  # CNN input resolution
VIT_IMAGE = 224
TOKENS = 128
MAX_LAYERS = 4


class _MainOutput(nn.Module):
    """A transformers/timm model returning one tensor (logits or the last hidden state)
    rather than a ModelOutput, so every backend's result compares the same way."""

    def __init__(self, model: nn.Module, key: str | None) -> None:
        super().__init__()
        self.model, self.key = model, key

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        out = self.model(*args)
        return out if self.key is None else getattr(out, self.key)


@dataclass(frozen=True)
class ZooModel:
    family: str  # cnn, vit, encoder, decoder, mixer
    source: str  # "transformers:<ModelClass>", "timm:<model name>" or "timm:<module>.<ModelClass>"
    config: dict = field(default_factory=dict)  # transformers config fields / timm kwargs
    batch: int = 8  # the throughput batch (the other is 1)
    tokens: int = TOKENS

    def build(self) -> tuple[nn.Module, str | None]:
        library, name = self.source.split(":")
        if library == "timm":
            import timm

            if "." in name:
                module, cls = name.rsplit(".", 1)
                return getattr(importlib.import_module(f"timm.models.{module}"), cls)(**self.config), None
            return timm.create_model(name, pretrained=False, **self.config), None
        import transformers

        cls = getattr(transformers, name)
        # ImageNet's 1000 classes (transformers' default is 2 labels)
        labels = {"num_labels": 1000} if name.endswith("ForImageClassification") else {}
        model = cls(cls.config_class(**labels, **self.config))
        key = (
            "logits" if name.endswith(("ForImageClassification", "ForCausalLM", "LMHeadModel")) else "last_hidden_state"
        )
        return model, key

    def inputs(self, batch: int, config: object | None) -> tuple[torch.Tensor, ...]:
        if self.family in ("encoder", "decoder"):
            return (torch.randint(0, config.vocab_size, (batch, self.tokens)),)
        size = IMAGE if self.family == "cnn" else VIT_IMAGE
        return (torch.randn(batch, 3, size, size),)


def _layers(n: int) -> int:
    return min(n, MAX_LAYERS)


_BERT_BASE = {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072}
# Llama-style decoders at a width a 2-core machine runs: GQA (4 query heads per KV
# head) and RoPE as in Llama 3 / Mistral, 1B-class widths.
_LLAMA_1B = {
    "hidden_size": 2048,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 32000,
}

ZOO: dict[str, ZooModel] = {
    # CNNs
    "resnet18": ZooModel(
        "cnn",
        "transformers:ResNetForImageClassification",
        {"layer_type": "basic", "depths": [2, 2, 2, 2], "hidden_sizes": [64, 128, 256, 512]},
    ),
    "resnet50": ZooModel("cnn", "transformers:ResNetForImageClassification"),
    "regnety_040": ZooModel("cnn", "transformers:RegNetForImageClassification"),
    "convnext_tiny": ZooModel("cnn", "transformers:ConvNextForImageClassification"),
    "convnextv2_atto": ZooModel(
        "cnn",
        "transformers:ConvNextV2ForImageClassification",
        {"depths": [2, 2, 6, 2], "hidden_sizes": [40, 80, 160, 320]},
    ),
    "efficientnet_b0": ZooModel(
        "cnn",
        "transformers:EfficientNetForImageClassification",
        {"width_coefficient": 1.0, "depth_coefficient": 1.0, "hidden_dim": 1280, "image_size": IMAGE},
    ),
    "mobilenet_v2": ZooModel("cnn", "transformers:MobileNetV2ForImageClassification", {"image_size": IMAGE}),
    "mobilenetv3_small": ZooModel("cnn", "timm:mobilenetv3_small_100"),
    "densenet121": ZooModel("cnn", "timm:densenet121"),
    "mobilevit_xs": ZooModel(
        "cnn",
        "transformers:MobileViTForImageClassification",
        {"image_size": IMAGE, "hidden_sizes": [96, 120, 144], "neck_hidden_sizes": [16, 32, 48, 64, 80, 96, 384]},
    ),
    # vision transformers
    "vit_base": ZooModel("vit", "transformers:ViTForImageClassification", {"num_hidden_layers": _layers(12)}, batch=4),
    "deit_small": ZooModel(
        "vit",
        "transformers:DeiTForImageClassification",
        {"hidden_size": 384, "num_attention_heads": 6, "intermediate_size": 1536, "num_hidden_layers": _layers(12)},
    ),
    "swin_tiny": ZooModel("vit", "transformers:SwinForImageClassification"),
    "dinov2_small": ZooModel(
        "vit",
        "transformers:Dinov2Model",
        {"hidden_size": 384, "num_attention_heads": 6, "num_hidden_layers": _layers(12)},
    ),
    # the class itself: timm's registered mixer_b16_224 fixes its depth
    "mixer_b16": ZooModel(
        "mixer", "timm:mlp_mixer.MlpMixer", {"patch_size": 16, "embed_dim": 768, "num_blocks": _layers(12)}, batch=4
    ),
    # encoders
    "bert_base": ZooModel("encoder", "transformers:BertModel", {**_BERT_BASE, "num_hidden_layers": _layers(12)}),
    "roberta_base": ZooModel("encoder", "transformers:RobertaModel", {**_BERT_BASE, "num_hidden_layers": _layers(12)}),
    "distilbert": ZooModel("encoder", "transformers:DistilBertModel", {"n_layers": _layers(6)}),
    "albert_base": ZooModel(
        "encoder", "transformers:AlbertModel", {**_BERT_BASE, "embedding_size": 128, "num_hidden_layers": _layers(12)}
    ),
    "electra_small": ZooModel("encoder", "transformers:ElectraModel", {"num_hidden_layers": _layers(12)}),
    "t5_small_encoder": ZooModel("encoder", "transformers:T5EncoderModel", {"num_layers": _layers(6)}),
    # decoders
    "gpt2": ZooModel("decoder", "transformers:GPT2LMHeadModel", {"n_layer": _layers(12)}),
    "llama_gqa": ZooModel("decoder", "transformers:LlamaForCausalLM", {**_LLAMA_1B, "num_hidden_layers": 2}),
    "mistral_gqa": ZooModel(
        "decoder",
        "transformers:MistralForCausalLM",
        {**_LLAMA_1B, "num_hidden_layers": 2, "sliding_window": 64},
    ),
    "opt_125m": ZooModel("decoder", "transformers:OPTForCausalLM", {"num_hidden_layers": _layers(12)}),
    "qwen2_0_5b": ZooModel(
        "decoder",
        "transformers:Qwen2ForCausalLM",
        {
            "hidden_size": 896,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "intermediate_size": 4864,
            "num_hidden_layers": _layers(24),
            "vocab_size": 32000,
        },
    ),
}
BATCHES = (1, None)  # None: the model's throughput batch
CASES: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {}
MODELS: tuple[str, ...] = ()  # filled below: every zoo case is a model


def _case(name: str, batch: int) -> Callable[[], tuple[nn.Module, tuple]]:
    def make() -> tuple[nn.Module, tuple]:
        spec = ZOO[name]
        model, key = spec.build()
        model = model.eval()
        config = getattr(model, "config", None)
        return _MainOutput(model, key), spec.inputs(batch, config)

    return make


for _name, _spec in ZOO.items():
    for _batch in (1, _spec.batch):
        CASES[f"{_name}@{_batch}"] = _case(_name, _batch)
MODELS = tuple(CASES)


def make_case(name: str, dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple]:
    """The model and its inputs, in `dtype` (integer inputs, token ids, stay as they are)."""
    if name not in CASES:
        raise KeyError(f"no zoo case {name!r} (benchmarks/zoo.py --list)")
    model, batch = name.split("@")
    return make_model(model, int(batch), dtype)


def make_model(name: str, batch: int, dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple]:
    """`make_case` at any batch (the GPU runs the zoo at larger ones): `name` is a model."""
    torch.manual_seed(0)
    model, inputs = _case(name, batch)()
    model = _randomize_norms(model).to(dtype).eval()
    return model, tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)


def _randomize_norms(model: nn.Module) -> nn.Module:
    """Batch norms with the running statistics and affine parameters of a trained
    model rather than a fresh one's zeros and ones, which would make folding them a
    no-op and hide a wrong fold."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.2)
    return model


def unavailable(name: str) -> str | None:
    """Why a case cannot be built here (its library does not import), or None."""
    library = ZOO[name.split("@")[0]].source.split(":")[0]
    try:
        __import__(library)
    except Exception as err:  # noqa: BLE001 - timm raises whatever its torchvision does
        return f"{library} does not import: {type(err).__name__}: {err}"[:200]
    return None


# --- --check: mlirc alone against eager, one process per case --------------------------


def check_case(name: str, dtype: torch.dtype) -> dict:
    import mlirc

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import _max_error

    reason = unavailable(name)
    if reason:
        return {"case": name, "skipped": reason}
    model, inputs = make_case(name, dtype)
    torch._dynamo.reset()
    mlirc.reset_stats()
    with torch.no_grad():
        expected = model(*inputs)
        compiled = torch.compile(model, backend="mlirc")
        start = time.perf_counter()
        actual = compiled(*inputs)
        compile_s = time.perf_counter() - start
        again = compiled(*inputs)  # the second call runs the compiled graph alone
    stats = mlirc.stats()
    return {
        "case": name,
        "max_err": max(_max_error(actual, expected), _max_error(again, expected)),
        "compile_s": compile_s,
        "fallback_nodes": stats.fallback_nodes,
        "fallback_ops": dict(stats.fallback_ops),
        "graphs": stats.graphs,
        "kernels": stats.kernels,
    }


def _check_all(names: list[str], dtype: str) -> int:
    failures = 0
    for name in names:
        cmd = [sys.executable, __file__, "--check-one", name, "--dtype", dtype]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            failures += 1
            tail = "\n    ".join(proc.stderr.strip().splitlines()[-6:])
            print(f"{name}: FAILED\n    {tail}", flush=True)
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        print(json.dumps(row), flush=True)
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="cases (default: all); a model name stands for both its batches")
    parser.add_argument("--check", action="store_true", help="compile each case with mlirc and compare with eager")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--list", action="store_true", help="list the cases and where each comes from")
    parser.add_argument(
        "--profile", action="store_true", help="top kernels and library calls per call, mlirc beside Inductor+freezing"
    )
    parser.add_argument("--top", type=int, default=12, help="rows of --profile's table")
    parser.add_argument("--check-one", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check_one:
        print(json.dumps(check_case(args.check_one, getattr(torch, args.dtype))))
        return
    names = [c for n in args.cases for c in CASES if c == n or c.split("@")[0] == n] if args.cases else list(CASES)
    if args.profile:
        from cpu_profile import profile_case

        for name in names:
            print(
                f"## {name} ({args.dtype})\n\n{profile_case(*make_case(name, getattr(torch, args.dtype)), args.top)}\n"
            )
        return
    if args.list or not args.check:
        for name in names:
            spec = ZOO[name.split("@")[0]]
            print(f"{name:24} {spec.family:8} {spec.source} {spec.config or ''}")
        return
    sys.exit(1 if _check_all(names, args.dtype) else 0)


if __name__ == "__main__":
    main()
