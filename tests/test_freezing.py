"""Inference on frozen parameters (passes/hoist_frozen.py): the work a graph does on
parameters and buffers alone (weights transposed for the convolution library,
batch-norm factors) runs once and is cached, as are oneDNN's reordered convolution
weights (backends/cpu/packed_weights.py) -- and both are redone whenever a parameter
changes, however the user changes it.  Every case compares with eager after the
change, at odd sizes."""

import pytest
import torch
import torch.nn as nn

import mlirc
from mlirc.backends.cpu import packed_weights
from mlirc.config import config


class Net(nn.Module):
    """conv-BN-ReLU, a residual block, and a linear head: weights that are permuted
    for the library, folded per channel, and read as they are."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 13, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(13)
        self.conv2 = nn.Conv2d(13, 13, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(13)
        self.proj = nn.Conv2d(13, 13, 1)  # its OHWI weight is a view of the parameter
        self.head = nn.Linear(13, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + self.proj(y))
        return self.head(y.mean((2, 3)))


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = Net()
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.normal_()
    return model.eval()


def _compiled(model: nn.Module):
    torch._dynamo.reset()
    mlirc.reset_stats()
    return torch.compile(model, backend="mlirc")


def _check(compiled, model: nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_parameter_work_is_prepared_once():
    model, x = _model(), torch.randn(3, 3, 11, 7)
    compiled = _compiled(model)
    _check(compiled, model, x)
    assert mlirc.stats().prepared_regions == 1
    assert mlirc.stats().fallback_nodes == 0
    _check(compiled, model, torch.randn(3, 3, 11, 7))  # the cache, at new inputs


def test_batch_norm_factors_are_computed_once(tmp_path):
    """rsqrt(var + eps) reads only a buffer: it is a kernel of its own, run by the
    prepare function, not fused into the normalization and recomputed for every
    element of the activation (mlirc-cpu-isolate-frozen)."""
    model, x = _model(), torch.randn(2, 3, 6, 5)
    compiled = _compiled(model)
    config.dump_dir = str(tmp_path)
    try:
        _check(compiled, model, x)
    finally:
        config.dump_dir = None
    (module,) = tmp_path.glob("*.cpu-fusion.mlir")
    kernels = module.read_text().split("func.func @")[1:]
    with_rsqrt = [k.split("(")[0] for k in kernels if "math.rsqrt" in k]
    assert len(with_rsqrt) == 2, with_rsqrt
    (wrapper,) = tmp_path.glob("*.wrapper.py")
    prepare = wrapper.read_text().split("def prepare_list(args)")[1].split("\ndef ")[0]
    per_call = wrapper.read_text().replace(prepare, "")
    for name in with_rsqrt:
        assert f"kernels[{name!r}]" in prepare and f"kernels[{name!r}]" not in per_call, name


EDITS = {
    "in place under no_grad": lambda m: m.conv1.weight.mul_(-1.5),
    "batch-norm buffer": lambda m: m.bn2.running_var.add_(3.0),
    "1x1 weight in place": lambda m: m.proj.weight.mul_(-2.0),
    "load_state_dict": lambda m: m.load_state_dict(
        {k: torch.randn_like(v) if v.is_floating_point() else v for k, v in m.state_dict().items()}
    ),
    "new .data": lambda m: setattr(m.conv2.weight, "data", torch.randn_like(m.conv2.weight)),
    "copy_": lambda m: m.conv2.weight.copy_(torch.randn_like(m.conv2.weight)),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_edited_parameters_are_read_again(edit):
    model, x = _model(), torch.randn(2, 3, 5, 9)
    compiled = _compiled(model)
    _check(compiled, model, x)
    with torch.no_grad():
        EDITS[edit](model)
        if edit == "load_state_dict":
            for bn in (model.bn1, model.bn2):
                bn.running_var.abs_()
    _check(compiled, model, x)
    assert mlirc.stats().fallback_nodes == 0


def test_training_graphs_are_not_frozen():
    """With autograd on, parameters change every step: nothing is cached."""
    model, x = _model(), torch.randn(2, 3, 5, 5)
    compiled = _compiled(model)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert mlirc.stats().prepared_regions == 0


def test_freeze_off(monkeypatch):
    monkeypatch.setattr(config, "freeze", False)
    model, x = _model(), torch.randn(2, 3, 5, 5)
    compiled = _compiled(model)
    _check(compiled, model, x)
    assert mlirc.stats().prepared_regions == 0


def test_inference_mode_parameters():
    """Parameters made under inference_mode have no version counter: the prepared
    values are computed at every call, never read stale."""
    with torch.inference_mode():
        model = _model()
        x = torch.randn(2, 3, 6, 6)
        compiled = _compiled(model)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model.conv1.weight.mul_(2.0)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_outputs_are_not_the_cache():
    """A result computed from parameters alone is computed per call: the caller
    may modify it."""

    class ScaledWeight(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(5, 3))

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.w.t() * 2.0, x @ (self.w.t() * 2.0)

    model, x = ScaledWeight(), torch.randn(4, 3)
    compiled = _compiled(model)
    with torch.no_grad():
        first, _ = compiled(x)
        first.zero_()
        again, y = compiled(x)
        torch.testing.assert_close(again, model.w.t() * 2.0)
        torch.testing.assert_close(y, x @ (model.w.t() * 2.0))


def test_convolution_weights_that_are_inputs():
    """A weight passed in by the caller (F.conv2d(x, w)) is reordered again when it is
    another tensor or was edited in place; one computed inside the graph per call
    (scratch memory, rewritten by kernels) is never reordered once and kept."""

    def conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.conv2d(x, w, padding=1) + torch.nn.functional.conv2d(x, w * x.mean(), padding=1)

    torch._dynamo.reset()
    compiled = torch.compile(conv, backend="mlirc")
    x = torch.randn(2, 5, 9, 7)
    with torch.no_grad():
        for _ in range(3):
            w = torch.randn(4, 5, 3, 3)
            torch.testing.assert_close(compiled(x, w), conv(x, w), rtol=1e-4, atol=1e-4)
            w.mul_(-3.0)
            torch.testing.assert_close(compiled(x, w), conv(x, w), rtol=1e-4, atol=1e-4)
            x = torch.randn(2, 5, 9, 7)


@pytest.mark.skipif(not packed_weights.available(), reason="needs oneDNN's packed convolution")
def test_a_convolution_site_keeps_a_reordered_weight_per_input_shape():
    """A wrapper for every size calls one site at many sizes: each of the last few
    input shapes keeps its reordered weight (no reorder per call when sizes
    alternate), an edited weight is reordered again, an empty input is eager's."""
    site = packed_weights.PackedConv([1, 1], [1, 1], [1, 1], 1, shapes=2)
    w = torch.randn(8, 3, 3, 4)  # OHWI
    reorders = []
    reorder = torch.ops.mkldnn._reorder_convolution_weight

    def expected(x: torch.Tensor) -> torch.Tensor:
        y = torch.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), None, 1, 1)
        return y.permute(0, 2, 3, 1)

    torch.ops.mkldnn._reorder_convolution_weight = lambda *a: reorders.append(1) or reorder(*a)
    try:
        for n in (2, 3, 2, 3, 2):
            x = torch.randn(n, 5, 6, 4)
            torch.testing.assert_close(site(x, w, w), expected(x), rtol=1e-4, atol=1e-4)
        assert len(reorders) == 2
        w.mul_(2)
        x = torch.randn(2, 5, 6, 4)
        torch.testing.assert_close(site(x, w, w), expected(x), rtol=1e-4, atol=1e-4)
        assert len(reorders) == 3
        empty = torch.randn(0, 5, 6, 4)
        assert site(empty, w, w).shape == expected(empty).shape
    finally:
        torch.ops.mkldnn._reorder_convolution_weight = reorder


@pytest.mark.skipif(not packed_weights.available(), reason="needs oneDNN's packed convolution")
@pytest.mark.parametrize("special", [float("nan"), float("inf")])
def test_a_weight_holding_nan_or_inf_is_eagers_at_the_border(special):
    """oneDNN's packed kernel skips the taps that fall on the padding; eager multiplies
    them by its zeros, so a NaN (or inf) weight makes the border NaN.  Such a weight is
    run unpacked, as eager runs it, from the compiled model too; a finite one is packed."""
    torch.manual_seed(0)
    conv = nn.Conv2d(4, 8, 3, stride=2, padding=1)
    x = torch.randn(1, 4, 5, 16)
    with torch.no_grad():
        conv.weight[2, 0, 1, 0] = special
        compiled = torch.compile(conv, backend="mlirc")
        assert_same = lambda: torch.testing.assert_close(compiled(x), conv(x), equal_nan=True)  # noqa: E731
        assert_same()
        assert conv(x)[0, 2, 0, 0].isnan()
        conv.weight[2, 0, 1, 0] = 0.5  # an edit: reordered (packed) this time, still eager's
        assert_same()
