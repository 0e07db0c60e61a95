"""How a training step runs: mutated inputs written in place, saved
activations not copied, the min-cut partition, weights that change every step not
packed, and one-hot scatters (a loss's backward) compiled at any size."""

from __future__ import annotations

import copy
import gc
import glob
import re
import time

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import mlirc
from mlirc.backends.cpu import packed_weights
from mlirc.config import config


def _wrappers(tmp_path) -> list[str]:
    return [open(p).read() for p in sorted(glob.glob(f"{tmp_path}/*.wrapper.py"))]


@pytest.fixture
def dumped(tmp_path):
    config.dump_dir = str(tmp_path)
    torch._dynamo.reset()
    yield tmp_path
    config.dump_dir = None
    torch._dynamo.reset()


def _mutations():
    def doubled_then_read(x, y):
        x.mul_(2)
        return x.sum() + y

    def flipped_over_itself(x, y):  # reads x elsewhere than it writes: never in place
        before = x + 1
        x.copy_(x.flip(0))
        return before

    def second_reads_first(x, y):
        x.add_(y)
        y.mul_(x)
        return x - y

    def old_value_read_after(x, y):
        old = x * 3
        x.sub_(y)
        return old + x

    def transposed_update(x, y):
        x.copy_(x.t() * 2 + y)  # square x, read transposed
        return y

    return [doubled_then_read, flipped_over_itself, second_reads_first, old_value_read_after, transposed_update]


@pytest.mark.parametrize("fn", _mutations(), ids=lambda f: f.__name__)
@pytest.mark.parametrize("contiguous", [True, False])
def test_mutated_inputs_are_eagers(fn, contiguous):
    """Every mutation pattern ends with eager's inputs and results, whether the new
    value is written over the input (elementwise, last read) or copied back."""
    base_x, base_y = torch.randn(13, 13), torch.randn(13, 13)
    if not contiguous:
        base_x, base_y = torch.randn(13, 26)[:, ::2], torch.randn(13, 13).t()
    eager_x, eager_y = base_x.clone(), base_y.clone()
    x, y = base_x.clone(), base_y.clone()
    if not contiguous:
        x, y = torch.randn(13, 26)[:, ::2].copy_(base_x), torch.randn(13, 13).t().copy_(base_y)
    expected = fn(eager_x, eager_y)
    with torch.no_grad():
        actual = torch.compile(fn, backend="mlirc")(x, y)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(x, eager_x)
    torch.testing.assert_close(y, eager_y)
    assert mlirc.stats().fallback_nodes == 0


def test_optimizer_step_writes_parameters_in_place(dumped):
    """SGD with momentum: each parameter's kernel (the new momentum, returned, and the
    update that reads it: mlirc-fuse-multi-output) writes over both (no result copied
    back), and the parameters keep their storage.  The four are small: one kernel runs
    them all (mlirc-cpu-merge-small-kernels), each still writing in place."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(31, 17), nn.Tanh(), nn.Linear(17, 3))
    twin = copy.deepcopy(model)
    eager = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    compiled = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    step = torch.compile(compiled.step, backend="mlirc")
    storage = [p.data_ptr() for p in twin.parameters()]
    for _ in range(3):
        x = torch.randn(8, 31)
        for m, opt, run in ((model, eager, eager.step), (twin, compiled, step)):
            opt.zero_grad()
            m(x).square().mean().backward()
            run()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(compiled.state[q]["momentum_buffer"], eager.state[p]["momentum_buffer"])
    assert [p.data_ptr() for p in twin.parameters()] == storage
    steady = _wrappers(dumped)[-1]
    # 4 parameters, 4 momentum buffers, each written over under a second name
    assert len(re.findall(r"^ +buf\d+ = arg\d+$", steady, re.M)) == 8, steady
    assert steady.count("kernels[") == 1, steady
    assert "empty_strided" not in steady, steady


def _copies_in(fn) -> int:
    """aten::copy_ calls while `fn` runs (a copy of a tensor onto itself included)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name == "aten::copy_")


@pytest.mark.parametrize("channels_last", [False, True])
def test_mutated_inputs_are_written_by_the_graph(channels_last):
    """AOTAutograd keeps input mutations in the graph (keep_inference_input_mutations):
    batch norm's running statistics, SGD's parameters and momentum buffers are
    written by the kernels that make them, with no copy back per tensor and call;
    a non-contiguous parameter (channels-last) is copied back by mlirc, not lost."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 5, 3), nn.BatchNorm2d(5), nn.ReLU(), nn.Flatten(), nn.Linear(5 * 5 * 5, 3))
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    twin = copy.deepcopy(model)
    eager = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    compiled = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    forward, step = torch.compile(twin, backend="mlirc"), torch.compile(compiled.step, backend="mlirc")
    copies = []
    for i in range(4):
        x = torch.randn(2, 3, 7, 7)
        for m, opt, run in ((model, eager, eager.step), (forward, compiled, step)):
            opt.zero_grad()
            m(x).square().mean().backward()
            if m is forward and i == 3:
                copies.append(_copies_in(run))
                copies.append(_copies_in(lambda m=m, x=x: m(x)))
            else:
                run()
                if m is model and i == 3:
                    m(x)  # the twin's profiled forward updated its statistics once more
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(compiled.state[q]["momentum_buffer"], eager.state[p]["momentum_buffer"])
    for a, b in zip(model.buffers(), twin.buffers(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    assert mlirc.stats().fallback_nodes == 0
    # channels-last: the conv weight and its momentum buffer, computed contiguous,
    # are copied into their own strides
    assert copies == ([2, 0] if channels_last else [0, 0])


@pytest.mark.parametrize("channels_last", [False, True])
def test_weight_edited_before_backward_raises_eagers_error(channels_last):
    """A saved weight is returned as a view of the argument (sharing its version
    counter), never as a fresh alias, or as its channels-last copy, which the backward
    checks against the weight's version: editing it in place between forward and
    backward raises autograd's error, as in eager, not a gradient from the new value."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 5, 3), nn.ReLU())
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    compiled = torch.compile(model, backend="mlirc")
    compiled(torch.randn(2, 3, 7, 7)).sum().backward()
    loss = compiled(torch.randn(2, 3, 7, 7)).sum()
    with torch.no_grad():
        model[0].weight.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_saved_activations_are_not_copied(dumped):
    """The forward returns the inputs the backward reads as they are."""
    torch.manual_seed(0)
    layer = nn.Linear(64, 32)
    x = torch.randn(8, 64, requires_grad=True)
    compiled = torch.compile(lambda x: torch.relu(layer(x)).sum(), backend="mlirc")
    compiled(x).backward()
    grads = x.grad.clone(), layer.weight.grad.clone()
    x.grad, layer.weight.grad = None, None
    torch.relu(layer(x)).sum().backward()
    torch.testing.assert_close(grads[0], x.grad)
    torch.testing.assert_close(grads[1], layer.weight.grad)
    forward = _wrappers(dumped)[0]
    returned = forward.splitlines()[-1]
    # the loss, then what the backward reads: x and the weight themselves, relu's mask
    assert returned.startswith("    return (buf") and returned.count("arg") == 2, forward
    # bias + relu, the sum, the mask: one kernel (all three are small), no copies
    assert forward.count("kernels[") == 1 and ".copy_(" not in forward, forward


def test_min_cut_recomputes_pointwise_chains():
    """A pointwise chain's intermediates are recomputed in the backward, not saved:
    what the forward saves is no larger than its input."""
    saved: list[int] = []

    def pack(t):
        saved.append(t.numel() * t.element_size())
        return t

    x = torch.randn(256, 257, requires_grad=True)
    compiled = torch.compile(lambda x: x.sin().cos().tanh().exp().sum(), backend="mlirc")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = compiled(x)
    out.backward()
    assert sum(saved) <= x.numel() * x.element_size(), saved
    expected = torch.autograd.grad(x.sin().cos().tanh().exp().sum(), x)[0]
    torch.testing.assert_close(x.grad, expected)


class _CountingSite(packed_weights._PackedSite):
    def __init__(self) -> None:
        super().__init__()
        self.packs = 0

    def get(self, w: torch.Tensor) -> object:
        def pack() -> int:
            self.packs += 1
            return self.packs

        return self.packed(w, w, (4,), pack)


def test_a_weight_edited_every_call_is_not_packed():
    """Two calls in a row after in-place edits: the site stops reordering the weight
    (an optimizer trains it); once the edits stop, it packs again."""
    site, w = _CountingSite(), torch.randn(8, 8)
    assert site.get(w) == 1 and site.get(w) == 1  # packed once, reused
    w.add_(1)
    assert site.get(w) == 2  # one edit: packed again
    w.add_(1)
    assert site.get(w) is None  # edited before this call and the one before: unpacked
    w.add_(1)
    assert site.get(w) is None
    assert site.get(w) == 3  # unchanged since the last call: packed again
    assert site.get(w) == 3


@pytest.mark.skipif(not packed_weights.linear_available(), reason="MKL's packed GEMM")
def test_linear_layer_training_matches_eager_unpacked():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(40, 96), nn.ReLU(), nn.Linear(96, 5))
    twin = copy.deepcopy(model)
    eager, compiled = (torch.optim.SGD(m.parameters(), lr=0.05) for m in (model, twin))
    forward = torch.compile(lambda x, y: F.cross_entropy(twin(x), y), backend="mlirc")
    for _ in range(5):
        x, y = torch.randn(64, 40), torch.randint(0, 5, (64,))
        for loss, opt in ((F.cross_entropy(model(x), y), eager), (forward(x, y), compiled)):
            opt.zero_grad()
            loss.backward()
            opt.step()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows, classes", [(1, 7), (37, 4099), (2048, 5000)])
def test_cross_entropy_backward_one_hot_compiles_at_any_size(rows, classes):
    """nll_loss's backward scatters one value per row: a select over the logits,
    compiled whatever the number of classes (the dense match limit counts updates
    per target row)."""
    x = torch.randn(rows, classes, requires_grad=True)
    y = torch.randint(0, classes, (rows,))
    compiled = torch.compile(lambda x, y: F.cross_entropy(x, y), backend="mlirc")
    (got,) = torch.autograd.grad(compiled(x, y), x)
    (want,) = torch.autograd.grad(F.cross_entropy(x, y), x)
    torch.testing.assert_close(got, want)
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_backward_compiles_at_any_vocabulary(padding_idx):
    """A language model's embedding gradient (index_put accumulating one row per
    token, far past the dense match's size) is a scatter loop, with eager's sums."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(5003, 48, padding_idx=padding_idx)
    tokens = torch.randint(0, 5003, (6, 97))
    tokens[:, :9] = 3  # a token repeated (and the padding one, where set)

    def loss(weight, tokens):
        return F.embedding(tokens, weight, padding_idx=padding_idx).tanh().square().mean()

    (want,) = torch.autograd.grad(loss(emb.weight, tokens), emb.weight)
    (got,) = torch.autograd.grad(torch.compile(loss, backend="mlirc")(emb.weight, tokens), emb.weight)
    torch.testing.assert_close(got, want)
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


def test_many_updates_per_row():
    """Where the dense match would cost 100x the scatter's own traffic, a sum is a
    scatter loop (mlirc.scatter_add) and any other fold stays eager."""
    x, index, src = torch.randn(3000, 3000), torch.randint(0, 3000, (3000, 100)), torch.randn(3000, 100)
    out = torch.compile(lambda x, i, s: x.scatter_add(1, i, s), backend="mlirc")(x, index, src)
    torch.testing.assert_close(out, x.scatter_add(1, index, src))
    assert mlirc.stats().fallback_nodes == 0
    torch._dynamo.reset()
    out = torch.compile(lambda x, i, s: x.scatter_reduce(1, i, s, "amax"), backend="mlirc")(x, index, src)
    torch.testing.assert_close(out, x.scatter_reduce(1, index, src, "amax"))
    assert mlirc.stats().fallback_nodes == 1


@pytest.mark.parametrize(
    "fn",
    [
        lambda xs, ys: torch._foreach_norm(xs, 3),
        lambda xs, ys: torch._foreach_pow(2.0, xs),  # a scalar base, tensor exponents
        lambda xs, ys: torch._foreach_lerp(xs, ys, 0.3),
        lambda xs, ys: torch._foreach_add(xs, [1.0, -2.5, 4.0]),  # a scalar per tensor
        lambda xs, ys: torch._foreach_addcdiv(xs, ys, xs, 0.5),  # `value` by position
        lambda xs, ys: torch._foreach_maximum(xs, ys),
        lambda xs, ys: torch._foreach_sqrt(xs),  # NaN for negatives, as eager
    ],
    ids=["norm", "pow_scalar_base", "lerp", "add_scalar_list", "addcdiv", "maximum", "sqrt"],
)
def test_foreach_ops_are_eagers(fn):
    xs = [torch.randn(5, 3), torch.randn(7, 4).t(), torch.randn(0, 2)]  # non-contiguous, empty
    ys = [torch.randn(5, 3), torch.randn(4, 7), torch.randn(0, 2)]
    for got, want in zip(torch.compile(fn, backend="mlirc")(xs, ys), fn(xs, ys), strict=True):
        torch.testing.assert_close(got, want, equal_nan=True)
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


def test_train_bench_runs_a_model_with_no_fallback():
    """benchmarks/train_bench.py's measurement on its MLP (a few steps): a step time
    per backend, mlirc's curve within float32 rounding of eager's, nothing eager."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import train_bench

    row = train_bench.measure("mlp", "cpu", steps=4, backends=["eager", "mlirc"])
    assert row["mlirc"]["fallback_nodes"] == 0 and row["mlirc"]["failed_regions"] == 0, row
    assert row["mlirc"]["loss_rel_diff"] < 1e-5 and row["eager_noise"] < 1e-5, row
    assert row["mlirc"]["ms"] > 0 and row["eager"]["ms"] > 0
    assert "| mlp |" in train_bench.table([row], ["eager", "mlirc"])


def test_zoo_model_trains_as_eager_does():
    """A zoo model (benchmarks/train_zoo.py: transformers' ELECTRA-small, its dropout off
    in the config, a 10-class head on the first token) trained 3 AdamW steps: losses
    within 1e-4 of eager's, nothing eager."""
    pytest.importorskip("transformers")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import train_bench

    row = train_bench.measure("zoo:electra_small", "cpu", steps=3, backends=["eager", "mlirc"])
    assert row["mlirc"]["fallback_nodes"] == 0 and row["mlirc"]["failed_regions"] == 0, row
    assert row["eager_noise"] < 1e-5 and row["mlirc"]["loss_rel_diff"] < 1e-4, row


def test_cnn_training_curve_matches_eager_in_float32():
    """The training benchmark's CNN (batch norms at batch 8, ReLUs, SGD with momentum),
    50 float32 steps: every loss within 1e-4 of eager's, nothing eager.  Its blocks start
    at the identity (zero_init_residual), where rounding alone stays near 1e-6."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import train_bench

    row = train_bench.measure("resnet", "cpu", steps=50, backends=["eager", "mlirc"])
    assert row["mlirc"]["fallback_nodes"] == 0 and row["mlirc"]["failed_regions"] == 0, row
    assert row["eager_noise"] < 1e-5 and row["mlirc"]["loss_rel_diff"] < 1e-4, row


def test_cnn_training_curve_matches_eager_in_float64():
    """The benchmark's CNN from PyTorch's default init (no zero_init_residual) carries
    a 1e-7 nudge of its weights to 1e-1 of the loss within 50 float32 steps, so there
    its float32 curve cannot show a wrong gradient.  In float64 rounding starts at 1e-16
    and the compiled curve must stay on eager's: a wrong term of any gradient moves it
    by far more than 1e-9 within a few steps."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import train_bench

    _, batches_for, make_optimizer = train_bench.CASES["resnet"]
    torch.manual_seed(0)
    model = train_bench.WithLoss(train_bench.ResNet(widths=(16, 32, 64, 128), classes=10), F.cross_entropy).double()
    eager = train_bench.Trainer("eager", model, make_optimizer)
    compiled = train_bench.Trainer("mlirc", model, make_optimizer)
    for _ in range(6):
        batch = tuple(t.double() if t.is_floating_point() else t for t in batches_for["cpu"]())
        want, got = eager.step(*batch), compiled.step(*batch)
        torch.testing.assert_close(got, want, rtol=1e-9, atol=0)
    stats = mlirc.stats()
    assert stats.failed_regions == 0 and stats.fallback_nodes == 0, stats.summary()


def _gradient_distance(a: nn.Module, b: nn.Module) -> float:
    return torch.cat([(p.grad - q.grad).flatten() for p, q in zip(a.parameters(), b.parameters(), strict=True)]).norm()


def _autocast_steps(case: str, device: str, steps: int = 3) -> None:
    """The training benchmark's model, forward under bf16 autocast (weights, gradients
    and the optimizer float32), trained by eager and by mlirc side by side.  Each loss
    is within bf16's rounding of eager's.  The first step's gradients are at most about
    as far from float32's as eager's are.  (Not compared with eager's: the CNN's batch
    norms at batch 8 make bf16's rounding move its gradients by a third, and mlirc
    rounds where each op ends, so a fused chain's or a library call's rounding points
    differ from eager's, as Inductor's do.)  Nothing runs eagerly."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import train_bench

    make_model, batches_for, make_optimizer = train_bench.CASES[case]
    torch.manual_seed(0)
    model = make_model().to(device)
    full = train_bench.Trainer("eager", model, make_optimizer)
    eager = train_bench.Trainer("eager", model, make_optimizer, autocast=torch.bfloat16)
    compiled = train_bench.Trainer("mlirc", model, make_optimizer, autocast=torch.bfloat16)
    for step in range(steps):
        batch = tuple(t.to(device) for t in batches_for["cpu"]())
        losses = [eager._forward(*batch), compiled._forward(*batch)]
        assert all(loss.dtype == torch.float32 for loss in losses)
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-2, atol=1e-3)
        for loss in losses:
            loss.backward()
        if step == 0:
            full._forward(*batch).backward()
            rounding = _gradient_distance(eager.model, full.model)
            assert _gradient_distance(compiled.model, full.model) < 1.5 * rounding + 1e-6
        for trainer in (eager, compiled):
            trainer.update()
            trainer.optimizer.zero_grad(set_to_none=True)
    stats = mlirc.stats()
    assert stats.failed_regions == 0 and stats.fallback_nodes == 0, stats.summary()


@pytest.mark.parametrize("case", ["resnet", "gpt2"])
def test_autocast_bf16_training_matches_eager(case):
    _autocast_steps(case, "cpu")


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@CUDA
@pytest.mark.parametrize("case", ["mlp", "resnet", "bert", "gpt2"])
def test_cuda_training_steps_match_eager(case, monkeypatch):
    """The training benchmarks' models on the GPU, 5 steps with the optimizers' CUDA
    defaults (foreach): every loss within 1e-4 of eager's (TF32 off: cuDNN's and
    cuBLAS's rounding would differ by layout alone), nothing eager."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import train_bench

    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    make_model, batches_for, make_optimizer = train_bench.CASES[case]
    torch.manual_seed(0)
    model = make_model().cuda()
    eager = train_bench.Trainer("eager", model, make_optimizer)
    compiled = train_bench.Trainer("mlirc", model, make_optimizer)
    for _ in range(5):
        batch = tuple(t.cuda() for t in batches_for["cpu"]())
        want, got = eager.step(*batch), compiled.step(*batch)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    stats = mlirc.stats()
    assert stats.failed_regions == 0 and stats.fallback_nodes == 0, stats.summary()


@CUDA
@pytest.mark.parametrize("case", ["mlp", "resnet", "bert", "gpt2"])
def test_cuda_autocast_bf16_training_matches_eager(case):
    _autocast_steps(case, "cuda")


# A DDP rank takes ~10 s alone on 2 cores; this bounds a hung one (and the test).
RANK_LIMIT_S = 240


def _ddp_worker(rank: int, port: int, results: object) -> None:
    """One rank of a 2-process gloo group: an eager DDP model and a compiled one
    (Dynamo's DDPOptimizer splits its graph at the buckets: 1 MB, three of them here),
    trained side by side on this rank's batches; their losses go to `results`, or the
    error that stopped the rank (the test would otherwise wait for it in vain).  A rank
    still running after RANK_LIMIT_S prints every thread's stack and exits: a hang
    shows where it is instead of holding the test run."""
    import contextlib
    import faulthandler

    faulthandler.dump_traceback_later(RANK_LIMIT_S, exit=True)
    try:
        _ddp_train(rank, port, results)
    except BaseException as err:  # noqa: BLE001 - reported to the test, whatever it is
        import traceback

        with contextlib.suppress(ValueError):  # closed: the report went before the teardown failed
            results.put((rank, f"{type(err).__name__}: {err}\n{traceback.format_exc()}"))
        raise


def _rank_result(results: object, ranks: list) -> tuple:
    """The next rank's report; a rank that died without one (a crash) fails the test
    at once rather than after the time limit."""
    import queue

    deadline = time.monotonic() + RANK_LIMIT_S + 30
    while time.monotonic() < deadline:
        try:
            return results.get(timeout=5)
        except queue.Empty:
            dead = [p for p in ranks if p.exitcode not in (None, 0)]
            if dead and results.empty():
                codes = [(p.name, p.exitcode) for p in dead]
                raise AssertionError(f"a DDP rank exited without reporting: {codes}") from None
    raise AssertionError(f"no DDP rank report within {RANK_LIMIT_S + 30} s")


def _ddp_train(rank: int, port: int, results: object) -> None:
    import datetime
    import os

    import torch.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=300))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 512), nn.GELU(), nn.Linear(512, 512), nn.Tanh(), nn.Linear(512, 10))
    twin = copy.deepcopy(model)
    eager = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1)
    compiled = nn.parallel.DistributedDataParallel(torch.compile(twin, backend="mlirc"), bucket_cap_mb=1)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (eager, compiled)]
    g = torch.Generator().manual_seed(100 + rank)
    losses: list[list[float]] = [[], []]
    for _ in range(6):
        x, y = torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g)
        for m, opt, curve in zip((eager, compiled), optimizers, losses, strict=True):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            curve.append(loss.item())
    results.put((rank, losses, mlirc.stats().fallback_nodes, mlirc.stats().compiled_regions))
    results.close()
    results.join_thread()  # the report is out before the teardown, whatever that does
    # PyTorch's teardown can deadlock (a rank hung in 1 of ~100 runs, and once in CI):
    # a DDP reducer holding the last reference to the gloo group destroys it with the
    # GIL held, joining a gloo thread that waits for the GIL to drop a finished work's
    # Python thread-local state.  So the reducers go first, while the group is alive,
    # and the group is destroyed by destroy_process_group, whose binding releases the GIL.
    del eager, compiled, m, optimizers, opt
    torch._dynamo.reset()
    gc.collect()
    dist.destroy_process_group()


def test_ddp_gloo_two_processes_match_eager():
    """A compiled model inside DistributedDataParallel, 2 CPU processes over gloo:
    each rank's losses are eager DDP's, with gradients averaged across the ranks."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:  # a free port for the group's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = mp.get_context("spawn")
    results = context.Queue()
    ranks = [context.Process(target=_ddp_worker, args=(r, port, results)) for r in range(2)]
    try:
        for p in ranks:
            p.start()
        got = [_rank_result(results, ranks) for _ in ranks]
    finally:  # a rank left running would keep this process from exiting (multiprocessing joins it)
        for p in ranks:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    failed = [entry[1] for entry in got if isinstance(entry[1], str)]
    assert not failed, "\n".join(failed)
    assert sorted(r for r, *_ in got) == [0, 1]
    for _, (want, have), fallback, regions in got:
        torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-6)
        assert fallback == 0 and regions >= 3, (fallback, regions)  # a region per bucket, forward and backward


def test_backward_frees_saved_activations_as_it_reads_them(dumped):
    """The backward takes AOTAutograd's argument list and empties it (the boxed
    convention, as Inductor's): a saved activation is dropped after the last kernel
    that reads it, so the backward's peak does not hold every activation at once."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(31, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3))
    twin = copy.deepcopy(model)
    compiled = torch.compile(twin, backend="mlirc")
    x = torch.randn(8, 31)
    compiled(x).square().sum().backward()
    model(x).square().sum().backward()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-5, atol=1e-6)
    regions = sorted(dumped.glob("*.wrapper.py"), key=lambda p: int(p.name.split(".")[0].removeprefix("region")))
    backward = regions[-1].read_text()
    body = backward.split("def call_list(args):\n", 1)[1].splitlines()
    assert body[1] == "    args.clear()", backward
    deleted = [line for line in body if line.startswith("    del ") and "arg" in line]
    last_kernel = max(i for i, line in enumerate(body) if "kernels[" in line or "torch.mm" in line)
    # the saved tanh and relu outputs go before the last weight gradient's GEMM
    assert len(deleted) >= 2 and body.index(deleted[0]) < last_kernel, backward


def test_boxed_call_empties_the_list():
    """What AOTAutograd calls: the list it passes is emptied by the call."""
    from mlirc.frontend.backend import _boxed

    calls = []

    def fn(*args):
        return args

    fn.call_list = lambda args: (calls.append(len(args)), args.clear(), (1,))[-1]
    boxed = _boxed(fn)
    args = [torch.ones(2), torch.ones(3)]
    assert boxed._boxed_call and boxed(args) == (1,) and args == [] and calls == [2]


@pytest.mark.parametrize("shape", [(13, 7, 3, 3), (1, 1, 1, 1), (5, 1, 7), (2, 3, 1, 17)])
def test_weight_shaped_updates_match_eager(shape):
    """Momentum SGD on conv-weight-shaped tensors (small trailing dims): the kernel,
    two results written at once, runs as one flat loop (mlirc-cpu-flatten-elementwise);
    eager's values, and a transposed gradient keeps its own loops."""

    def step(p, g, m, gt):
        m.mul_(0.9).add_(g)
        p.add_(m, alpha=-0.01)
        return p * gt.transpose(0, -1)

    swapped = (shape[-1], *shape[1:-1], shape[0])
    args = [torch.randn(shape), torch.randn(shape), torch.randn(shape), torch.randn(swapped)]
    expected_args = [a.clone() for a in args]
    expected = step(*expected_args)
    actual = torch.compile(step, backend="mlirc")(*args)
    torch.testing.assert_close(actual, expected)
    for got, want in zip(args, expected_args, strict=True):
        torch.testing.assert_close(got, want)
    assert mlirc.stats().fallback_nodes == 0
