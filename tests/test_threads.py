"""Kernels big enough to run on OpenMP threads (mlirc-cpu-parallelize/-omp-dispatch):
the same answers for every thread count, including counts that do not divide the
loop's trips and more threads than trips; torch.set_num_threads is honoured."""

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


def test_kernels_are_dispatched_to_openmp(monkeypatch, tmp_path):
    from mlirc.config import config

    def llvm_ir(fn, x, folder):  # the kernels' LLVM IR, as MLIRC_DUMP_DIR writes it
        monkeypatch.setattr(config, "dump_dir", str(tmp_path / folder))
        torch._dynamo.reset()
        compile_and_compare(fn, x)
        return [p.read_text() for p in (tmp_path / folder).glob("*.llvm.ll")]

    big = llvm_ir(lambda x: torch.tanh(x) + x.sum(-1, keepdim=True), torch.randn(512, 1024), "big")
    assert any("GOMP_parallel" in text for text in big), "no kernel was dispatched to threads"
    small = llvm_ir(lambda x: torch.tanh(x) + 1, torch.randn(4, 8), "small")
    assert small and not any("GOMP_parallel" in text for text in small), "a tiny kernel paid for a fork/join"
    assert mlirc.stats().fallback_nodes == 0


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
