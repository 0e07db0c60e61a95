"""Reductions through the CPU schedules: short rows (one vector), split rows with
and without a peeled partial block, keepdim, and every combiner kind and dtype."""

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare

# Row lengths around the split-reduction block (4 vectors: 32 f32 / 16 f64 lanes on
# AVX2, twice that on AVX-512): 1, below, one block, between, exact multiples, primes.
ROW_LENGTHS = [1, 7, 31, 32, 33, 64, 127, 137, 1000, 1024]


@pytest.mark.parametrize("n", ROW_LENGTHS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_row_sum_max_min(n, dtype):
    x = torch.randn(5, n, dtype=dtype)
    compile_and_compare(lambda x: (x.sum(-1), x.amax(-1, keepdim=True), x.amin(-1), x.mean(-1)), x)


@pytest.mark.parametrize("n", [3, 64, 137])
def test_integer_and_bool_reductions(n):
    x = torch.randint(-9, 9, (4, n))
    b = x > 0
    compile_and_compare(lambda x, b: (x.sum(-1), x.amax(-1), x.amin(-1), b.any(-1), b.all(-1)), x, b)


def test_prod_and_fused_producer():
    x = torch.rand(6, 137) + 0.5
    compile_and_compare(lambda x: (x.prod(-1), torch.exp(x - 1).sum(-1, keepdim=True)), x, rtol=1e-4)


@pytest.mark.parametrize("shape", [(3, 1, 129), (2, 3, 4, 100), (1000,)])
def test_softmax_and_log_softmax_shapes(shape):
    x = torch.randn(*shape)
    compile_and_compare(lambda x: (torch.softmax(x, -1), torch.log_softmax(x, -1)), x)


def test_non_inner_and_full_reductions():
    x = torch.randn(37, 129)
    compile_and_compare(lambda x: (x.sum(0), x.amax(0, keepdim=True), x.sum(), x.std(-1)), x)


def test_rank_reducing_slices_of_a_kernel_result():
    # unravel_index's results are unit-dim slices of one kernel's output: host views
    # that must drop the unit dim.
    x = torch.randint(0, 20, (2, 3))
    compile_and_compare(lambda x: torch.unravel_index(x, (4, 5)), x)


def test_repeated_calls_do_not_leak():
    import resource

    x = torch.randn(4096, 137)
    f = torch.compile(lambda x: torch.softmax(x, -1) + x.sum(-1, keepdim=True), backend="mlirc")
    for _ in range(3):
        f(x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(200):
        f(x)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 16 * 1024, f"resident memory grew by {grown_kib} KiB over 200 calls"


@pytest.mark.parametrize("length", [5, 33, 100, 1003])
def test_reduction_reading_the_reduced_index(length):
    """An iota of the reduced dim fused into the reduction (the last index where a
    mask holds, a weighted sum): once vectorized with the index misplaced."""
    mask = torch.rand(9, length) > 0.5
    compile_and_compare(lambda m: torch.where(m, torch.arange(length), -1).amax(1), mask)
    torch._dynamo.reset()
    compile_and_compare(lambda x: (x * torch.arange(length)).sum(-1) / length, torch.randn(4, 9, length))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans(dim):
    x = torch.randn(13, 6, 7).transpose(0, 1)  # non-contiguous, odd sizes
    x[2, 3, 4] = float("nan")
    x[4, 1, 2] = float("-inf")
    for fn in (torch.cumsum, torch.cumprod, torch.logcumsumexp):
        torch._dynamo.reset()
        compile_and_compare(lambda t, f=fn: f(t, dim), x)
    for fn in (torch.cummax, torch.cummin):
        torch._dynamo.reset()
        compile_and_compare(lambda t, f=fn: tuple(f(t, dim)), torch.randint(-3, 3, (5, 8)).float())
        torch._dynamo.reset()
        compile_and_compare(lambda t, f=fn: tuple(f(t, dim)), x)


def test_scans_of_integers_bools_and_edge_shapes():
    compile_and_compare(lambda t: torch.cumsum(t, 0), torch.rand(11) > 0.5)  # bool -> int64
    torch._dynamo.reset()
    compile_and_compare(lambda t: torch.cumprod(t, 1, dtype=torch.float64), torch.randint(-3, 4, (3, 9)))
    torch._dynamo.reset()
    compile_and_compare(lambda t: torch.cumsum(t, 1), torch.randn(4, 0))
    torch._dynamo.reset()
    compile_and_compare(lambda t: torch.cumsum(t, 0) * 2, torch.tensor(3.0))


def _relative_error(value: torch.Tensor, exact: torch.Tensor) -> float:
    return ((value.double() - exact) / exact).abs().max().item()


@pytest.mark.parametrize("n", [2**24, 2**26])
@pytest.mark.parametrize("data", ["constant", "uniform"])
def test_long_sums_are_as_accurate_as_eager(n, data):
    """mlirc-split-reductions: eager's cascade sum is within 1e-6 here; a vector of
    sequential partial sums was off by 2.5e-3 (0.1 x 2^24).  The same bits from
    call to call (fixed order, threads or not)."""
    x = torch.full((n,), 0.1) if data == "constant" else torch.rand(n)
    exact = x.double().sum()
    compiled = torch.compile(lambda x: x.sum(), backend="mlirc")
    first, second = compiled(x), compiled(x)
    assert torch.equal(first, second)
    ulp = 2.0**-24  # a correctly rounded float32 sum is within half of it
    assert _relative_error(first, exact) <= max(_relative_error(x.sum(), exact), ulp)


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda x: x.var(), (2**22,)),
        (lambda x: x.sum(0), (2**16, 3)),  # a long strided dim
        (lambda x: x.mean(1), (3, 70001, 5)),  # a middle dim, with a leftover chunk
        (lambda x: x.sum((0, 2)), (257, 3, 129)),  # two dims, one merged run each
    ],
)
def test_long_reductions_accuracy(fn, shape):
    x = torch.rand(shape) * 3 + 1
    exact = fn(x.double())
    compiled = torch.compile(fn, backend="mlirc")(x)
    assert _relative_error(compiled, exact) <= max(2 * _relative_error(fn(x), exact), 2.0**-23)


@pytest.mark.parametrize("shape,dims", [((7, 137), (-1,)), ((6, 5, 3, 11), (0, 2, 3)), ((1, 1), (0,))])
def test_variance_converts_its_input_in_each_sum(shape, dims, monkeypatch, tmp_path):
    """float32 variance accumulates in float64 on the CPU (as eager): the float64
    value is computed inside the mean's sum and inside the squared deviations' sum
    (mlirc-recompute-cheap-producers), not written out whole for both to read back.
    Eager's values with inf, NaN and magnitudes whose squares overflow float32."""
    from mlirc.config import config

    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    x = torch.randn(*shape) * 3 + 1
    x.view(-1)[-1] = 1e30
    y = x.clone()
    y.view(-1)[0] = float("inf")
    y.view(-1)[1 % y.numel()] = float("nan")
    compile_and_compare(lambda x, y: (*torch.var_mean(x, dims), torch.std(y, dims, correction=0)), x, y)
    (module,) = [p.read_text() for p in tmp_path.glob("*.kernels.mlir")]
    wide = "tensor<" + "x".join(map(str, shape)) + "xf64>"
    kernels = [f.split("{", 1)[0] for f in module.split("func.func @")[1:] if f.startswith("kernel_")]
    assert kernels and not any(k.rsplit("->", 1)[1].strip().startswith(wide) for k in kernels), module


@pytest.mark.parametrize(
    "shape,dims",
    [((8, 16, 32, 32), (0, 2, 3)), ((3, 7, 5, 11), (0, 2, 3)), ((2, 2, 3), (1,)), ((5, 67), (-1,)), ((2, 3), (0, 1))],
)
@pytest.mark.parametrize("scale,offset", [(1.0, 0.0), (1e-3, 5.0), (1.0, 1e4), (1e30, 0.0), (1e-30, 1.0)])
def test_float32_variance_in_one_pass_rounds_as_float64(shape, dims, scale, offset):
    """float32 variance on the CPU sums deviations from a pivot and their squares in
    one float64 pass: the float64 variance rounded to float32 (to an ulp), with a
    mean far from 0, a tiny spread, squares past float32's range, a constant row
    (exactly 0), and a permuted input; eager's values within its tolerance."""
    torch.manual_seed(0)
    x = (torch.randn(shape[::-1]) * scale + offset).permute(*reversed(range(len(shape))))
    x.select(dims[0], 0).fill_(offset)  # a constant slice along the first dim reduced
    if len(shape) > 1:
        x.select(1 if dims[0] != 1 else 0, 0).fill_(offset)  # constant rows

    def f(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (*torch.var_mean(t, dims, correction=0), torch.std(t, dims, keepdim=True), torch.var(t, dims))

    got = torch.compile(f, backend="mlirc")(x)
    for value, exact in zip(got, f(x.double()), strict=True):
        rounded = exact.float()
        assert (value[rounded == 0] == 0).all()
        finite = rounded.isfinite() & (rounded != 0)
        assert torch.equal(value.isfinite(), rounded.isfinite())
        if finite.any():
            assert _relative_error(value[finite], rounded[finite].double()) <= 2.0**-23
    compile_and_compare(f, x)


@pytest.mark.parametrize("shape", [(8, 4), (8, 16), (1, 1), (7, 33), (0, 5), (3, 5, 7)])
def test_whole_sum_of_a_broadcast_product(shape):
    """(x * w).sum() with w broadcast: a whole reduction of operands read through
    different maps, which aborted the process in MLIR's vector lowering; eager's value,
    also on a transposed x, with w broadcast along either dim, and with NaN and inf."""
    x = torch.randn(shape[::-1]).mT if len(shape) == 2 else torch.randn(shape)
    w = torch.randn(shape[-1])
    v = torch.randn(shape[0], *[1] * (len(shape) - 1))
    compile_and_compare(lambda x, w, v: ((x * w).sum(), (x * v).sum(), (x * w * v).sum()), x, w, v)
    if x.numel():
        x, w = x.contiguous(), w.clone()
        x.view(-1)[-1], w[0] = float("nan"), float("inf")
        compile_and_compare(lambda x, w: (x * w).sum(), x, w)


@pytest.mark.parametrize("rows,inner,width", [(2, 3, 5), (1, 1, 1), (3, 7, 129), (0, 4, 6)])
def test_cheap_value_read_by_a_sum_through_a_reshape_and_by_a_padding(rows, inner, width):
    """A cheap elementwise value read by a sum through a reshape, by a padding (a
    gather) and by an elementwise op: each reader gets its own copy
    (mlirc-recompute-cheap-producers), the padding's computed at the index it reads.
    Eager's values, NaN and inf included, on a non-contiguous input."""
    x = torch.randn(rows * inner, width + 3)[:, 2:-1]
    if x.numel():
        x[0, 0], x[-1, -1] = float("nan"), float("inf")

    def f(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        r = t * 2 + 1
        return r.view(rows, inner, width).sum(-1), F.pad(r, (1, 0, 0, 2)), r * r

    compile_and_compare(f, x)


@pytest.mark.parametrize(
    "shape,dims",
    [
        ((3, 13, 11, 5), (1, 2)),  # 143 strided values cut between H and W (inner 11)
        ((2, 40, 40, 7), (1, 2)),  # a global response norm's pixels
        ((64, 300), (0, 1)),  # a whole sum cut between rows (inner 300)
        ((0, 13, 11, 5), (1, 2)),  # an empty batch
        ((4, 1, 173, 3), (1, 2)),  # a unit dim in the run
    ],
)
def test_sums_split_at_dim_boundaries(shape, dims):
    """mlirc-split-reductions cuts a long run of reduced dims between its own dims where
    the inner ones make a chunk: the x * x before it fuses, and NaN and inf still reach
    the sum (ConvNeXt-V2's global response norm, on a non-contiguous input)."""
    x = torch.randn(*shape[:-1], shape[-1] + 2)[..., 1:-1]
    if x.numel():
        x[(0,) * x.dim()] = float("nan") if shape[0] > 2 else float("inf")

    def grn(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        g = torch.norm(t, p=2, dim=dims, keepdim=True)
        return g, t.sum(dims), t * (g / (g.mean(dim=-1, keepdim=True) + 1e-6))

    compile_and_compare(grn, x)


def _mean_backward_bias_grad(g: torch.Tensor, tokens: int) -> tuple[torch.Tensor, ...]:
    """A mean's backward (the gradient broadcast over the tokens it averaged) summed as
    a layer norm's bias gradient, and over the tokens alone."""
    spread = g.unsqueeze(1).expand(g.shape[0], tokens, g.shape[1]) / tokens
    return spread.sum((0, 1)), spread.sum(1), (spread * 3).sum((0, 1)) + 1


@pytest.mark.parametrize("batch,tokens,width", [(4, 64, 33), (1, 1, 1), (3, 7, 129), (0, 5, 6), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_sum_over_dims_its_summand_does_not_read(batch, tokens, width, dtype):
    """A sum over broadcast dims is the summand times their count
    (mlirc-fold-broadcast-sums): eager's values with NaN and inf in the gradient, on a
    non-contiguous input, empty batches and an empty token dim (the sum is 0 there,
    not 0 * inf)."""
    g = torch.randn(width + 2, batch).t()[:, 1:-1] if dtype.is_floating_point else torch.randint(-9, 9, (batch, width))
    g = g.to(dtype)
    if g.numel() and dtype.is_floating_point:
        g[0, 0], g[-1, -1] = float("nan"), float("inf")
    compile_and_compare(lambda t: _mean_backward_bias_grad(t, tokens) if dtype.is_floating_point else
                        t.unsqueeze(1).expand(t.shape[0], tokens, t.shape[1]).sum((0, 1)), g)  # fmt: skip
