"""A graph of symbolic sizes imported once and bound at each size:
frontend/compile.py SymbolicRegion, passes/bind_sizes.py, dialects/dims.py."""

from __future__ import annotations

import glob
import os

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters

import mlirc
from mlirc.config import config
from mlirc.frontend import dynamic

# The kernels in the LLVM dialect: what the binding leads to, wherever it happened
# (the stages up to kernel formation may run on `?` dims, their dumps symbolic).
STAGES = ("cpu",)


class Block(torch.nn.Module):
    """A transformer layer's shapes: linear layers over flattened symbolic dims,
    layer norm, softmax, a mean over a symbolic dim, a size used as a value."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out, self.norm = torch.nn.Linear(16, 48), torch.nn.Linear(16, 16), torch.nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, -1)
        scores = (q @ k.transpose(1, 2)).softmax(-1)
        y = self.norm(x + self.out(scores @ v))
        return y * x.shape[1] + y.mean(1, keepdim=True)


class CausalBlock(Block):
    """GPT-2's attention: pre-norm, a causal mask over the (symbolic) sequence."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm(x)).chunk(3, -1)
        t = x.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = (q @ k.transpose(1, 2)).masked_fill(mask, float("-inf")).softmax(-1)
        return x + self.out(scores @ v)


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5),
    ).eval()  # fmt: skip


MODELS = {
    "block": (Block().eval(), lambda n: torch.randn(n, 7, 16)),
    "causal": (CausalBlock().eval(), lambda n: torch.randn(n, 7, 16)),
    "cnn": (cnn(), lambda n: torch.randn(n, 3, 12, 10)),
    "mlp": (torch.nn.Sequential(torch.nn.Linear(12, 30), torch.nn.GELU(), torch.nn.Linear(30, 4)).eval(), lambda n: torch.randn(n, 12)),
    # row-wise work over static rows: kernels are formed before the binding
    "mlp_norm": (torch.nn.Sequential(torch.nn.Linear(12, 30), torch.nn.LayerNorm(30), torch.nn.GELU(),
                                     torch.nn.Linear(30, 4), torch.nn.Softmax(-1)).eval(), lambda n: torch.randn(n, 12)),
}  # fmt: skip


# Float32 noise of blocks with GEMMs, softmax and layer norm, whose summation order
# differs from eager's (and eager's from one CPU's vector width to another's): an
# output near zero after a layer norm may differ by ~1e-5 absolute.
MODEL_TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_imported_once_and_bound_at_every_size(name):
    model, make = MODELS[name]
    counters.clear()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    sizes = [5, 2, 17, 3, 5]
    with torch.no_grad():
        for n in sizes:
            x = make(n)
            torch.testing.assert_close(compiled(x), model(x), **MODEL_TOLERANCE)
    stats = mlirc.stats()
    # every graph Dynamo made (it may guard a range of sizes, a convolution's) imported once
    assert stats.symbolic_imports == counters["stats"]["unique_graphs"], stats.summary()
    # each size bound, or served by the graph's wrapper for every size (compiled once)
    assert stats.symbolic_sizes == len(set(sizes)), stats.summary()
    assert stats.graphs == stats.symbolic_binds + stats.symbolic_every_size, stats.summary()
    assert stats.symbolic_lowered == stats.symbolic_imports, stats.summary()  # linalg ran once
    assert stats.symbolic_bind_failures == 0, stats.summary()
    assert stats.fallback_nodes == 0 and stats.failed_regions == 0, stats.summary()


def _stage_dumps(model, x, dynamic_shapes: bool, folder) -> dict[str, list[str]]:
    config.dump_dir = str(folder)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(model, backend="mlirc", dynamic=dynamic_shapes)(x)
    finally:
        config.dump_dir = None
    return {
        stage: [open(p).read() for p in sorted(glob.glob(os.path.join(folder, f"*.{stage}.mlir")))] for stage in STAGES
    }


def test_what_waits_for_sizes_is_lowered_once_they_are_bound(tmp_path):
    """The linalg stage runs once on `?` dims; a convolution over symbolic H and W
    waits for the sizes and is lowered after the binding.  A sum over a symbolic
    length (softmax over a sequence, a mean over H and W) is compiled unsplit under
    an assertion that it stays short; a size that breaks it (2^22 values) is compiled
    from a second lowering, where the sum waited for its length, and is split (in
    chunks of 512)."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, x: torch.Tensor, seq: torch.Tensor) -> tuple:
            pooled = torch.relu(self.conv(x)).mean((2, 3))
            return pooled, seq.softmax(-1), seq.sum(-1)

    model = Net().eval()
    counters.clear()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    config.dump_dir = str(tmp_path)
    try:
        with torch.no_grad():
            for n, h, w, t in ((2, 9, 7, 5), (3, 6, 11, 130), (2, 5, 5, 1 << 22)):
                x, seq = torch.randn(n, 3, h, w), torch.rand(2, t) + 0.5
                for actual, expected in zip(compiled(x, seq), model(x, seq), strict=True):
                    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
    finally:
        config.dump_dir = None
    stats = mlirc.stats()
    graphs = counters["stats"]["unique_graphs"]  # Dynamo may guard a size range (a convolution's)
    assert stats.symbolic_imports == stats.symbolic_lowered == graphs, stats.summary()
    assert stats.symbolic_sizes == 3 and stats.fallback_nodes == 0, stats.summary()
    assert stats.symbolic_assumption_misses == 1 and stats.symbolic_bind_failures == 0, stats.summary()
    (long_sum,) = glob.glob(os.path.join(tmp_path, "*x4194304.kernels.mlir"))
    assert "x512xf32>" in open(long_sum).read()  # chunks of 512


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bound_module_compiles_as_the_static_import(name, tmp_path, monkeypatch):
    """Bound at the sizes it was traced with, the symbolic import ends in the static
    graph's kernels, to the byte (kernels compiled per size, MLIRC_RUNTIME_SIZES=0)."""
    monkeypatch.setattr(config, "runtime_sizes", False)
    model, make = MODELS[name]
    x = make(6)
    static = _stage_dumps(model, x, False, tmp_path / "static")
    bound = _stage_dumps(model, x, True, tmp_path / "dynamic")
    assert mlirc.stats().symbolic_imports == 1
    for stage in STAGES:
        assert len(static[stage]) == len(bound[stage]) == 1, stage
        assert bound[stage] == static[stage], f"{name}: the {stage} stage differs"


FORMED = {
    "mlp": MODELS["mlp"],
    "mlp_norm": MODELS["mlp_norm"],
    # sizes the host computes for a kernel (a reshape's), a size as a value, a slice
    # that keeps the symbolic dim (x[:, :1] slices dim 0 whole first)
    "reshape": (lambda x: x.view(-1, 4).exp(), lambda n: torch.randn(n, 8)),
    "size_value": (lambda x: x * x.shape[0], lambda n: torch.randn(n, 16)),
    "first_column": (lambda x: x - x[:, :1], lambda n: torch.randn(n, 8)),
    # a batched matmul's operands expanded to their own symbolic shapes (for bmm)
    "batched_matmul": (lambda x: torch.matmul(x, x.transpose(-2, -1)).exp(), lambda n: torch.randn(n, 3, 5, 16)),
    # softmax over a symbolic sequence (its sum compiled unsplit, under an assertion),
    # a residual add after a linear layer on a bmm's result (sizes through the call);
    # a batch of 5, no size of the sequence's (Dynamo gives equal sizes one symbol)
    "attention_batch": MODELS["block"],
    "attention_sequence": (MODELS["block"][0], lambda n: torch.randn(5, n, 16)),
    "causal_sequence": (MODELS["causal"][0], lambda n: torch.randn(5, n, 16)),
    # convolutions and max pooling over a symbolic batch, and over symbolic H and W
    # (padded inputs sized from the image's dims), channels-last between them
    "cnn_batch": MODELS["cnn"],
    "cnn_image": (MODELS["cnn"][0], lambda n: torch.randn(5, 3, n + 4, n + 9)),
}


@pytest.mark.parametrize("runtime_sizes", [True, False])
@pytest.mark.parametrize("name", sorted(FORMED))
def test_kernels_formed_on_symbolic_sizes(name, runtime_sizes, tmp_path, monkeypatch):
    """Where nothing waits for a size (row-wise work over static rows, linear layers,
    a narrow head generated as a contraction, elementwise work), kernels are formed
    once on `?` dims and a new size only binds them: the kernel stage is not dumped
    per size.  Dynamo may make a second graph for a range of sizes (a convolution's):
    each forms its kernels once.  The CPU kernels are then compiled once for every
    size (they take their sizes as arguments) and one host wrapper serves every size,
    unbound; or with MLIRC_RUNTIME_SIZES=0 each size binds and compiles its own."""
    monkeypatch.setattr(config, "runtime_sizes", runtime_sizes)
    model, make = FORMED[name]
    counters.clear()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    config.dump_dir = str(tmp_path)
    try:
        with torch.no_grad():
            for n in (2, 3, 7, 16, 17, 64):
                x = make(n)
                torch.testing.assert_close(compiled(x), model(x), **MODEL_TOLERANCE)
    finally:
        config.dump_dir = None
    stats, graphs = mlirc.stats(), counters["stats"]["unique_graphs"]
    assert graphs <= 2 and stats.symbolic_imports == stats.symbolic_kernels == graphs, stats.summary()
    assert stats.symbolic_sizes == 6 and stats.symbolic_bind_failures == 0, stats.summary()
    kernels = glob.glob(os.path.join(tmp_path, "*.kernels.mlir"))
    assert len(kernels) == graphs and all("tensor<?x" in open(k).read() for k in kernels)
    shared = graphs if runtime_sizes else 0
    assert stats.symbolic_shared == stats.symbolic_every_size == shared, stats.summary()
    assert len(glob.glob(os.path.join(tmp_path, "*.cpu.mlir"))) == (graphs if runtime_sizes else 6)
    assert len(glob.glob(os.path.join(tmp_path, "*.bound.mlir"))) == (0 if runtime_sizes else 6)
    assert len(glob.glob(os.path.join(tmp_path, "*-every-size.wrapper.py"))) == shared


def test_a_size_that_breaks_an_assumption_compiles_from_a_second_lowering(tmp_path):
    """Softmax over a symbolic row length forms its kernels once, its sum unsplit
    under an assertion (at most 2048 contiguous values); longer rows are compiled
    from a second lowering, made once, where the sum waits for its length and is
    split as on a static graph (chunks of 512)."""
    compiled = torch.compile(lambda x: x.softmax(-1), backend="mlirc", dynamic=True)
    config.dump_dir = str(tmp_path)
    try:
        for n in (5, 2048, 2049, 3001, 7):
            x = torch.randn(3, n) * 4
            torch.testing.assert_close(compiled(x), x.softmax(-1), rtol=1e-5, atol=1e-7)
    finally:
        config.dump_dir = None
    stats = mlirc.stats()
    assert stats.symbolic_kernels == 1 and stats.symbolic_sizes == 5, stats.summary()
    assert stats.symbolic_assumption_misses == 2 and stats.symbolic_bind_failures == 0, stats.summary()
    assert len(glob.glob(os.path.join(tmp_path, "*-deferring.linalg.mlir"))) == 1
    (long_rows,) = glob.glob(os.path.join(tmp_path, "*x3001.kernels.mlir"))
    assert "x512xf32>" in open(long_rows).read()
    # short rows: kernels formed once and compiled once for every size, served unbound
    assert not glob.glob(os.path.join(tmp_path, "*x2048.kernels.mlir"))
    assert len(glob.glob(os.path.join(tmp_path, "*-sizes.cpu.mlir"))) == stats.symbolic_shared == 1
    assert stats.symbolic_unbound_sizes == 3 and not glob.glob(os.path.join(tmp_path, "*x2048.bound.mlir"))


def test_a_graph_that_needs_a_static_size_is_specialized_per_size():
    """Slicing at a symbolic offset has no symbolic import yet: each size's graph is
    made static from the FX graph, as before, with the same answers."""

    def halves(x):
        return x[: x.shape[0] // 2] - x[x.shape[0] // 2 :].flip(0)

    compiled = torch.compile(halves, backend="mlirc", dynamic=True)
    for n in (4, 10, 16):
        x = torch.randn(n, 3)
        torch.testing.assert_close(compiled(x), halves(x))
    stats = mlirc.stats()
    assert stats.symbolic_imports == 0 and stats.graphs == 3 and stats.fallback_nodes == 0, stats.summary()


def test_transposed_arguments_take_the_per_size_path():
    """The symbolic import takes row-major arguments; a call with a transposed one is
    compiled from the FX graph at its size and strides."""
    fn = lambda x: (x * 2).softmax(-1)  # noqa: E731
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for x in (torch.randn(5, 6), torch.randn(7, 6), torch.randn(6, 9).t(), torch.randn(9, 6)):
        actual = compiled(x)
        torch.testing.assert_close(actual, fn(x))
        assert actual.stride() == fn(x).stride()
    assert mlirc.stats().symbolic_imports == 1


def test_no_new_guards_refuses_to_pin_a_size():
    """Inside no_new_guards, a question only a guard would answer raises; one the
    size's known range answers (Dynamo's 0/1 specialization: s0 >= 2) does not."""
    seen = {}

    def backend(gm, example_inputs):
        size = next(x for x in example_inputs if isinstance(x, torch.SymInt))
        env = size.node.shape_env
        guards = len(env.guards)
        with dynamic.no_new_guards(example_inputs):
            seen["range"] = bool(size >= 2)
            with pytest.raises(dynamic.SizeWouldSpecialize):
                int(size)
            with pytest.raises(dynamic.SizeWouldSpecialize):
                bool(size == 5)
        seen["new_guards"] = len(env.guards) - guards
        return gm

    torch.compile(lambda x: x + 1, backend=backend, dynamic=True)(torch.randn(5, 3))
    assert seen == {"range": True, "new_guards": 0}


def test_size_arithmetic_and_results_of_symbolic_size():
    """Sizes Dynamo computes (s0*s1, s0//2 + 1) reach the sized ops, and results of
    symbolic size have eager's strides."""

    def fn(x, y):
        flat = x.reshape(x.shape[0] * x.shape[1], -1)
        return F.pad(flat, (0, 1)) @ y, x.sum((1, 2)) / x.shape[2]

    counters.clear()
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for a, b in ((3, 4), (5, 2), (2, 9)):
        x, y = torch.randn(a, b, 6), torch.randn(7, 3)
        for actual, expected in zip(compiled(x, y), fn(x, y), strict=True):
            torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
            assert actual.stride() == expected.stride()
    assert mlirc.stats().symbolic_imports == counters["stats"]["unique_graphs"], mlirc.stats().summary()


def test_results_whose_strides_dynamo_keeps_as_constant_symbols():
    """With dynamic=True a static graph's result can have strides that are SymInts of
    constant value (an embedding of an expanded table); they are still its static
    layout, and the other results keep eager's strides (fuzzer graph 34000304000617:
    an expanded result came back with its buffer's shape)."""

    def graph(table, unused, index):
        looked_up = F.embedding(index, table)
        kept = torch.where(table > 0, table, table)
        index.masked_fill(index > 1, -1)
        looked_up.narrow(1, 0, 1)
        return kept.unsqueeze(0).expand([3, 2, 127]), looked_up

    compiled = torch.compile(graph, backend="mlirc", dynamic=True)
    unused = torch.randint(-9, 9, (17, 2), dtype=torch.int32)
    for n in (2, 1):
        table, index = torch.randn(n, 127).as_strided([n, 127], [0, 1]), torch.zeros(n, 1, dtype=torch.long)
        for actual, expected in zip(compiled(table, unused, index), graph(table, unused, index), strict=True):
            torch.testing.assert_close(actual, expected)
            assert actual.stride() == expected.stride()


def test_a_size_as_a_fill_value_keeps_eagers_overflow_error():
    """Whether a size fits the fill's dtype is known per call: such a graph is
    specialized per size, where eager's error is raised for a size that overflows."""
    fn = lambda x: x.to(torch.int8).masked_fill(x > 0, x.shape[0])  # noqa: E731
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for n in (5, 7):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), fn(x))
    with pytest.raises(RuntimeError, match="overflow"):
        compiled(torch.randn(300))


def test_variance_over_a_count_that_may_be_small():
    """A derived count (s0 // 2) can be 1 where correction is 2: eager's divisor is
    max(N - correction, 0), so the variance is NaN, not -0."""
    fn = lambda x: torch.var(x.view(-1, 2).sum(1), correction=2)  # noqa: E731
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for n in (8, 12, 2):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), fn(x), equal_nan=True)


def test_a_static_transposed_argument_beside_a_symbolic_one():
    """Only arguments of symbolic layout must be row-major: a transposed weight of
    static size is imported in its own layout, beside a batch of symbolic size."""
    fn = lambda x, w: torch.relu(x @ w)  # noqa: E731
    compiled = torch.compile(fn, backend="mlirc")
    w = torch.randn(5, 8).t()
    for n in (3, 7, 12):
        x = torch.randn(n, 8)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x, w), fn(x, w))
    stats = mlirc.stats()
    assert stats.symbolic_imports == 1 and stats.symbolic_sizes == 3, stats.summary()


def _bound_at_every_size(fn, calls, dynamic=True, marks=()) -> None:
    torch._dynamo.reset()
    mlirc.reset_stats()
    counters.clear()
    compiled = torch.compile(fn, backend="mlirc", dynamic=dynamic)
    with torch.no_grad():
        for args in calls:
            for i, d in marks:
                torch._dynamo.mark_dynamic(args[i], d)
            torch.testing.assert_close(compiled(*args), fn(*args), rtol=1e-5, atol=1e-5)
    stats = mlirc.stats()
    graphs = counters["stats"]["unique_graphs"]
    assert stats.symbolic_imports == stats.symbolic_lowered == graphs, stats.summary()
    assert stats.symbolic_sizes == len(calls) and stats.fallback_nodes == 0, stats.summary()


def test_linalg_on_symbolic_sizes_from_a_review(monkeypatch):
    """Cases a review found taking the per-size path or failing to bind: a convolution
    whose weight is a graph argument (its window size is known only once the weight
    is bound), a concatenation along a symbolic dim, a padded convolution and a max
    pool with only the batch symbolic, and generated convolutions (MLIRC_LIBRARY_GEMM=0:
    the second linalg run takes the compile's pass options)."""
    conv = lambda x, w: (F.conv2d(x, w, padding=1) + 1).sum((2, 3))  # noqa: E731
    _bound_at_every_size(conv, [(torch.randn(2, 3, h, 30), torch.randn(4, 3, 3, 3)) for h in (8, 9, 10)])
    cat = lambda x, y: torch.cat([x, y], 0).softmax(-1)  # noqa: E731
    _bound_at_every_size(cat, [(torch.randn(n, 5), torch.randn(n + 1, 5)) for n in (3, 4, 6)])
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.MaxPool2d(2)).eval()
    _bound_at_every_size(net, [(torch.randn(b, 3, 8, 8),) for b in (2, 3, 5)], dynamic=None, marks=[(0, 0)])
    monkeypatch.setattr(config, "library_gemm", False)
    _bound_at_every_size(net, [(torch.randn(2, 3, h, 7),) for h in (9, 6, 12)])


def test_a_long_chain_of_deferred_ops_binds():
    """80 sums over a symbolic dim, each feeding the next through a linalg op: binding
    reads each deferred op's operand shape off the ops that make it, so the chain
    takes static types in one sweep (one canonicalization round per link took 80
    rounds, past the binding's limit)."""
    from mlir import ir

    from mlirc.dialects import make_context
    from mlirc.passes.base.registry import run_passes

    lines = ["func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.entry} {"]
    value = "%x"
    for i in range(80):
        lines.append(
            f'  %s{i} = "mlirc.reduce_sum"({value}) {{dims = array<i64: 1>, keepdim = true}}'
            " : (tensor<?x?xf32>) -> tensor<?x1xf32>"
        )
        # the difference's rows are counted from the sum's (dialects/dims.py): a chain of sizes
        lines.append(f'  %a{i} = "mlirc.sub"(%s{i}, {value}) : (tensor<?x1xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>')
        value = f"%a{i}"
    lines += [f"  return {value} : tensor<?x?xf32>", "}"]
    context = make_context()
    module = ir.Module.parse("\n".join(lines), context)
    with context:
        run_passes(module, ["mlirc-stage-linalg"])
        assert '"mlirc.reduce_sum"' in str(module)  # deferred: their split depends on the length
        run_passes(module, ["mlirc-bind-sizes{sizes=3,5000}", "mlirc-stage-linalg"])
    text = str(module)
    assert "?" not in text and '"mlirc.' not in text
    assert "x512xf32>" in text  # each 5000-long sum split into chunks of 512


def test_symbolic_library_calls_outlined_then_bound():
    """GEMMs of symbolic shape (beside a static one, and one reading another) are
    outlined at once; bound, the calls and the library kernels' bodies are static."""
    from mlir import ir

    from mlirc.dialects import make_context
    from mlirc.passes.base.registry import run_passes

    text = """
    func.func @main(%a: tensor<?x16xf32>, %b: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<?x8xf32>
        attributes {mlirc.entry} {
      %0 = "mlirc.matmul"(%a, %b) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
      %1 = "mlirc.matmul"(%c, %c) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %2 = "mlirc.matmul"(%0, %1) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
      return %2 : tensor<?x8xf32>
    }"""
    context = make_context()
    module = ir.Module.parse(text, context)
    with context:
        run_passes(module, ["mlirc-stage-linalg"])
        text = str(module)
        assert "mlirc.deferred" not in text and text.count('mlirc.library = "mm"') == 3
        assert "call @library_2(%0, %1) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>" in text
        run_passes(module, ["mlirc-bind-sizes{sizes=5}", "mlirc-stage-linalg"])
    text = str(module)
    assert "?" not in text and '"mlirc.' not in text and text.count("linalg.matmul") == 3
    assert "call @library_2(%0, %1) : (tensor<5x8xf32>, tensor<8x8xf32>) -> tensor<5x8xf32>" in text


@pytest.mark.parametrize(
    "name, fn, imports",
    [
        ("tail", lambda x: x[2:].sin(), True),
        ("strided", lambda x: x[1::2] * 2, True),
        ("whole_rows_then_columns", lambda x: x[:, 1:5].exp(), True),
        ("from_the_end", lambda x: x[-2:] + 1, False),  # the offset is s0 - 2: per size
    ],
)
def test_slices_along_a_symbolic_dim(name, fn, imports):
    """aten.slice on a symbolic dim at a static offset imports once (a whole-dim one,
    which x[:, 1:5] starts with, keeps the dim as its source's); from the end, the
    offset is symbolic and the graph is specialized per size."""
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for n in (3, 4, 7, 17):
        x = torch.randn(n, 8)
        torch.testing.assert_close(compiled(x), fn(x))
    stats = mlirc.stats()
    assert (stats.symbolic_imports > 0) == imports and stats.symbolic_bind_failures == 0, stats.summary()
    assert stats.fallback_nodes == 0, stats.summary()
