"""Symbolic sizes: a graph Dynamo hands over with SymInt sizes is compiled,
not run eagerly, at every size it is called with (frontend/dynamic.py)."""

from __future__ import annotations

import copy

import pytest
import sympy
import torch
import torch.nn.functional as F
from conftest import outcome
from torch._dynamo.utils import counters

import mlirc
from mlirc.config import config
from mlirc.frontend import dynamic

BATCHES = [16, 16, 7, 1, 2, 3, 17, 64, 16, 7]


def small_cnn(width: int = 8) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(width, 5),
    ).eval()  # fmt: skip


def dynamo_graphs(model: torch.nn.Module, backend: str, batches: list[int]) -> tuple[int, list]:
    """How many graphs Dynamo compiles for these batch sizes, and the outputs."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        outputs = [compiled(torch.randn(b, 3, 12, 11)) for b in batches]
    return counters["stats"]["unique_graphs"], outputs


def assert_compiled_everything() -> None:
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.failed_regions == 0, stats.summary()
    assert not any("symbolic" in reason for reason in stats.fallback_ops), stats.summary()


def test_batch_sizes_through_one_symbolic_graph():
    """Automatic dynamic: the second batch size makes the graph symbolic; every size
    after it runs compiled, and Dynamo recompiles no more than for any backend."""
    model = small_cnn()
    eager_graphs, _ = dynamo_graphs(model, "eager", BATCHES)
    torch.manual_seed(1)
    graphs, outputs = dynamo_graphs(model, "mlirc", BATCHES)
    assert graphs == eager_graphs
    torch.manual_seed(1)
    with torch.no_grad():
        for b, out in zip(BATCHES, outputs, strict=True):
            torch.testing.assert_close(out, model(torch.randn(b, 3, 12, 11)), rtol=1e-4, atol=1e-5)
    assert_compiled_everything()
    # Dynamo's graphs: 16 static; 7 symbolic, guarded 2 <= s0 <= 15 by the choice of
    # conv algorithm; 1 (0/1 specialization); 17 another symbolic one
    assert mlirc.stats().compiled_sizes == 8, mlirc.stats().summary()


def test_odd_last_batch_of_an_epoch():
    model = small_cnn()
    compiled = torch.compile(model, backend="mlirc")
    with torch.no_grad():
        for b in [32, 32, 32, 5]:
            x = torch.randn(b, 3, 12, 11)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert_compiled_everything()


@pytest.mark.parametrize("middle", ["linear", "layer_norm"])
def test_training_at_a_second_batch_size(middle):
    """The second batch size makes the backward symbolic.  Its weight gradient
    transposes the activations ([s, 32] -> [32, s]) for the GEMM; that transpose was
    taken for a view of the loss gradient, whose batch size it read: [4, 20] or
    [1, 20] came back for a [32, 20] gradient (mlirc-transpose-views)."""
    torch.manual_seed(0)
    second, width = (torch.nn.Linear(32, 4), 4) if middle == "linear" else (torch.nn.LayerNorm(32), 32)
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), second)
    compiled = torch.compile(copy.deepcopy(model), backend="mlirc")
    for b in [8, 5, 1, 13]:
        x, y = torch.randn(b, 20), torch.randn(b, width)
        F.mse_loss(model(x), y).backward()
        F.mse_loss(compiled(x), y).backward()
        for expected, actual in zip(model.parameters(), compiled.parameters(), strict=True):
            torch.testing.assert_close(actual.grad, expected.grad, rtol=1e-4, atol=1e-5)
    assert_compiled_everything()


def test_two_models_in_one_process():
    """Both Sequentials share Dynamo's cache entry for Sequential.forward; the second
    model's shapes made the graph symbolic, and that used to turn both eager."""
    first, second = small_cnn(8), small_cnn(6)
    compiled = [torch.compile(first, backend="mlirc"), torch.compile(second, backend="mlirc")]
    with torch.no_grad():
        for _ in range(2):
            for model, fn in zip([first, second], compiled, strict=True):
                for b in (4, 9):
                    x = torch.randn(b, 3, 12, 11)
                    torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-5)
    assert_compiled_everything()


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    return torch.softmax(scores, -1) @ v


CASES = {
    # a SymInt argument used as a value, reductions over dynamic dims
    "reductions": (lambda x: x.sum(0) * x.shape[0] + x.amax(1).mean(), [(5, 7), (9, 7), (31, 13)]),
    "flatten_symbolic_dims": (lambda x: x.reshape(-1, x.shape[-1]).softmax(-1).reshape(x.shape[0], -1), [(2, 3, 5), (4, 7, 5), (3, 2, 8)]),
    "split_in_halves": (lambda x: x[: x.shape[0] // 2] - x[x.shape[0] // 2 :].flip(0), [(4, 3), (10, 3), (16, 5)]),
    "layer_norm": (lambda x: F.layer_norm(x, x.shape[-1:]) + 1, [(3, 17), (6, 33), (2, 5)]),
    "conv_over_h_and_w": (
        lambda x: F.max_pool2d(F.conv2d(x, torch.ones(4, 3, 3, 3) / 27, padding=1).relu(), 2),
        [(1, 3, 8, 8), (2, 3, 11, 13), (3, 3, 16, 7)],
    ),
    "transposed_output": (lambda x: (x * 2).t(), [(3, 5), (7, 2), (4, 4)]),
}  # fmt: skip


def test_dynamic_true_cases():
    for name, (fn, shapes) in CASES.items():
        torch._dynamo.reset()
        mlirc.reset_stats()
        compiled = torch.compile(fn, backend="mlirc", dynamic=True)
        for shape in shapes:
            x = torch.randn(shape)
            expected, actual = fn(x), compiled(x)
            torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
            assert actual.stride() == expected.stride(), name
        assert_compiled_everything()
        assert mlirc.stats().compiled_sizes == len(shapes), (name, mlirc.stats().summary())


def test_attention_over_a_dynamic_sequence():
    compiled = torch.compile(attention, backend="mlirc")
    for seq in (8, 13, 31, 1, 64):
        q, k, v = (torch.randn(2, 4, seq, 16) for _ in range(3))
        torch._dynamo.mark_dynamic(q, 2)
        torch._dynamo.mark_dynamic(k, 2)
        torch._dynamo.mark_dynamic(v, 2)
        torch.testing.assert_close(compiled(q, k, v), attention(q, k, v), rtol=1e-4, atol=1e-5)
    assert_compiled_everything()


def test_a_size_is_compiled_once_and_kept():
    fn = torch.compile(lambda x: (x + 1).sum(1), backend="mlirc", dynamic=True)
    for n in (3, 5, 3, 5, 3):
        x = torch.randn(n, 4)
        torch.testing.assert_close(fn(x), (x + 1).sum(1))
    assert mlirc.stats().compiled_sizes == 2, mlirc.stats().summary()


def test_strided_inputs_are_their_own_signature():
    fn = lambda x: x * 2 + 1  # noqa: E731
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for x in (torch.randn(5, 6), torch.randn(6, 5).t(), torch.randn(5, 12)[:, ::2], torch.randn(7, 6)):
        actual = compiled(x)
        torch.testing.assert_close(actual, fn(x))
        assert actual.stride() == fn(x).stride()
    assert_compiled_everything()


def test_sizes_beyond_the_limit_run_eagerly_with_a_warning(monkeypatch):
    """Where each size compiles its own (here MLIRC_RUNTIME_SIZES=0; a graph with one
    wrapper for every size runs every size compiled, see test_runtime_sizes)."""
    monkeypatch.setattr(config, "dynamic_sizes", 2)
    monkeypatch.setattr(config, "runtime_sizes", False)
    fn = torch.compile(lambda x: x.exp().sum(0), backend="mlirc", dynamic=True)
    for n in (3, 4):
        x = torch.randn(n, 2)
        torch.testing.assert_close(fn(x), x.exp().sum(0))
    x = torch.randn(5, 2)
    with pytest.warns(UserWarning, match="MLIRC_DYNAMIC_SIZES"):
        torch.testing.assert_close(fn(x), x.exp().sum(0))
    assert mlirc.stats().graphs == 2


def test_errors_keep_eagers_type_at_every_size():
    fn = torch.compile(lambda x, i: x[i], backend="mlirc", dynamic=True)
    for n in (4, 6):
        x = torch.randn(n, 3)
        torch.testing.assert_close(fn(x, torch.tensor([0, n - 1])), x[[0, n - 1]])
        with pytest.raises(IndexError):
            fn(x, torch.tensor([n]))


def test_size_expressions_are_evaluated_from_the_arguments():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        fake = mode.from_tensor(torch.empty(6, 4))
    shape_env = mode.shape_env
    s0, s1 = (shape_env.create_unbacked_symint() for _ in range(2))
    del fake
    symbols = {s0.node.expr: 6, s1.node.expr: 4}
    assert dynamic.evaluate(s0 * s1, symbols) == 24
    assert dynamic.evaluate(s0 // 4 + 1, symbols) == 2
    assert dynamic.evaluate(7, symbols) == 7
    assert isinstance(s0.node.expr, sympy.Symbol)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_batch_sizes_and_sequences():
    model = small_cnn().cuda()
    compiled = torch.compile(model, backend="mlirc")
    with torch.no_grad():
        for b in (16, 7, 1, 3, 17, 64):
            x = torch.randn(b, 3, 12, 11, device="cuda")
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    fn = torch.compile(attention, backend="mlirc", dynamic=True)
    for seq in (8, 13, 31):
        q, k, v = (torch.randn(2, 4, seq, 16, device="cuda") for _ in range(3))
        torch.testing.assert_close(fn(q, k, v), attention(q, k, v), rtol=1e-4, atol=1e-4)
    assert_compiled_everything()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_with_cpu_scalar_tensors():
    """With dynamic=True Dynamo passes Python floats as 0-d CPU tensors (the OpInfo
    sweep's addcmul, softplus, threshold: 'Pointer argument cannot be accessed from
    Triton'); eager also lets a user's 0-d CPU tensor join CUDA ones, first or not."""

    def scaled(x, y, value: float):
        return torch.addcmul(x, x, y, value=value)

    fn = torch.compile(scaled, backend="mlirc", dynamic=True)
    for n, value in ((5, 0.5), (9, -2.0), (17, 3.25)):
        x, y = torch.randn(n, 3, device="cuda"), torch.randn(n, 3, device="cuda")
        torch.testing.assert_close(fn(x, y, value), scaled(x, y, value))

    def mixed(scale, x):
        return (x * scale).exp()

    static = torch.compile(mixed, backend="mlirc")
    for value in (0.5, 1.5):
        scale, x = torch.tensor(value), torch.randn(7, 13, device="cuda")
        torch.testing.assert_close(static(scale, x), mixed(scale, x))
    assert_compiled_everything()


def test_errors_of_the_op_the_user_called():
    """AOTAutograd decomposes index_add into index_put, which wraps index -1 where
    index_add raises; the checks follow the node's `original_aten`, which the retrace
    at a call's sizes must keep (fuzz_graphs.py --dynamic, seed 22001066022)."""

    def add_rows(x, index, rows):
        return x.index_add(0, index, rows)

    fn = torch.compile(add_rows, backend="mlirc", dynamic=True)
    for n in (8, 11):
        x, rows = torch.randn(n, 5), torch.randn(4, 5)
        for index in ([0, n - 1, 2, 2], [0, -1, 2, 2], [0, n, 2, 2]):
            args = (x, torch.tensor(index), rows)
            (expected, expected_error), (actual, actual_error) = outcome(add_rows, *args), outcome(fn, *args)
            assert type(actual_error) is type(expected_error), (
                f"{index}: eager {expected_error!r}, mlirc {actual_error!r}"
            )
            if expected_error is None:
                torch.testing.assert_close(actual, expected)


def test_sizes_among_the_results():
    """At one call's sizes a SymInt result is a constant: it leaves the compiled graph
    and is put back in its place."""

    def fn(x, y):
        return x * 2, x.shape[0] * 3, torch.cat([x, y]).cumsum(0)[: x.shape[0] + 1]

    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for n, m in ((3, 4), (5, 2), (2, 9)):
        x, y = torch.randn(n, 3), torch.randn(m, 3)
        actual, expected = compiled(x, y), fn(x, y)
        assert actual[1] == expected[1]
        torch.testing.assert_close(actual[0], expected[0])
        torch.testing.assert_close(actual[2], expected[2])
    assert_compiled_everything()


def test_views_of_inputs_keep_their_offsets():
    """AOTAutograd rebuilds a result that views an input from the compiled result's
    layout when sizes are symbolic; a copy's storage offset 0 made every chunk the
    first one (OpInfo --dynamic: chunk, split, __getitem__, as_strided)."""

    def fn(x):
        return (*torch.chunk(x, 3, 1), x[1:, 2:].t(), x.as_strided((2, 2), (3, 1), 4))

    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for shape in ((5, 10), (4, 7), (6, 13)):
        x = torch.randn(shape)
        for actual, expected in zip(compiled(x), fn(x), strict=True):
            assert actual.storage_offset() == expected.storage_offset()
            assert actual.stride() == expected.stride()
            torch.testing.assert_close(actual, expected)
            assert actual.data_ptr() - actual.storage_offset() * 4 == x.data_ptr()  # a view, as eager's


def test_views_of_inputs_that_start_inside_their_storage():
    """A view's offset is its input's plus a constant, whatever the input's own offset
    was when compiled (fuzz_graphs.py --dynamic, seed 24402073207: a flatten of an
    input at offset 3 came back at offset 0); as_strided's offset is absolute."""

    def fn(x):
        return (x.flatten(1), *torch.chunk(x, 2, 0), x.as_strided((2, 2), (3, 1), 4))

    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    storage = torch.randn(400)
    for start, rows in ((0, 6), (3, 6), (7, 6), (3, 9), (0, 9), (11, 4)):
        x = storage[start : start + rows * 12].view(rows, 3, 4)
        for actual, expected in zip(compiled(x), fn(x), strict=True):
            assert (actual.storage_offset(), actual.stride()) == (expected.storage_offset(), expected.stride())
            assert actual.untyped_storage().data_ptr() == storage.untyped_storage().data_ptr()
            torch.testing.assert_close(actual, expected)


def test_decompositions_under_symbolic_sizes():
    """softplus, linspace and addcmul decompose to prims.convert_element_type when
    sizes are symbolic (aten._to_copy when static): both lower."""

    def fn(x, y):
        return F.softplus(x, beta=2.0) + torch.addcmul(x, x, y, value=0.5) + F.hardshrink(y)

    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for n in (3, 8, 17):
        x, y = torch.randn(n, 5), torch.randn(n, 5)
        torch.testing.assert_close(compiled(x, y), fn(x, y))
    assert_compiled_everything()


def test_graphs_returning_more_than_dynamos_outputs():
    """A training-mode batch norm's graph also returns the updated running statistics:
    more results than Dynamo's outputs, whose strides are then not applied."""
    bn = torch.nn.BatchNorm2d(3)
    reference = torch.nn.BatchNorm2d(3)
    compiled = torch.compile(bn, backend="mlirc", dynamic=True)
    for n in (2, 5):
        x = torch.randn(n, 3, 4, 5)
        torch.testing.assert_close(compiled(x), reference(x), rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(bn.running_mean, reference.running_mean)
    assert not any("zip" in reason for reason in mlirc.stats().fallback_ops), mlirc.stats().summary()


def test_float_arithmetic_dynamo_makes_tensor_ops():
    """With dynamic=True Dynamo turns float arithmetic into tensor ops (its scalars
    'tensorified'): linspace's step is a true_divide, div's alias."""
    fn = torch.compile(lambda start, end: torch.linspace(start, end, 7), backend="mlirc", dynamic=True)
    for start, end in ((1.0, 3.0), (-2.5, 4.0)):
        torch.testing.assert_close(fn(start, end), torch.linspace(start, end, 7))
    assert_compiled_everything()
