"""CPU GEMMs on oneDNN or torch.mm (backends/cpu/gemm_choice.py): either gives
eager's answers for any shape and layout, and "auto" times a shape only once."""

import pytest
import torch
from conftest import compile_and_compare, wrapper_source

from mlirc.backends.cpu import gemm_choice, packed_weights
from mlirc.config import config
from mlirc.errors import MlircError

pytestmark = pytest.mark.skipif(not gemm_choice.onednn_available(), reason="torch built without oneDNN")


@pytest.fixture
def onednn_everywhere(monkeypatch):
    monkeypatch.setattr(config, "cpu_gemm", "onednn")
    monkeypatch.setattr(gemm_choice, "MIN_MACS", 0)


def _linear_relu_linear(x, w1, b1, w2):
    return torch.relu(torch.nn.functional.linear(x, w1, b1)) @ w2


CASES = {
    # odd sizes, a weight in linear's (N, K) layout and one contiguous (K, N)
    "primes": lambda: (torch.randn(37, 129), torch.randn(67, 129), torch.randn(67), torch.randn(67, 11)),
    "one_row": lambda: (torch.randn(1, 300), torch.randn(200, 300), torch.randn(200), torch.randn(200, 3)),
    "transposed_input": lambda: (
        torch.randn(129, 37).t(),
        torch.randn(67, 129),
        torch.randn(67),
        torch.randn(11, 67).t(),
    ),
    "batched_3d": lambda: (torch.randn(3, 17, 64), torch.randn(96, 64), torch.randn(96), torch.randn(96, 5)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_onednn_gemms_give_eager_results(case, onednn_everywhere, tmp_path):
    args = CASES[case]()
    assert "onednn_mm(" in wrapper_source(_linear_relu_linear, args, tmp_path)
    compile_and_compare(_linear_relu_linear, *[torch.randn_like(a) for a in args])


def test_onednn_keeps_nan_and_inf(onednn_everywhere):
    x, w1, b1, w2 = CASES["primes"]()
    x[3, 5], x[7, 1], w1[2, 0] = float("nan"), float("inf"), float("-inf")
    compile_and_compare(_linear_relu_linear, x, w1, b1, w2)


def test_float64_and_empty_gemms_stay_on_torch_mm(onednn_everywhere, tmp_path):
    args = [a.double() for a in CASES["primes"]()]
    assert "onednn_mm(" not in wrapper_source(_linear_relu_linear, args, tmp_path)
    compile_and_compare(_linear_relu_linear, *args)
    compile_and_compare(_linear_relu_linear, torch.randn(0, 129), *CASES["primes"]()[1:])


def test_blas_mode_never_uses_onednn(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cpu_gemm", "blas")
    monkeypatch.setattr(gemm_choice, "MIN_MACS", 0)
    assert "onednn_mm(" not in wrapper_source(_linear_relu_linear, CASES["primes"](), tmp_path)


def _meta(*shape, transposed=False):
    t = torch.empty(shape[::-1] if transposed else shape, device="meta")
    return t.t() if transposed else t


def test_auto_times_each_shape_once(monkeypatch):
    timed = []
    monkeypatch.setattr(config, "cpu_gemm", "auto")
    monkeypatch.setattr(gemm_choice, "_choices", {})
    monkeypatch.setattr(gemm_choice, "_measure", lambda a, b, packable: timed.append(a.shape) or gemm_choice.ONEDNN)
    small = (_meta(8, 8), _meta(8, 8))
    assert gemm_choice.choose_mm(*small) == gemm_choice.BLAS  # below MIN_MACS: never timed
    big = (_meta(256, 128), _meta(128, 96, transposed=True))
    assert [gemm_choice.choose_mm(*big) for _ in range(3)] == [gemm_choice.ONEDNN] * 3
    assert gemm_choice.choose_mm(_meta(256, 128), _meta(128, 96)) == gemm_choice.ONEDNN  # another layout
    assert timed == [(256, 128), (256, 128)]


def test_auto_measures_real_operands():
    # The real timing: runs under no fake mode and picks one of the candidates.
    choice = gemm_choice._measure(_meta(64, 129), _meta(129, 130, transposed=True))
    assert choice in (gemm_choice.BLAS, gemm_choice.ONEDNN)
    choice = gemm_choice._measure(_meta(64, 129), _meta(129, 130, transposed=True), packable=True)
    assert choice in (gemm_choice.BLAS, gemm_choice.ONEDNN, gemm_choice.PACKED)


def test_packed_weights_only_for_stable_transposed_weights():
    """MKL packs a weight once per call site: only an argument (a parameter or a
    prepared value) that is dense, never a buffer kernels rewrite."""
    a, weight_t = _meta(128, 256), _meta(256, 512, transposed=True)
    assert gemm_choice._packable(a, weight_t, stable_weight=True) == packed_weights.linear_available()
    assert not gemm_choice._packable(a, weight_t, stable_weight=False)
    assert gemm_choice._packable(a, _meta(256, 512), stable_weight=True) == packed_weights.linear_available()
    assert not gemm_choice._packable(a, _meta(256, 512)[:, ::2], stable_weight=True)


class Conv1D(torch.nn.Module):
    """GPT-2's projection: a row-major (K, N) weight, x @ w + b."""

    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight, self.bias = torch.nn.Parameter(torch.randn(k, n)), torch.nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight)


@pytest.mark.skipif(not packed_weights.linear_available(), reason="torch built without MKL")
@pytest.mark.parametrize("layer", [torch.nn.Linear(300, 257), Conv1D(300, 257)], ids=["linear", "conv1d"])
def test_packed_linear_follows_weight_edits(monkeypatch, tmp_path, layer):
    """A GEMM on MKL's packed weight, the weight edited in place and replaced between
    calls: every call gives eager's answer."""
    monkeypatch.setattr(config, "cpu_gemm", "auto")
    monkeypatch.setattr(gemm_choice, "_measure", lambda a, b, packable: gemm_choice.PACKED if packable else "mm")
    monkeypatch.setattr(gemm_choice, "_choices", {})
    _packed_site_follows_edits(layer, torch.randn(67, 300), tmp_path, rtol=1e-4, atol=1e-4)


def _packed_site_follows_edits(layer: torch.nn.Module, x: torch.Tensor, tmp_path, **tolerances) -> None:
    with torch.no_grad():
        assert "linear_sites[" in wrapper_source(layer, (x,), tmp_path)
    compiled = torch.compile(layer, backend="mlirc")
    edits = (
        lambda: None,
        lambda: layer.weight.mul_(-2.0),
        lambda: setattr(layer.weight, "data", torch.randn_like(layer.weight)),
    )
    with torch.no_grad():
        for edit in edits:
            edit()
            torch.testing.assert_close(compiled(x), layer(x), **tolerances)


@pytest.mark.skipif(not packed_weights.linear_available(torch.bfloat16), reason="torch built without oneDNN")
@pytest.mark.parametrize("rows", [1, 67])
@pytest.mark.parametrize(
    "make", [lambda: torch.nn.Linear(300, 257), lambda: Conv1D(300, 257)], ids=["linear", "conv1d"]
)
def test_bfloat16_linear_packs_its_weight_and_follows_edits(monkeypatch, tmp_path, make, rows):
    """bfloat16 GEMMs on a parameter run on oneDNN's packed weight without timing (the
    same sums as torch.mm's, so eager's bits), and a weight edited in place or
    replaced is packed again."""
    monkeypatch.setattr(config, "cpu_gemm", "auto")
    monkeypatch.setattr(gemm_choice, "_choices", {})
    x = torch.randn(rows, 300, dtype=torch.bfloat16)
    _packed_site_follows_edits(make().to(torch.bfloat16), x, tmp_path, rtol=1.6e-2, atol=1e-2)


def test_unknown_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(config, "cpu_gemm", "mkl-please")
    with pytest.raises(MlircError, match="MLIRC_CPU_GEMM='mkl-please'"):
        gemm_choice.choose_mm(_meta(256, 128), _meta(128, 96))


class _Projections(torch.nn.Module):
    """Attention's q, k and v projections: each bias add reaches only SDPA."""

    def __init__(self, width: int = 96, heads: int = 4) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(width, width) for _ in range(3))
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, tokens, self.heads, width // self.heads).transpose(1, 2)

        attended = torch.nn.functional.scaled_dot_product_attention(
            split(self.q(x)), split(self.k(x)), split(self.v(x))
        )
        return attended.transpose(1, 2).reshape(batch, tokens, width)


@pytest.mark.parametrize("choice", [gemm_choice.BLAS, gemm_choice.ONEDNN, gemm_choice.PACKED])
def test_float32_bias_without_a_kernel_joins_its_gemm(monkeypatch, tmp_path, choice):
    """A float32 bias add that would be a kernel of its own (its result goes only to
    SDPA) is added by the GEMM call, on each GEMM choice; a symbolic batch (torch.addmm
    whatever the choice) gives eager's answers too."""
    if choice == gemm_choice.PACKED and not packed_weights.linear_available():
        pytest.skip("torch built without MKL")
    monkeypatch.setattr(config, "cpu_gemm", "auto")
    monkeypatch.setattr(gemm_choice, "_measure", lambda a, b, packable: choice)
    monkeypatch.setattr(gemm_choice, "_choices", {})
    monkeypatch.setattr(gemm_choice, "MIN_MACS", 0)
    torch.manual_seed(5)
    layer = _Projections().eval()
    with torch.no_grad():
        regions = wrapper_source(layer, (torch.randn(2, 13, 96),), tmp_path).split("def call(")
        projections = [r for r in regions if "arg6" in r]  # the one with the three layers' weights
        assert len(projections) == 1 and "kernels[" not in projections[0], regions
        for shape in [(1, 1, 96), (3, 7, 96)]:
            compile_and_compare(layer, torch.randn(shape), rtol=1e-5, atol=1e-5)
        compiled = torch.compile(layer, backend="mlirc", dynamic=True)
        for batch in (2, 5):
            x = torch.randn(batch, 11, 96)
            torch.testing.assert_close(compiled(x), layer(x), rtol=1e-5, atol=1e-5)
