"""Indexing, var/std and tensor-creation lowerings vs eager."""

import pytest
import torch
from conftest import compile_and_compare, wrapper_source

from mlirc.config import config

X = torch.randn(4, 5, 6)
IDX = torch.tensor([0, -1, 2])
IDX2 = torch.tensor([[1], [3]])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[IDX],  # one index tensor, negative entries wrap
        lambda x: x[:, IDX],  # an index after a full slice
        lambda x: x[IDX2, IDX],  # two broadcast index tensors, adjacent
        lambda x: x[IDX, :, IDX],  # separated: the broadcast dims go first
        lambda x: x.permute(2, 0, 1)[:, IDX, IDX2],  # on a non-contiguous view
        lambda x: x[IDX[:0]],  # an empty index
    ],
)
def test_advanced_indexing(fn):
    compile_and_compare(fn, X.clone())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_var_std(dtype):
    def f(x):
        return (
            torch.var(x, 1),
            torch.var_mean(x, (0, 2), keepdim=True),
            torch.var(x, correction=0),
            x.std(-1),
            torch.var(x[0, 0, :1], 0),  # N - correction = 0: NaN as in eager
        )

    with pytest.warns(UserWarning, match="degrees of freedom"):
        compile_and_compare(f, X.to(dtype) * 3 + 1, rtol=1e-5 if dtype == torch.float32 else 1e-7)


def test_empty_and_copy():
    def f(x):
        return torch.empty(3, 4).fill_(2) + x[0, 0, 0], x.new_zeros(2).copy_(x[0, 0, :2]), torch.empty_like(x).copy_(x)

    compile_and_compare(f, X.clone())


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.split(x, [2, 3], 1),
        lambda x: torch.chunk(x, 4, -1),
        lambda x: torch.split(x, 3),
        lambda x: torch.erfc(x / 30),
        lambda x: torch.pow(2.5, x / 30),
        lambda x: torch.round(x, decimals=2),
        lambda x: torch.round(x, decimals=-1),
        lambda x: torch.nn.functional.normalize(x, dim=1),  # broadcast of a unit loop dim, vectorized
    ],
)
def test_split_and_math(fn):
    compile_and_compare(fn, X.clone() * 30)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.flip(x, [0, 2]),
        lambda x: torch.flip(x, [-1]),
        lambda x: torch.diagonal(x),
        lambda x: torch.diagonal(x, 2, 1, 2),
        lambda x: torch.diagonal(x, -2, 2, 0),
        lambda x: torch.diagonal(x, 9),  # past the edge: empty
        lambda x: x[0].t().diag(),
    ],
)
def test_flip_and_diagonal(fn):
    compile_and_compare(fn, X.clone())


def test_angle_and_conj_of_real_tensors():
    x = X[0].clone()
    x[0, 0], x[0, 1], x[0, 2] = float("nan"), 0.0, -0.0

    def f(x):
        return torch.angle(x), torch.angle((x.nan_to_num() * 3).long()), torch.conj_physical(x) + 1

    compile_and_compare(f, x)


@pytest.mark.parametrize(
    "shape,dim,size,step", [((13,), 0, 4, 3), ((5, 11, 3), 1, 2, 2), ((7, 9), -1, 9, 1), ((4, 6), 0, 1, 5)]
)
def test_unfold(shape, dim, size, step):
    compile_and_compare(lambda x: x.unfold(dim, size, step) * 2, torch.randn(shape))


def test_unfold_of_a_non_contiguous_input():
    compile_and_compare(lambda x: x.t().unfold(1, 3, 2) + 1, torch.randn(11, 6))


def test_as_strided_gathers_from_storage_order():
    x = torch.randn(7, 13)
    compile_and_compare(lambda t: (t + 1).as_strided((5, 4), (3, 2), 6), x)
    torch._dynamo.reset()
    compile_and_compare(lambda t: torch.as_strided(t * 2, (0, 3), (1, 1)), x)


def test_as_strided_of_a_view_falls_back_correctly():
    # the input's storage layout is not the graph's: eager runs it, and agrees
    x = torch.randn(6, 10)
    compile_and_compare(lambda t: t.t().as_strided((4, 3), (1, 2)), x, expect_no_fallback=False)


def test_index_put_last_update_wins_and_accumulate_sums_duplicates():
    x, values = torch.randn(11, 7), torch.randn(6, 7)
    index = torch.tensor([3, -1, 3, 0, 10, 3])  # duplicates and a negative index
    compile_and_compare(lambda t, i, v: t.index_put((i,), v), x, index, values)
    torch._dynamo.reset()
    compile_and_compare(lambda t, i, v: t.index_put((i,), v, accumulate=True), x, index, values)


def test_index_put_forms():
    x = torch.randn(5, 6, 4)
    rows, cols = torch.tensor([[0], [4]]), torch.tensor([1, 5, 2])  # broadcast to [2, 3]
    compile_and_compare(lambda t: t.index_put((rows, cols), torch.tensor(2.5), accumulate=True), x)
    torch._dynamo.reset()
    compile_and_compare(lambda t: t.transpose(0, 2).index_add(0, torch.tensor([2, 2, 0]), torch.ones(3, 6, 5)), x)
    torch._dynamo.reset()
    flags = torch.zeros(9, dtype=torch.bool)
    compile_and_compare(lambda f: f.index_put((torch.tensor([1, 1, 4]),), torch.tensor(True), accumulate=True), flags)


# Accumulating scatters too large for the dense match (targets x updates past
# api.DENSE_SCATTER_LIMIT): mlirc.scatter_add, a loop over the updates in order.
ROWS, UPDATES = 3001, 2003


def _rows_and_index(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(-ROWS, ROWS, (UPDATES,), generator=g)  # negative ones wrap
    index[:40] = 7  # one row takes many updates
    return torch.randn(ROWS, 37, generator=g), index


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64]
)
def test_large_index_put_accumulate(dtype):
    x, index = _rows_and_index(0)
    values = torch.randn(UPDATES, 37) * 50
    x, values = (x * 50).to(dtype), values.to(dtype)
    # eager's own float32 sum adds on threads in no fixed order: ours is serial
    tol = {torch.float32: 1e-5, torch.bfloat16: 0, torch.float16: 0}.get(dtype, 0)
    compile_and_compare(lambda t, i, v: t.index_put((i,), v, accumulate=True), x, index, values, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t, i, v: t.index_put((i,), v[:, :1], accumulate=True),  # broadcast values
        lambda t, i, v: t.index_put((i,), v.t().contiguous().t(), accumulate=True),  # column-major values
        lambda t, i, v: t.t().contiguous().t().index_put((i,), v, accumulate=True),  # a column-major destination
        lambda t, i, v: torch.ops.aten.index_put(
            t.t().reshape(37, ROWS, 1), [None, i], v.t()[:, :, None], True
        ),  # dims before the index
        lambda t, i, v: t.index_put((i[:0],), v[:0], accumulate=True),  # no updates
        lambda t, i, v: t.index_add(0, i % ROWS, v, alpha=-2.0),
        lambda t, i, v: torch.ops.aten.embedding_dense_backward(v, i % ROWS, ROWS, 7, False),  # padding row 7
        lambda t, i, v: torch.ops.aten.embedding_dense_backward(
            v.view(1, UPDATES, 37), i.view(1, -1) % ROWS, ROWS, -1, True
        ),
    ],
)
def test_large_index_put_forms(fn):
    x, index = _rows_and_index(1)
    compile_and_compare(fn, x, index, torch.randn(UPDATES, 37), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_large_scatter_add(dtype):
    g = torch.Generator().manual_seed(2)
    x, src = (torch.randn(ROWS, 40, generator=g) * 20).to(dtype), (torch.randn(2600, 41, generator=g) * 20).to(dtype)
    index = torch.randint(0, ROWS, (2500, 40), generator=g)
    tol = 1e-5 if dtype == torch.float32 else 0  # bf16 sums in f32, rounded once (eager's opmath)
    compile_and_compare(lambda t, i, s: t.scatter_add(0, i, s), x, index, src, rtol=tol, atol=tol)
    torch._dynamo.reset()
    compile_and_compare(lambda t, i, s: t.scatter_reduce(1, i, s, "sum"), x.t(), index.t(), src.t(), rtol=tol, atol=tol)


def test_large_scatter_index_errors_as_eager():
    x, index = _rows_and_index(3)
    index[11] = ROWS  # one past the end
    with pytest.raises(IndexError, match="out of bounds"):
        torch.compile(lambda t, i, v: t.index_put((i,), v, accumulate=True), backend="mlirc")(
            x, index, torch.randn(UPDATES, 37)
        )
    index = torch.randint(0, ROWS, (2500, 40))
    index[3, 4] = -1  # scatter_add does not wrap
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.compile(lambda t, i: t.scatter_add(0, i, torch.ones(2500, 40)), backend="mlirc")(
            torch.zeros(ROWS, 40), index
        )


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    sequence = torch.tensor([-1.0, 0.0, 0.0, 2.5, 3.0, float("nan")])  # ties, NaN last
    values = torch.tensor([[-2.0, 0.0, 1.0], [2.5, 9.0, float("nan")]])
    compile_and_compare(lambda s, v: torch.searchsorted(s, v, right=right), sequence, values)
    torch._dynamo.reset()
    compile_and_compare(lambda v, s: torch.bucketize(v, s[:5], right=right, out_int32=True), values, sequence)
    torch._dynamo.reset()
    rows = torch.randn(3, 37).sort(-1).values  # one sorted row per row of values
    compile_and_compare(lambda s, v: torch.searchsorted(s, v, right=right), rows, torch.randn(3, 11))
    torch._dynamo.reset()
    shuffled = torch.randn(23)
    order = shuffled.argsort()
    compile_and_compare(lambda s, o, v: torch.searchsorted(s, v, sorter=o), shuffled, order, torch.randn(5, 4))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = torch.randn(6, 5)
    index = torch.tensor([[0, 1, 0, 5], [2, 2, 2, 1], [5, 0, 3, 3]])  # duplicates, untouched rows
    src = torch.randn(4, 7)[:, ::2].t()  # larger than the index, non-contiguous
    src[1, 2] = float("nan")
    compile_and_compare(lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=include_self), x, index.t(), src)


def test_scatter_forms():
    x, index = torch.randn(4, 9), torch.tensor([[8, 0, 8], [1, 1, 2]])
    compile_and_compare(lambda t, i: t.scatter(1, i, torch.arange(6.0).view(2, 3)), x, index)
    torch._dynamo.reset()
    compile_and_compare(lambda t, i: t.scatter(1, i, 2.5), x, index)
    torch._dynamo.reset()
    compile_and_compare(lambda t, i: t.scatter_add(1, i, torch.ones(2, 3)), x, index)
    torch._dynamo.reset()
    source = torch.randn(4, 3)
    compile_and_compare(lambda t, s: t.index_reduce(1, torch.tensor([8, 0, 8]), s, "amax"), x, source)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_frexp(dtype):
    x = torch.cat([torch.randn(37) * 1e3, torch.tensor([0.0, -0.0, 1e-40, 3e-39, float("inf"), float("nan"), 1.0])])
    compile_and_compare(lambda t: tuple(torch.frexp(t)), x.to(dtype))


@pytest.mark.parametrize("bins,lo,hi", [(10, 0, 0), (7, -1.5, 2.0), (1, 0, 0), (13, 0.25, 0.25)])
def test_histc(bins, lo, hi):
    x = torch.randn(5, 41)
    x[0, 0] = 2.0  # the top edge goes in the last bin
    compile_and_compare(lambda t: torch.histc(t, bins, lo, hi), x)
    torch._dynamo.reset()
    compile_and_compare(lambda t: torch.histc(t, bins, lo, hi), torch.full((6,), 0.5))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, float("inf")])
def test_cdist_and_pdist(p):
    a, c = torch.randn(2, 7, 5), torch.randn(2, 30, 5)  # 30 rows: ATen's matmul form for p = 2
    a[0, 1] = c[0, 3]  # a zero distance
    compile_and_compare(lambda x, y: torch.cdist(x, y, p), a, c)
    torch._dynamo.reset()
    compile_and_compare(lambda x: torch.nn.functional.pdist(x, p), torch.randn(9, 4))


@pytest.mark.parametrize(
    "fn,base,large",
    [
        (lambda b: b.expand(5000, 5000)[:10, :7] * 2, torch.randn(5000, 1), "5000, 5000"),
        (lambda b: b.expand(3, 500, 5000)[1, 5:9, ::700] + 1, torch.randn(1, 1, 5000), "500, 5000"),  # a select, slices
        (lambda b: b.sum(0) + 1, torch.randn(1, 5000).expand(5000, 5000), "5000, 5000"),  # an expanded input
    ],
)
def test_expanded_tensors_are_never_materialized(fn, base, large, tmp_path, monkeypatch):
    """mlirc-slice-broadcasts and the input layouts: no buffer of the expanded size."""
    monkeypatch.setattr(config, "scratch_mb", 0)  # every buffer an empty_strided line
    compile_and_compare(fn, base)
    source = wrapper_source(fn, (base,), tmp_path)
    assert large not in source and ".contiguous()" not in source.replace(
        "if arg0.is_contiguous() else arg0.contiguous()", ""
    )


@pytest.mark.parametrize(
    "batch, steps, width",
    [(4, 64, 1000), (3, 7, 17), (1, 2, 8), (2, 5, 1), (2, 1, 16), (0, 4, 8)],
    ids=["gpt2_loss", "odd", "one_row", "one_column", "one_step", "empty"],
)
def test_shifted_rows_scaled_per_row_padded_back(batch, steps, width):
    """A cross-entropy's gradient over all positions but the last, scaled per row and
    padded back to every position (a causal LM's loss backward): reads of the rows
    along the vector loop beside one element per row (mlirc-cpu-vectorize broadcasts
    it), rows clamped into range, the padded position zero."""

    def grad_of_shifted(logp, scale, g):
        rows = (g - torch.exp(logp) * scale[:, None]).view(batch, steps - 1, width)
        return torch.nn.functional.pad(rows, (0, 0, 0, 1))

    rows = batch * (steps - 1)
    logp = torch.randn(rows, width).log_softmax(-1)
    compile_and_compare(grad_of_shifted, logp, torch.rand(rows) + 0.5, torch.randn(rows, width))
    # the same with a transposed gradient and a strided scale
    compile_and_compare(grad_of_shifted, logp, (torch.rand(2 * rows) + 0.5)[::2], torch.randn(width, rows).t())
