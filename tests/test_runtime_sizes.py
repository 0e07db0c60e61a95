"""CPU kernels of run-time sizes: one compile of a kernel with `?` dims,
called at many sizes with its sizes as arguments (passes/cpu/size_args.py).

The kernels are written as mlirc-stage-kernels leaves them (linalg on tensors,
sizes read with tensor.dim), compiled by the real mlirc-stage-cpu and called
directly through the bare-pointer convention; each size is checked against eager.
Vector loops peel a masked tail of run-time length (mlirc-cpu-vectorize), large
calls run on threads (mlirc-cpu-parallelize decides at run time)."""

from __future__ import annotations

import ctypes
import functools
import time
import warnings

import pytest
import torch
from mlir import ir
from test_symbolic_import import Block, CausalBlock, cnn
from torch._dynamo.utils import counters

import mlirc
from mlirc.backends.cpu import codegen
from mlirc.config import config
from mlirc.dialects import make_context
from mlirc.errors import PipelineError
from mlirc.frontend import hot_sizes
from mlirc.passes.base.registry import run_passes
from mlirc.passes.cpu.size_args import size_arguments
from mlirc.passes.cpu.vectorize import CpuVectorizeOptions
from mlirc.passes.pipelines import configured

MAPS = """
#m2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
#col2 = affine_map<(d0, d1) -> (d1)>
#m3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#swap = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
"""

# name -> (kernel text, eager, input shapes from the sizes (n, m, k))
KERNELS = {
    "exp": (
        """
func.func @exp(%a: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#m2, #m2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}""",
        lambda a: a.exp(),
        lambda n, m, k: [(n, m)],
    ),
    "row_sum_of_exp": (
        """
func.func @row_sum_of_exp(%a: tensor<?x?xf32>) -> tensor<?xf32> attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%d0) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#m2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<?x?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = math.exp %x : f32
    %s = arith.addf %y, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}""",
        lambda a: a.exp().sum(-1),
        lambda n, m, k: [(n, m)],
    ),
    "row_max": (
        """
func.func @row_max(%a: tensor<?x?x?xf32>) -> tensor<?x?xf32> attributes {mlirc.kernel} {
  %low = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?x?xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %f = linalg.fill ins(%low : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#m3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<?x?x?xf32>) outs(%f : tensor<?x?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}""",
        lambda a: a.amax(-1) if a.shape[-1] else torch.full(a.shape[:-1], float("-inf")),
        lambda n, m, k: [(n, k, m)],
    ),
    "softmax_exp": (
        """
func.func @softmax_exp(%a: tensor<?x?x?xf32>, %m: tensor<?x?xf32>) -> tensor<?x?x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?x?xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?x?xf32>
  %d2 = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %e = tensor.empty(%d0, %d1, %d2) : tensor<?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#m3, #row3, #m3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %m : tensor<?x?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.subf %x, %y : f32
    %z = math.exp %s : f32
    linalg.yield %z : f32
  } -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}""",
        lambda a, m: (a - m[..., None]).exp(),
        lambda n, m, k: [(k, n, m), (k, n)],
    ),
    # A linear layer's bias over rows of a static width (the width is no tail)
    "bias_rows": (
        """
func.func @bias_rows(%a: tensor<?x37xf32>, %b: tensor<37xf32>) -> tensor<?x37xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x37xf32>
  %e = tensor.empty(%d0) : tensor<?x37xf32>
  %r = linalg.generic {indexing_maps = [#m2, #col2, #m2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?x37xf32>, tensor<37xf32>) outs(%e : tensor<?x37xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %t = arith.maximumf %s, %x : f32
    linalg.yield %t : f32
  } -> tensor<?x37xf32>
  return %r : tensor<?x37xf32>
}""",
        lambda a, b: torch.maximum(a + b, a),
        lambda n, m, k: [(n * k, 37), (37,)],
    ),
    # A GEMM's rows split back into (batch, sequence): two `?` dims of one group
    "unflatten_bias": (
        """
func.func @unflatten_bias(%x: tensor<?x?x16xf32>, %a: tensor<?x48xf32>, %b: tensor<48xf32>) -> tensor<?x?x48xf32>
    attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x16xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?x16xf32>
  %u = tensor.expand_shape %a [[0, 1], [2]] output_shape [%d0, %d1, 48] : tensor<?x48xf32> into tensor<?x?x48xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x48xf32>
  %r = linalg.generic {indexing_maps = [#m3, #col3, #m3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%u, %b : tensor<?x?x48xf32>, tensor<48xf32>) outs(%e : tensor<?x?x48xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x?x48xf32>
  return %r : tensor<?x?x48xf32>
}""",
        lambda x, a, b: a.reshape(x.shape[0], x.shape[1], 48) + b,
        lambda n, m, k: [(k, n, 16), (k * n, 48), (48,)],
    ),
    # Attention's key transpose: the result's last dim is the input's middle one
    "transpose": (
        """
func.func @transpose(%a: tensor<?x?x16xf32>) -> tensor<?x16x?xf32> attributes {mlirc.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?x16xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?x16xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x16x?xf32>
  %r = linalg.generic {indexing_maps = [#swap, #m3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<?x?x16xf32>) outs(%e : tensor<?x16x?xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<?x16x?xf32>
  return %r : tensor<?x16x?xf32>
}""",
        lambda a: a.transpose(1, 2),
        lambda n, m, k: [(k, m, 16)],
    ),
}

# (n, m, k): empty rows and rows of nothing, single elements, primes around the
# vector widths (8 and 16 lanes, blocks of 32 and 64), and one large enough to run
# on threads (parallel-min-kib's 128 KiB).
SIZES = [(0, 5, 2), (3, 0, 2), (1, 1, 1), (7, 9, 3), (5, 17, 1), (2, 130, 3), (3, 64, 2), (128, 1031, 2)]


@functools.cache
def _compiled(vector_bytes: int) -> tuple[codegen.CompiledKernels, dict[str, list]]:
    """Every kernel of KERNELS in one module, through mlirc-stage-cpu once."""
    text = MAPS + 'module attributes {mlirc.target = "cpu"} {' + "".join(k for k, _, _ in KERNELS.values()) + "}"
    context = make_context()
    with context:
        module = ir.Module.parse(text)
        signatures = codegen.kernel_signatures(module)
        types = {}
        for op in module.body.operations:
            ftype = ir.FunctionType(op.attributes["function_type"].value)
            types[op.sym_name.value] = [*ftype.inputs, *ftype.results]
        stage = configured("cpu", {"mlirc-cpu-vectorize": CpuVectorizeOptions(vector_bytes=vector_bytes)})
        run_passes(module, [stage])
        codegen.check_signatures(module, signatures)
        return codegen.jit(codegen.emit_llvm(module), signatures), types


def _call(vector_bytes: int, name: str, inputs: list[torch.Tensor], out_shape: tuple[int, ...]) -> torch.Tensor:
    compiled, types = _compiled(vector_bytes)
    out = torch.full(out_shape, float("nan"))
    buffers = [*inputs, out]
    sizes = [buffers[arg].shape[dim] for arg, dim in size_arguments(types[name])]
    pointers = [ctypes.c_void_p(b.data_ptr()) for b in buffers]
    compiled.functions[name](*pointers, *sizes)
    return out


@pytest.mark.parametrize("vector_bytes", [32, 64])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_one_compile_serves_every_size(name, vector_bytes):
    _, eager, shapes = KERNELS[name]
    for n, m, k in SIZES:
        inputs = [torch.randn(shape) for shape in shapes(n, m, k)]
        expected = eager(*inputs)
        actual = _call(vector_bytes, name, inputs, tuple(expected.shape))
        torch.testing.assert_close(actual, expected.contiguous(), rtol=1e-5, atol=1e-5, msg=f"{name} at {(n, m, k)}")


@pytest.mark.parametrize("name", ["softmax_exp", "row_max", "unflatten_bias"])
def test_chunks_that_split_rows(name):
    """Three threads share 37 x 7 merged rows: chunks start and end inside a row of
    the run-time width (mlirc-cpu-parallelize runs a chunk as rows of it)."""
    _, eager, shapes = KERNELS[name]
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        inputs = [torch.randn(shape) for shape in shapes(7, 1031, 37)]
        expected = eager(*inputs)
        torch.testing.assert_close(_call(64, name, inputs, tuple(expected.shape)), expected.contiguous())
    finally:
        torch.set_num_threads(threads)


def test_a_kernel_that_takes_other_sizes_than_the_host_passes_is_refused():
    """The host's convention (read off the kernels before the CPU stage) and the
    compiled kernel's (mlirc-cpu-size-args) are compared before anything runs."""
    with make_context():
        module = ir.Module.parse(
            "llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr, %n: i64) attributes {mlirc.size_args = array<i64: 0, 0>} {\n"
            "  llvm.return\n}"
        )
        codegen.check_signatures(module, [codegen.KernelSignature("k", 3, ((0, 0),))])
        with pytest.raises(PipelineError, match="the host passes 4"):
            codegen.check_signatures(module, [codegen.KernelSignature("k", 4, ((0, 0), (1, 0)))])


def test_sizes_follow_the_buffers_in_argument_order():
    """The calling convention: each `?` dim of each buffer, inputs then outputs."""
    with make_context():
        types = [ir.Type.parse(t) for t in ("tensor<?x37xf32>", "tensor<37xf32>", "tensor<2x?x?xf32>")]
    assert size_arguments(types) == [(0, 0), (2, 1), (2, 2)]


# Through torch.compile: every size of a symbolic graph runs the kernels compiled
# for it once (frontend/compile.py SymbolicRegion); a size only binds the module
# for its host wrapper.
MODELS = {
    "attention_batch": (Block, lambda n: torch.randn(n, 7, 16)),
    "attention_sequence": (Block, lambda n: torch.randn(3, n, 16)),
    "causal_sequence": (CausalBlock, lambda n: torch.randn(2, n, 16)),
    "cnn_image": (cnn, lambda n: torch.randn(2, 3, n + 4, n + 9)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_llvm_compile_per_graph_serves_every_size(name, monkeypatch):
    make_model, make_input = MODELS[name]
    model = make_model().eval()
    compiles = []
    compile_kernels = codegen.compile_kernels
    monkeypatch.setattr(codegen, "compile_kernels", lambda *a: compiles.append(1) or compile_kernels(*a))
    counters.clear()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    with torch.no_grad():
        for n in (2, 3, 7, 16, 17, 64, 1, 5):
            x = make_input(n)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    stats, graphs = mlirc.stats(), counters["stats"]["unique_graphs"]
    # Dynamo's graphs: the symbolic one, a static one for a size of 1 (its 0/1
    # specialization), a second symbolic one for a range of sizes (a convolution's)
    assert len(compiles) == graphs <= 3, stats.summary()
    assert stats.symbolic_shared == stats.symbolic_imports >= 1 and stats.fallback_nodes == 0, stats.summary()


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))]


@pytest.mark.parametrize("device", DEVICES)
def test_a_hot_size_is_compiled_on_its_own_and_timed(device, monkeypatch):
    """A size called HOT_CALLS times is compiled for itself too, timed on the call's
    arguments, and the faster serves it; a size called less stays where it is.  Two
    steps in that call: from the wrapper for every size to a wrapper bound to the size
    (its GEMMs timed, its weights packed, its scratch kept), then from that to the
    size's own kernels.  Answers are eager's throughout."""
    monkeypatch.setattr(hot_sizes, "HOT_CALLS", 3)
    model = Block().to(device).eval()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    with torch.no_grad():
        for x in [torch.randn(5, 7, 16, device=device) for _ in range(5)] + [torch.randn(6, 7, 16, device=device)]:
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    stats = mlirc.stats()
    # size 5, at its 3rd call: bound, and (where that won) its own kernels; size 6 stays
    assert stats.symbolic_shared == 1 and stats.symbolic_hot_binds == 1, stats.summary()
    assert stats.symbolic_hot_sizes == 1 + (stats.symbolic_hot_static >= 1), stats.summary()


def test_the_faster_call_is_kept():
    def slow(x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.002)
        return x + 1

    def fast(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    x = torch.ones(3)
    assert hot_sizes.faster(slow, fast, (x,)) is fast
    assert hot_sizes.faster(fast, slow, (x,)) is fast


# -- one host wrapper for every size (backends/cpu/symbolic_wrapper.py) --------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_wrapper_serves_every_size_without_a_compile(name, monkeypatch):
    """After the graph's first compile, a new size compiles nothing: neither kernels
    nor a binding of its sizes.  Sizes beyond MLIRC_DYNAMIC_SIZES stay compiled
    (that cap is on sizes compiled on their own), and every answer is eager's."""
    make_model, make_input = MODELS[name]
    model = make_model().eval()
    monkeypatch.setattr(config, "dynamic_sizes", 2)
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    sizes = (2, 3, 7, 16, 17, 64, 5, 9)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # "new sizes run eagerly" would raise
        for n in sizes:
            x = make_input(n)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    stats = mlirc.stats()
    assert stats.symbolic_every_size == stats.symbolic_imports >= 1, stats.summary()
    assert stats.symbolic_binds == 0 and stats.fallback_nodes == 0, stats.summary()
    assert stats.symbolic_unbound_sizes >= len(sizes), stats.summary()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_cuda_wrapper_serves_every_size_without_a_compile(name, monkeypatch):
    """The same on a GPU: Triton kernels take their sizes as arguments and their
    grids are computed at launch (passes/gpu/lower_to_tt.py), so after the graph's
    first compile a new size runs no triton.compile, and no size runs eagerly."""
    from mlirc.backends.gpu import compiler

    make_model, make_input = MODELS[name]
    model = make_model().cuda().eval()
    compiles = []
    compile_module = compiler.compile_module
    monkeypatch.setattr(compiler, "compile_module", lambda *a, **k: compiles.append(1) or compile_module(*a, **k))
    monkeypatch.setattr(config, "dynamic_sizes", 2)
    counters.clear()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # "new sizes run eagerly" would raise
        for n in (2, 3, 7, 16, 17, 64, 5, 9):
            x = make_input(n).cuda()
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    stats, graphs = mlirc.stats(), counters["stats"]["unique_graphs"]
    # one Triton compile per Dynamo graph (see the CPU's test above for why a model has several)
    assert len(compiles) == graphs <= 3 and stats.symbolic_binds == 0, stats.summary()
    assert stats.symbolic_every_size == stats.symbolic_imports >= 1 and stats.fallback_nodes == 0, stats.summary()


def test_a_size_outside_the_wrappers_assumptions_is_compiled_on_its_own():
    """The wrapper for every size holds the symbolic lowering's assumptions (a
    softmax over a `?` length compiled unsplit, for lengths up to 2048): a size
    beyond them is compiled from a lowering that assumes nothing."""
    compiled = torch.compile(lambda x: (x * 2).softmax(-1), backend="mlirc", dynamic=True)
    for n in (5, 7, 3001, 9):
        x = torch.randn(3, n)
        torch.testing.assert_close(compiled(x), (x * 2).softmax(-1))
    stats = mlirc.stats()
    assert stats.symbolic_every_size == 1 and stats.symbolic_assumption_misses == 1, stats.summary()


def test_a_graph_whose_binding_fails_gets_no_wrapper_for_every_size():
    """Found by fuzz_graphs --dynamic: a broadcast the symbolic import took as two
    equal `?` sizes (s and s // 31, one at the traced size) made a kernel read past
    its operand.  Binding at the traced sizes refuses it, as binding each size did;
    the graph is then compiled per size, with eager's answer."""

    def graph(a0, a1):
        t0 = a0.reshape([31, -1])
        t4 = torch.where(a0 > 0, a0, t0)
        return torch.fmod(a1, torch.remainder(a0.sum(), t4).mean([0, 1], keepdim=True))

    a0, a1 = torch.randn(31) * 50, torch.tensor(3.88)
    torch.testing.assert_close(torch.compile(graph, backend="mlirc", dynamic=True)(a0, a1), graph(a0, a1))
    assert mlirc.stats().symbolic_every_size == 0, mlirc.stats().summary()


@pytest.mark.parametrize(
    "name, fn, make",
    [
        # a SymInt argument handed to a kernel as it is (found by review: it was taken for a tensor)
        ("size_argument", lambda x, y: (x * 2).view(y.shape[0], -1).sum(1), lambda n: (torch.randn(4 * n), torch.randn(n))),
        # a sum over a `?` dim that is not innermost: its assertion's condition combines two
        ("outer_sum", lambda x: (x * 2).sum(0), lambda n: (torch.randn(n, n + 3),)),
    ],
)  # fmt: skip
def test_the_wrapper_for_every_size_on_sizes_the_host_computes(name, fn, make):
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for n in (3, 5, 8, 13):
        args = make(n)
        torch.testing.assert_close(compiled(*args), fn(*args), msg=lambda m, n=n: f"{name} at {n}: {m}")
    stats = mlirc.stats()
    assert stats.symbolic_every_size == 1 and stats.symbolic_unbound_sizes == 4, stats.summary()


def test_hot_sizes_count_once_among_the_sizes_compiled(monkeypatch):
    monkeypatch.setattr(hot_sizes, "HOT_CALLS", 3)
    fn = lambda x: (x * 2 + 1).relu().sum(1)  # noqa: E731
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for x in [torch.randn(3, 5)] + [torch.randn(6, 7)] * 8:
        torch.testing.assert_close(compiled(x), fn(x))
    stats = mlirc.stats()
    assert stats.symbolic_hot_binds == 1 and stats.compiled_sizes == stats.symbolic_sizes == 2, stats.summary()
