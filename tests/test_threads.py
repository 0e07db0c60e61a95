"""Kernels big enough to run on OpenMP threads (mlirc-cpu-parallelize/-omp-dispatch):
the same answers for every thread count, including counts that do not divide the
loop's trips and more threads than trips; torch.set_num_threads is honoured."""

import copy
import re

import pytest
import torch
from conftest import compile_and_compare

import mlirc


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_elementwise_and_reductions_any_thread_count(threads, count):
    threads(count)
    x = torch.randn(301, 517)  # prime-ish rows: uneven chunks
    b = torch.randn(517)
    compile_and_compare(lambda x, b: (torch.relu(x + b) * 2, x.sum(-1), torch.softmax(x, -1)), x, b)


def test_more_threads_than_rows(threads):
    threads(8)
    x = torch.randn(3, 40000)
    compile_and_compare(lambda x: (torch.exp(x), x.amax(-1, keepdim=True)), x)


def _dumped_llvm_ir(monkeypatch, folder, run) -> list[str]:
    """The kernels' LLVM IR (as MLIRC_DUMP_DIR writes it) of what `run()` compiles."""
    from mlirc.config import config

    monkeypatch.setattr(config, "dump_dir", str(folder))
    torch._dynamo.reset()
    run()
    return [p.read_text() for p in folder.glob("*.llvm.ll")]


def test_kernels_are_dispatched_to_openmp(monkeypatch, tmp_path):
    def llvm_ir(fn, x, folder):
        return _dumped_llvm_ir(monkeypatch, tmp_path / folder, lambda: compile_and_compare(fn, x))

    big = llvm_ir(lambda x: torch.tanh(x) + x.sum(-1, keepdim=True), torch.randn(512, 1024), "big")
    assert any("GOMP_parallel" in text for text in big), "no kernel was dispatched to threads"
    small = llvm_ir(lambda x: torch.tanh(x) + 1, torch.randn(4, 8), "small")
    assert small and not any("GOMP_parallel" in text for text in small), "a tiny kernel paid for a fork/join"
    assert mlirc.stats().fallback_nodes == 0


@pytest.mark.parametrize("count", [1, 3])
def test_rows_then_their_sums_run_each_loop_on_threads(threads, monkeypatch, tmp_path, count):
    """A kernel of two loops (a loss backward's rows, then their sums, which read every
    element the first wrote) runs both in one parallel region, a barrier between them."""
    threads(count)

    def loss_rows(target, keep, scale, total):
        onehot = torch.arange(1000) == target[:, None]
        rows = torch.where(keep[:, None] & onehot, -(scale / total), 0.0)
        return rows * torch.arange(1000.0), (rows * torch.arange(1000.0)).sum(-1)

    args = (torch.randint(0, 1000, (251,)), torch.rand(251) > 0.2, torch.tensor(2.5), torch.tensor(7.0))
    texts = _dumped_llvm_ir(monkeypatch, tmp_path, lambda: compile_and_compare(loss_rows, *args))
    assert any("_part0_chunk" in t and "_part1_chunk" in t and "GOMP_barrier" in t for t in texts), (
        "the two loops did not share one parallel region"
    )


@pytest.mark.parametrize("count", [1, 3])
def test_rows_of_a_shifted_slice_run_on_threads(threads, monkeypatch, tmp_path, count):
    """A language model's loss reads logits[:, :-1] as rows: each row is cut from the
    slice (mlirc-cpu-fuse-rows), not from a copy of it made before the loop."""
    threads(count)
    logits = torch.randn(3, 65, 1001)

    def shifted_log_softmax(logits):
        return torch.log_softmax(logits[:, :-1].reshape(-1, 1001), -1)

    texts = _dumped_llvm_ir(monkeypatch, tmp_path, lambda: compile_and_compare(shifted_log_softmax, logits))
    assert any("GOMP_parallel" in t for t in texts), "the row loop stayed serial"


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_batch_norm_training_merged_with_large_kernels(threads, monkeypatch, tmp_path, count):
    """With MLIRC_MERGE_LARGE, a training batch norm's statistics, running-stat
    updates and normalization (and their backward) are one kernel per direction
    whose large loops still run on threads, what they pass each other in host
    buffers.  Odd sizes (rows that no thread count divides), fresh inputs every
    step, eager's values, gradients and running statistics."""
    from mlirc.config import config

    monkeypatch.setattr(config, "merge_large", True)
    threads(count)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.BatchNorm2d(24), torch.nn.ReLU())
    models = {"eager": model, "mlirc": copy.deepcopy(model)}
    compiled = torch.compile(models["mlirc"], backend="mlirc")
    batches = [torch.randn(3, 24, 33, 29).to(memory_format=torch.channels_last) for _ in range(3)]
    results: dict[str, list] = {"eager": [], "mlirc": []}

    def train():
        for x in batches:
            for backend, fn in (("eager", models["eager"]), ("mlirc", compiled)):
                leaf = x.clone().requires_grad_()
                y = fn(leaf)
                (y * torch.arange(y.numel()).reshape(y.shape).sin()).sum().backward()
                results[backend].append((y.detach(), leaf.grad))

    texts = _dumped_llvm_ir(monkeypatch, tmp_path, train)
    for (y, g), (want_y, want_g) in zip(results["mlirc"], results["eager"], strict=True):
        torch.testing.assert_close(y, want_y, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(g, want_g, rtol=1e-4, atol=1e-5)
    for got, want in zip(models["mlirc"].state_dict().values(), models["eager"].state_dict().values(), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for p, q in zip(models["mlirc"].parameters(), models["eager"].parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    merged = [t for t in texts if re.search(r"merged_\d+_part1_chunk", t)]
    assert len(merged) == 2, "forward and backward do not each merge several threaded loops into one kernel"
    assert mlirc.stats().fallback_nodes == 0


def test_optimizer_update_with_bias_corrections_runs_on_threads(threads, monkeypatch, tmp_path):
    """Adam's bias corrections are computed once per call before the update's loop
    (mlirc-cpu-hoist-invariant-scalars); each chunk recomputes them, and the loop
    still runs on threads."""
    threads(3)
    torch.manual_seed(0)
    weights = [torch.randn(301, 517), torch.randn(517)]
    params = {backend: [torch.nn.Parameter(w.clone()) for w in weights] for backend in ("eager", "mlirc")}
    grads = [[torch.randn_like(w) for w in weights] for _ in range(3)]
    optimizers = {b: torch.optim.AdamW(p, lr=1e-2, foreach=True) for b, p in params.items()}
    steps = {"eager": optimizers["eager"].step, "mlirc": torch.compile(optimizers["mlirc"].step, backend="mlirc")}

    def train():
        for step_grads in grads:
            for backend, ps in params.items():
                for p, g in zip(ps, step_grads, strict=True):
                    p.grad = g.clone()
                steps[backend]()

    texts = _dumped_llvm_ir(monkeypatch, tmp_path, train)
    for got, want in zip(params["mlirc"], params["eager"], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    updates = [t for t in texts if "llvm.pow.f32" in t]
    assert updates and all("GOMP_parallel" in t for t in updates), "the update kernels stayed serial"


@pytest.mark.parametrize("count", [1, 3])
def test_scalar_kernels_on_threads(threads, count):
    # Pooling (with its padding gather), argmax and a gather stay scalar but are split
    # over their outer dim with their inits: still exact with any thread count.
    threads(count)
    x = torch.randn(5, 16, 33, 35)
    idx = torch.randint(0, 33, (5, 16, 20, 35))

    def fn(x, idx):
        pooled = torch.nn.functional.max_pool2d(x, 3, 2, padding=1)
        return pooled, x.argmax(1), torch.gather(x, 2, idx)

    compile_and_compare(fn, x, idx)


@pytest.mark.parametrize("count", [2, 5])
def test_short_outer_loops_merge_for_threads(threads, count):
    """Attention's head split (3 x 4 x 4 x 128 x 64, bert's QKV bias): the 3-trip
    outer loop merges with the parallel loops inside it (mlirc-cpu-parallelize), so
    chunks split the merged index; every element must still land in its place."""
    threads(count)
    x, b = torch.randn(512, 768), torch.randn(768)

    def heads(x, b):
        return (x + b).view(4, 128, 3, 4, 64).permute(2, 0, 3, 1, 4).contiguous()

    compile_and_compare(heads, x, b)
    compile_and_compare(lambda x: torch.tanh(x).view(3, 7, 11, 520).sum(-1), torch.randn(3, 77, 520))
