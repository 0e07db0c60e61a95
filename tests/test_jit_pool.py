"""The CPU kernels' LLVM compile in worker processes (backends/cpu/jit_pool.py)."""

from __future__ import annotations

import warnings

import pytest
import torch
from mlir import ir

import mlirc
from mlirc.backends.cpu import codegen, jit_pool
from mlirc.config import config
from mlirc.dialects import make_context
from mlirc.errors import PipelineError


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(24, 40), torch.nn.GELU(), torch.nn.LayerNorm(40), torch.nn.Linear(40, 7), torch.nn.Softmax(-1)
    ).eval()


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two workers for every module, however small; the shard counts of each compile."""
    monkeypatch.setattr(config, "compile_workers", 2)
    monkeypatch.setattr(jit_pool, "MIN_PARALLEL_OPS", 0)
    counts: list[int] = []
    compile_objects = jit_pool.compile_objects

    def counted(texts: list[str], cpu: str, features: str) -> list[bytes]:
        counts.append(len(texts))
        return compile_objects(texts, cpu, features)

    monkeypatch.setattr(jit_pool, "compile_objects", counted)
    return counts


def test_workers_compile_what_the_process_would(workers: list[int]) -> None:
    model, x = _model(), torch.randn(13, 24)  # 13: no multiple of a vector width
    with torch.no_grad():
        mlirc.reset_stats()
        actual = torch.compile(model, backend="mlirc")(x)
        assert workers == [2], "the graph's kernels were not split over the workers"
        assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()
        torch._dynamo.reset()
        config.compile_workers = 0
        in_process = torch.compile(model, backend="mlirc")(x)
    assert workers == [2]
    torch.testing.assert_close(actual, model(x))
    assert torch.equal(actual, in_process), "the same kernels compiled apart gave other bits"


def test_a_dead_worker_is_replaced(workers: list[int]) -> None:
    jit_pool.start_workers()
    for proc in jit_pool._pool.procs:
        proc.kill()
        proc.wait()
    model, x = _model(), torch.randn(5, 24)
    with torch.no_grad():
        actual = torch.compile(model, backend="mlirc")(x)
    assert workers == [2]
    torch.testing.assert_close(actual, model(x))
    assert all(proc.poll() is None for proc in jit_pool._pool.procs)


def test_llvm_errors_name_llvmlite() -> None:
    with pytest.raises(PipelineError, match="llvmlite.*error"):
        jit_pool.compile_objects(["define void @f() { this is not IR }"], *codegen._host())
    # the worker that reported the error still serves
    (obj,) = jit_pool.compile_objects(["define void @f() {\n  ret void\n}"], *codegen._host())
    assert obj


def test_a_failed_worker_compile_falls_back_to_eager(workers: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(texts: list[str], cpu: str, features: str) -> list[bytes]:
        raise PipelineError("llvmlite", "an LLVM worker process failed: worker 1 exited with -11")

    monkeypatch.setattr(jit_pool, "compile_objects", crash)
    model, x = _model(), torch.randn(4, 24)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        actual = torch.compile(model, backend="mlirc")(x)
    torch.testing.assert_close(actual, model(x))
    assert any("llvmlite" in str(w.message) for w in caught)


SHARDED = """
llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
llvm.func @expf(f32) -> f32
llvm.func @a_chunk(%arg0: !llvm.ptr) attributes {sym_visibility = "private"} {
  llvm.return
}
llvm.func @kernel_a(%arg0: !llvm.ptr) {
  %0 = llvm.mlir.addressof @a_chunk : !llvm.ptr
  %1 = llvm.mlir.constant(0 : i32) : i32
  llvm.call @GOMP_parallel(%0, %arg0, %1, %1) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
  llvm.return
}
llvm.func @b_helper(%arg0: f32) -> f32 attributes {sym_visibility = "private"} {
  %0 = llvm.call @expf(%arg0) : (f32) -> f32
  llvm.return %0 : f32
}
llvm.func @kernel_b(%arg0: f32) -> f32 {
  %0 = llvm.call @b_helper(%arg0) : (f32) -> f32
  llvm.return %0 : f32
}
"""


def test_shards_keep_each_kernel_with_the_functions_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit_pool, "MIN_PARALLEL_OPS", 0)
    with make_context():
        module = ir.Module.parse(SHARDED)
    texts = jit_pool.shard_texts(module, 4)
    assert texts is not None and len(texts) == 2  # two kernels: two shards, not four
    defined = [
        {line.split("@")[1].split("(")[0] for line in t.splitlines() if line.startswith("define")} for t in texts
    ]
    assert sorted(map(sorted, defined)) == [["a_chunk", "kernel_a"], ["b_helper", "kernel_b"]]
    assert jit_pool.shard_texts(module, 1) is None


def test_no_workers_where_python_cannot_start(workers: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    jit_pool._pool.close()
    monkeypatch.setattr(jit_pool.sys, "executable", "/nonexistent/python")
    monkeypatch.setattr(jit_pool._pool, "unavailable", None)
    model, x = _model(), torch.randn(6, 24)
    with torch.no_grad():
        mlirc.reset_stats()
        actual = torch.compile(model, backend="mlirc")(x)
    assert jit_pool._pool.unavailable and jit_pool.worker_count() == 0
    assert mlirc.stats().fallback_nodes == 0, "the kernels should have compiled in-process"
    torch.testing.assert_close(actual, model(x))
