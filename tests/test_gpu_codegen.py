"""GPU code generation without a GPU: kernels -> TTIR -> Triton -> sm_90 cubin.

Each case is compiled for the CPU first (to get its kernels-stage IR, the input
both backends share), then through the gpu stage and `triton.compile` for an
H100 target.  Numerics on a real GPU are in tests/test_gpu.py.
"""

from __future__ import annotations

import glob
import re

import pytest
import torch
import torch._inductor.inductor_prims  # noqa: F401  (registers prims.fma)
import torch.nn.functional as F
from mlir import ir
from triton.backends.compiler import GPUTarget

import mlirc
from mlirc.backends import backend_for
from mlirc.backends import gpu as gpu_backend
from mlirc.backends.gpu.compiler import compile_ttir, triton_kernels
from mlirc.config import config
from mlirc.dialects import make_context
from mlirc.frontend.compile import pass_options
from mlirc.passes.base.registry import run_passes
from mlirc.passes.pipelines import configured

SM90 = GPUTarget("cuda", 90, 32)
FUSED_ROWS = {"softmax", "layer_norm", "momentum_step"}  # one kernel each (a row group; a multi-output generic)

CASES = {
    "pointwise": (lambda x, y: torch.sigmoid(x) * y + 1, [(7, 33), (33,)]),
    "bit_patterns": (lambda x, y: torch.where(torch.signbit(x), torch.nextafter(x, y), y), [(9, 13), (13,)]),
    "special_functions": (  # float64 math inside a float32 kernel: libdevice calls
        lambda x: torch.lgamma(x) + torch.special.i0e(x) + torch.erfinv(x.tanh()) + torch.polygamma(2, x.abs() + 1),
        [(5, 37)],
    ),
    "transpose_broadcast": (lambda x, y: torch.tanh(x.t()) - y, [(33, 7), (7, 1)]),
    "softmax": (lambda x: torch.softmax(x, -1), [(5, 1000)]),
    "long_rows": (lambda x: torch.logsumexp(x, -1), [(3, 10007)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (129,), w, b), [(7, 33, 129), (129,), (129,)]),
    "column_sum": (lambda x: x.sum(0), [(300, 17)]),
    "full_sum": (lambda x: x.abs().sum(), [(31, 37)]),
    "middle_dim_max": (lambda x: x.amax(1), [(4, 9, 5)]),
    "gelu": (lambda x: F.gelu(x), [(1024,)]),
    "bool_mask": (lambda x: torch.where(x > 0, x, 0.5 * x).sum(-1) + (x > 1).sum(-1), [(6, 40)]),
    "int64": (lambda x: (x * 3) // 2 + x.amax(-1, keepdim=True), "int64"),
    "embedding": (lambda w, i: F.embedding(i, w) * 2, "embedding"),
    "cascade_sums": (lambda x: x.sum() + x.sum(0).sum() + x.mean(1).sum(), [(4099, 7)]),  # mlirc-split-reductions
    "int_division": (lambda a, b: a // b + a % b + torch.fmod(a, b), "int64_pair"),  # a divisor check
    "fused_multiply_add": (lambda a, b, c: torch.ops.prims.fma(a, b, c) * 2, [(7, 33), (33,), (7, 1)]),
    # training: dropout's hash (int64 wrapping multiplies, shifts), max pooling's indices and backward
    "dropout": (lambda x: F.dropout(x, 0.3, training=True), [(7, 33)]),
    "max_pool_indices": (lambda x: torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1]), [(2, 3, 9, 9)]),
    "max_pool_backward": (
        lambda x, g: torch.ops.aten.max_pool2d_with_indices_backward(
            g,
            x,
            [3, 3],
            [2, 2],
            [1, 1],
            [1, 1],
            False,
            torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])[1],
        ),
        [(2, 3, 9, 9), (2, 3, 5, 5)],
    ),
    # an optimizer's step: the new state returned and read by the update (mlirc-fuse-multi-output)
    "momentum_step": (lambda p, g, m: (lambda m2: (p - 0.01 * m2, m2))(m * 0.9 + g), [(7, 33), (7, 33), (7, 33)]),
    # two parameters' updates, independent: one group kernel (mlirc-group-kernels)
    "independent_updates": (
        lambda p, g, q, h: (p - 0.1 * g, q * 0.9 + h.abs().sqrt()),
        [(7, 33), (7, 33), (1031,), (1031,)],
    ),
    # an accumulating index_put too large for the dense match: atomics (gpu_scatter_tt)
    "index_put_accumulate": (lambda x, i, v: torch.index_put(x * 2, (i,), v, accumulate=True), "scatter_rows"),
    # a language model's loss on shifted labels, forward and backward: the kernels read
    # `logits[:, :-1].reshape(-1, V)`, rows that no strides describe (Memory.splits)
    "shifted_label_cross_entropy": (
        lambda logits, ids: F.cross_entropy(logits[:, :-1].reshape(-1, 50), ids[:, 1:].reshape(-1)),
        "shifted_labels",
    ),
}


def _inputs(spec):
    if spec == "int64":
        return [torch.randint(-50, 50, (11, 13))]
    if spec == "int64_pair":
        return [torch.randint(-50, 50, (11, 13)), torch.randint(1, 9, (13,))]
    if spec == "embedding":
        return [torch.randn(50, 16), torch.randint(0, 50, (4, 7))]
    if spec == "scatter_rows":
        return [torch.randn(3001, 37), torch.randint(-3001, 3001, (2003,)), torch.randn(2003, 37)]
    if spec == "shifted_labels":
        return [torch.randn(4, 9, 50, requires_grad=True), torch.randint(0, 50, (4, 9))]
    return [torch.randn(s) for s in spec]


def _gpu_stages(*stages: str) -> list[str]:
    """The stages as a CUDA compile runs them: with the GPU backend's pass options."""
    options = pass_options("cuda")
    return [configured(stage, options) for stage in stages]


BIAS_IN_GEMM, SIBLING_SUMS = "mlirc-outline-library-calls", "mlirc-fuse-sibling-reductions"


def _kernels_ir(fn, args, tmp_path) -> list[str]:
    config.dump_dir = str(tmp_path)
    # Traced on the CPU in place of a GPU graph: as for the GPU target, a half GEMM's
    # bias add stays out of its library kernel (the GPU fuses it as an epilogue), and
    # column sums stay apart (the GPU's row fusion groups them).
    with pytest.MonkeyPatch.context() as patch:
        gpu_policy = {name: gpu_backend.PASS_OPTIONS[name] for name in (BIAS_IN_GEMM, SIBLING_SUMS)}
        patch.setattr(backend_for("cpu"), "pass_options", gpu_policy)
        try:
            result = torch.compile(fn, backend="mlirc")(*args)
            if isinstance(result, torch.Tensor) and result.requires_grad:
                result.backward()  # the backward graph's kernels too
        finally:
            config.dump_dir = None
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()
    return [open(p).read() for p in sorted(glob.glob(f"{tmp_path}/*.kernels.mlir"))]


@pytest.mark.parametrize("case", sorted(CASES))
def test_ttir_compiles_for_sm90(case, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    fn, spec = CASES[case]
    texts = _kernels_ir(fn, _inputs(spec), tmp_path)
    assert texts
    for text in texts:
        context = make_context()
        with context:
            module = ir.Module.parse(text)
            run_passes(module, _gpu_stages("gpu-fusion", "gpu"), stage="mlirc-stage-gpu")
            module.operation.verify()
            kernels = triton_kernels(module)
        generated = text.count("mlirc.kernel}")
        assert 1 <= len(kernels) <= generated  # row groups fuse several into one
        if case in FUSED_ROWS:
            assert len(kernels) == 1, [k.name for k in kernels]
        if case == "independent_updates":
            assert [k.name for k in kernels] == ["group_0"], [k.name for k in kernels]
        ptx = []
        for kernel in kernels:
            compiled = compile_ttir(kernel, SM90)
            ptx.append(compiled.asm["ptx"])
            assert compiled.metadata.num_warps == kernel.num_warps
            assert len(compiled.asm["cubin"]) > 1000
            # a scatter writes with atomics: red (reduce into memory, no value back), or
            # atom with its value unused (Triton 3.6's NVPTX on the GPU host emits that)
            assert re.search(r"\b(st|red|atom)\.global", compiled.asm["ptx"])
            # a kernel of constants (a backward's fill, an arange) loads nothing
            assert "ld.global" in compiled.asm["ptx"] or '"tt.load"' not in kernel.ttir
        if case == "index_put_accumulate":
            assert any(re.search(r"\b(red|atom)\.global\.gpu\.relaxed\.add\.f32", p) for p in ptx)


GEMMS = {  # fn, input shapes, dtype: generated tt.dot kernels (MLIRC_GPU_GEMM=generated)
    "linear_gelu_bf16": (lambda x, w, b: F.gelu(F.linear(x, w, b)), [(2, 37, 70), (45, 70), (45,)], torch.bfloat16),
    "mm_f16": (lambda a, b: a @ b, [(128, 256), (256, 64)], torch.float16),
    "bmm_transposed_f32": (lambda a, b: a @ b.transpose(-1, -2), [(3, 7, 32), (3, 9, 32)], torch.float32),
}


@pytest.mark.parametrize("case", sorted(GEMMS))
def test_gemm_lowers_to_tt_dot(case, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "gpu_gemm", "generated")
    fn, shapes, dtype = GEMMS[case]
    (text,) = _kernels_ir(fn, [torch.randn(s, dtype=dtype) for s in shapes], tmp_path)
    with make_context():
        module = ir.Module.parse(text)
        run_passes(module, ["mlirc-stage-gpu-fusion{mode=generated}", "mlirc-stage-gpu"], stage="mlirc-stage-gpu")
        module.operation.verify()
        kernels = triton_kernels(module)
    gemms = [k for k in kernels if k.name.startswith("matmul_")]
    assert len(gemms) == 1 and gemms[0].num_stages, [k.name for k in kernels]
    assert '"tt.dot"' in gemms[0].ttir and '"scf.for"' in gemms[0].ttir
    if case == "linear_gelu_bf16":  # bias and GELU fused: one kernel in all
        assert len(kernels) == 1 and "math.erf" in gemms[0].ttir
    compiled = compile_ttir(gemms[0], SM90)
    ptx = compiled.asm["ptx"]
    assert "mma" in ptx or "wgmma" in ptx or dtype == torch.float32, "half GEMMs run on tensor cores"
    assert len(compiled.asm["cubin"]) > 1000


def test_transpose_kernel_is_a_copy(tmp_path, monkeypatch):
    """A transpose that no GEMM reads is computed, not taken for a view."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    texts = _kernels_ir(lambda x: x.transpose(0, 1).contiguous() * 1, [torch.randn(5, 7, 3)], tmp_path)
    with make_context():
        module = ir.Module.parse(texts[0])
        run_passes(module, _gpu_stages("gpu-fusion", "gpu"), stage="mlirc-stage-gpu")
        (kernel,) = triton_kernels(module)
    assert '"tt.store"' in kernel.ttir


@pytest.mark.parametrize("rows", [64, 67])
def test_row_group_reads_each_input_once(rows, tmp_path, monkeypatch):
    """Layer norm's row group loads x once (not once per member), keeps its weight and
    bias in L2, and needs no mask along rows that fill the block exactly."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    args = [torch.randn(rows, 256), torch.randn(256), torch.randn(256)]
    texts = _kernels_ir(lambda x, w, b: F.layer_norm(x, (256,), w, b), args, tmp_path)
    with make_context():
        module = ir.Module.parse(texts[0])
        run_passes(module, _gpu_stages("gpu-fusion", "gpu"), stage="mlirc-stage-gpu")
        (kernel,) = triton_kernels(module)
    loads = [line for line in kernel.ttir.splitlines() if '"tt.load"' in line]
    # x's rows, weight, bias, and each row's first element: traced on the CPU, the
    # mean is centred on it (on a GPU it is a float64 sum, not a fourth load)
    assert len(loads) == 4, loads
    assert all("evict = 3" in line for line in loads)  # weight and bias shared; x a row group's rows
    # 64 rows: 4 programs of 16 rows, no bound checks at all; 67 rows: a row mask
    assert ('"arith.cmpi"' in kernel.ttir) == (rows % 16 != 0)


def test_whole_models_lower_to_ttir(tmp_path):
    """Every kernel of a transformer layer and a small CNN lowers to TTIR (the
    GPU stage must not reject what the CPU compiles: a rejected kernel sends the
    whole region back to eager on a GPU)."""
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0).eval()
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU()).eval()
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)  # the fused attention op has no lowering
    with torch.no_grad():
        for model, x in ((layer, torch.randn(2, 9, 32)), (cnn, torch.randn(2, 3, 12, 12))):
            torch._dynamo.reset()
            for text in _kernels_ir(model, [x], tmp_path):
                with make_context():
                    module = ir.Module.parse(text)
                    run_passes(module, _gpu_stages("gpu-fusion", "gpu"), stage="mlirc-stage-gpu")
                    assert triton_kernels(module)
    torch.backends.mha.set_fastpath_enabled(fastpath)


SYMBOLIC = {
    "pointwise_norms": (
        lambda x, w, b: (F.layer_norm(torch.relu(x * 2 + 1), (64,), w, b), (x * 2).sum(0), x.softmax(-1)),
        lambda n: [torch.randn(n, n + 2, 64), torch.randn(64), torch.randn(64)],
    ),
    "rows_of_runtime_length": (
        lambda x: (x * 2).softmax(-1) + F.layer_norm(x, (x.shape[-1],)),
        lambda n: [torch.randn(3, n + 5)],
    ),
    "outer_sum": (lambda x: (x * 2).sum(0), lambda n: [torch.randn(n, n + 3)]),
    "logsumexp_of_runtime_length": (lambda x: torch.logsumexp(x * 2, -1), lambda n: [torch.randn(3, n + 5)]),
    "attention": (lambda q, k: torch.softmax(q @ k.transpose(-1, -2) / 4, -1), lambda n: [torch.randn(2, n, 16)] * 2),
}


@pytest.mark.parametrize("case", sorted(SYMBOLIC))
def test_kernels_of_symbolic_sizes_compile_for_sm90(case, tmp_path, monkeypatch):
    """A symbolic graph's kernels lowered once for every size: each takes its
    buffers' `?` sizes as i64 arguments after its pointers and declares its grid
    as an expression of them, and Triton compiles each (the symbolic import is the
    CPU's, retargeted: the mlirc stage is device-neutral)."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    fn, make = SYMBOLIC[case]
    config.dump_dir = str(tmp_path)
    try:
        compiled = torch.compile(fn, backend="mlirc", dynamic=True)
        compiled(*make(3))
        compiled(*make(5))
    finally:
        config.dump_dir = None
    texts = [open(p).read() for p in sorted(glob.glob(f"{tmp_path}/*.mlirc.mlir"))]
    assert texts and mlirc.stats().symbolic_imports >= 1, mlirc.stats().summary()
    dynamic, looped_rows = 0, 0
    with make_context():
        for text in texts:
            module = ir.Module.parse(text.replace('mlirc.target = "cpu"', 'mlirc.target = "cuda"'))
            stages = _gpu_stages("linalg", "kernels", "gpu-fusion", "gpu")
            run_passes(module, stages, stage="mlirc-stage-gpu")
            declarations = [op for op in module.body.operations if "mlirc.gpu.ttir" in op.attributes]
            for op in declarations:
                sized = "mlirc.size_args" in op.attributes
                assert sized == ("mlirc.gpu.grid_size" in op.attributes) != ("mlirc.gpu.grid" in op.attributes)
                dynamic += sized
                name = op.sym_name.value
                ttir = str(
                    next(
                        m
                        for m in module.body.operations
                        if m.operation.name == "builtin.module"
                        and ir.StringAttr(m.attributes["sym_name"]).value == f"{name}_ttir"
                    )
                )
                looped_rows += sized and name.startswith("rows_") and "scf.for" in ttir
            for kernel in triton_kernels(module):
                assert len(compile_ttir(kernel, SM90).asm["cubin"]) > 1000
    assert dynamic >= 1
    if case in ("rows_of_runtime_length", "attention", "logsumexp_of_runtime_length"):  # one group, in chunks
        assert looped_rows >= 1


def _mlirc_stage_for_cuda(fn, args, tmp_path) -> str:
    """`fn`'s one region, compiled on the CPU, at its mlirc stage (device-neutral),
    retargeted to CUDA."""
    config.dump_dir = str(tmp_path)
    try:
        torch.compile(fn, backend="mlirc")(*args)
    finally:
        config.dump_dir = None
    (text,) = [open(p).read() for p in sorted(glob.glob(f"{tmp_path}/*.mlirc.mlir"))]
    return text.replace('mlirc.target = "cpu"', 'mlirc.target = "cuda"')


def _cuda_kernels(fn, args, tmp_path, libraries: list | None = None, prepared: list | None = None) -> list:
    """`fn`'s kernels for the CUDA target: traced on the CPU, its mlirc-stage module
    retargeted (the mlirc stage is device-neutral) and taken through the GPU stages;
    `libraries` collects the library calls' kinds, `prepared` the kernels the prepare
    function calls (passes/hoist_frozen.py)."""
    libraries = [] if libraries is None else libraries
    prepared = [] if prepared is None else prepared
    text = _mlirc_stage_for_cuda(fn, args, tmp_path)
    with make_context():
        module = ir.Module.parse(text)
        stages = _gpu_stages(*gpu_backend.STAGES, gpu_backend.KERNEL_STAGE)
        run_passes(module, stages, stage="mlirc-stage-gpu")
        grids = {
            op.sym_name.value: op.attributes["mlirc.gpu.grid"]
            for op in module.body.operations
            if "mlirc.gpu.grid" in op.attributes
        }
        libraries.extend(
            ir.StringAttr(op.attributes["mlirc.library"]).value
            for op in module.body.operations
            if "mlirc.library" in op.attributes
        )
        prepared.extend(
            inner.attributes["callee"].value
            for op in module.body.operations
            if "mlirc.prepare" in op.attributes
            for inner in op.regions[0].blocks[0].operations
            if inner.name == "func.call"
        )
        return [(kernel, list(ir.DenseI64ArrayAttr(grids[kernel.name]))) for kernel in triton_kernels(module)]


def _rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


@pytest.mark.parametrize(
    "fn, shapes",
    [
        (lambda x: torch.softmax(x, -1), [(64, 4096)]),
        (_rms_norm, [(16, 8192), (8192,)]),
        (lambda x: torch.logsumexp(x, -1), [(64, 4096)]),
        (lambda x: torch.logsumexp(x * 3, -1, keepdim=True) - x, [(33, 1000)]),
        (lambda x: torch.softmax(x.t(), -1), [(12000, 1024)]),
    ],
    ids=["softmax_4096", "rms_norm_8192", "logsumexp_4096", "log_softmax_by_hand", "long_transposed_softmax"],
)
def test_rows_a_program_holds_stay_one_kernel(fn, shapes, tmp_path, monkeypatch):
    """On the GPU a sum over a row that a row group holds (up to gpu_fuse_rows.MAX_ROW)
    is not split into chunk sums (mlirc-split-reductions' CPU limits split 4096 into 8
    chunks: four kernels, each reading or writing the whole tensor).  logsumexp's
    per-row steps (the guard on the row maxima, the log of the sum) join the group:
    alone, each was a kernel of its own between the reductions.  Many rows longer
    than a tile holds (1024 of 12000, read transposed) stay whole too: one kernel
    walks them in chunks, where the split sums and the transpose were five."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    ((kernel, _),) = _cuda_kernels(fn, [torch.randn(s) for s in shapes], tmp_path)
    assert kernel.name.startswith("rows_")
    assert len(compile_ttir(kernel, SM90).asm["cubin"]) > 1000


def test_long_sum_spreads_over_programs(tmp_path, monkeypatch):
    """A whole-tensor sum of a million values is split in chunks over many programs,
    rather than walked by a single one."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    kernels = _cuda_kernels(lambda x: (x * 2).sum(), [torch.randn(1000, 1000)], tmp_path)
    assert len(kernels) >= 2
    assert kernels[0][1][0] >= 1000 // 4 and kernels[-1][1][0] == 1, [(k.name, g) for k, g in kernels]
    for kernel, _ in kernels:
        assert len(compile_ttir(kernel, SM90).asm["cubin"]) > 1000


def test_cnn_runs_channels_last_on_the_gpu(tmp_path, monkeypatch):
    """mlirc-channels-last on the CUDA target: convolutions are NHWC library calls,
    and the kernels between them (renumbered by mlirc-gpu-loop-order, lit-tested) lower
    and compile, a padded max pool's bounds check (affine.apply on loop indices) too.
    The weights' OIHW -> OHWI transposes run in the prepare function, not per call."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),
    ).eval()  # fmt: skip
    libraries: list = []
    prepared: list = []
    with torch.no_grad():
        kernels = _cuda_kernels(model, [torch.randn(2, 3, 17, 15)], tmp_path, libraries, prepared)
    assert libraries == ["conv2d_nhwc", "conv2d_nhwc"]
    assert len(prepared) == 2, prepared  # one weight transpose per convolution
    pool = [(k, grid) for k, grid in kernels if '"arith.maximumf"' in k.ttir and '"scf.for"' in k.ttir]
    assert pool, [k.name for k, _ in kernels]
    # one output per lane, the 3 x 3 window walked in a loop: 2 x 9 x 8 x 8 = 1152
    # outputs in 2 programs of 1024 (a [64, 16] tile per program was 18)
    assert [grid for _, grid in pool] == [[2, 1, 1]], [(k.name, grid) for k, grid in pool]
    for kernel, _ in kernels:
        assert len(compile_ttir(kernel, SM90).asm["cubin"]) > 1000


def test_padding_computes_the_activation_before_it(tmp_path, monkeypatch):
    """MobileNetV2's TF-style padding after batch norm + ReLU6: one kernel between the
    convolutions, the padding's, which computes the activation at each index it reads
    (mlirc-fuse-gathered-producers); the activation had a kernel of its own."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    first, norm = torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8).eval()
    depthwise = torch.nn.Conv2d(8, 8, 3, stride=2, groups=8)
    libraries: list = []
    with torch.no_grad():
        kernels = _cuda_kernels(
            lambda t: depthwise(F.pad(F.relu6(norm(first(t))), (0, 1, 0, 1))),
            [torch.randn(2, 3, 17, 15)],
            tmp_path,
            libraries,
        )
    assert libraries == ["conv2d_nhwc", "conv2d_nhwc"]
    # the batch norm (its rsqrt) in the kernel that clamps the padded indices
    norm_kernels = [k for k, _ in kernels if '"math.rsqrt"' in k.ttir]
    assert len(norm_kernels) == 1, [k.name for k, _ in kernels]
    assert '"arith.minsi"' in norm_kernels[0].ttir and '"arith.select"' in norm_kernels[0].ttir
    for kernel, _ in kernels:
        assert len(compile_ttir(kernel, SM90).asm["cubin"]) > 1000


def _shifted_label_loss_backward(logp, target, grad, total):
    """Cross-entropy's backward on a language model's shifted labels, as AOTAutograd
    hands it over: nll_loss's one-hot, log-softmax's backward, the slice's padding."""
    one_hot = torch.ops.aten.nll_loss_backward(grad, logp, target, None, 1, -100, total)
    g = torch.ops.aten._log_softmax_backward_data(one_hot, logp, 1, torch.float32)
    return torch.ops.aten.slice_backward(g.view(4, 15, 37), [4, 16, 37], 1, 0, -1, 1)


def test_padding_reads_the_targets_not_the_one_hot(tmp_path):
    """The one-hot gradient is read by log-softmax's row sums and by the padding: the
    padding computes it from the targets where it reads it (mlirc-recompute-cheap-
    producers gives the gather its own copy, mlirc-fuse-gathered-producers inlines it),
    so the one-hot dies after the sums and is never beside the padded gradient (GPT-2's
    backward peak on the H100, 15 MB).  Fails with the padding reading the one-hot."""
    logp = torch.log_softmax(torch.randn(60, 37), -1)
    args = [logp, torch.randint(0, 37, (60,)), torch.tensor(0.7), torch.tensor(60.0)]
    compiled = torch.compile(_shifted_label_loss_backward, backend="mlirc")
    torch.testing.assert_close(compiled(*args), _shifted_label_loss_backward(*args))
    torch._dynamo.reset()
    text = _mlirc_stage_for_cuda(_shifted_label_loss_backward, args, tmp_path)
    with make_context():
        module = ir.Module.parse(text)
        stages = _gpu_stages(*gpu_backend.STAGES[: gpu_backend.STAGES.index("kernels") + 1])
        run_passes(module, stages, stage="mlirc-stage-gpu")
        entry = next(op for op in module.body.operations if "mlirc.entry" in op.attributes)
        calls = [op for op in entry.regions[0].blocks[0].operations if op.name == "func.call"]
        one_hots = [c.results[0] for c in calls if str(c.results[0].type) == "tensor<60x37xf32>"]
        (padding,) = [c for c in calls if str(c.results[0].type) == "tensor<4x16x37xf32>"]
        assert not any(v in one_hots for v in padding.operands), str(entry)


def _stacked_qkv_attention(x, w, b):
    """Attention as timm and the benchmark's models write it: one projection for q, k
    and v, viewed per head and permuted, then unbound."""
    batch, tokens, dim = x.shape
    q, k, v = F.linear(x, w, b).view(batch, tokens, 3, 2, dim // 2).permute(2, 0, 3, 1, 4)
    return torch.softmax(q @ k.transpose(-2, -1), -1) @ v


@pytest.mark.parametrize("batch, tokens", [(3, 7), (2, 13)])
def test_stacked_qkv_is_three_tensors(batch, tokens, tmp_path):
    """On the GPU q, k.T and v are computed apart from the projection (mlirc-split-
    sliced-generics): no [3, batch, heads, tokens, dim] tensor is written, so a saved
    key does not keep the stack alive, and one kernel writes k.T from the projection's
    result.  Fails with the pass left out."""
    args = (torch.randn(batch, tokens, 10), torch.randn(30, 10), torch.randn(30))
    text = _mlirc_stage_for_cuda(_stacked_qkv_attention, args, tmp_path)
    with make_context():
        module = ir.Module.parse(text)
        stages = _gpu_stages(*gpu_backend.STAGES[: gpu_backend.STAGES.index("kernels") + 1])
        run_passes(module, stages, stage="mlirc-stage-gpu")
        kernels = str(module)
    assert f"tensor<3x{batch}x2x{tokens}x5xf32>" not in kernels, kernels
    assert f"-> tensor<{batch}x2x5x{tokens}xf32>" in kernels, kernels  # k.T, written once


def _reductions_by_kernel(module: ir.Module) -> dict[str, list[ir.Operation]]:
    """Each kernel's reduction generics, at the gpu-fusion stage."""
    found: dict[str, list[ir.Operation]] = {}
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or "mlirc.kernel" not in op.attributes or not op.regions[0].blocks:
            continue
        for inner in op.regions[0].blocks[0].operations:
            inner = inner.operation
            iterators = inner.attributes["iterator_types"] if inner.name == "linalg.generic" else []
            if any("reduction" in str(k) for k in iterators):
                found.setdefault(ir.StringAttr(op.attributes["sym_name"]).value, []).append(inner)
    return found


@pytest.mark.parametrize("batch, size", [(8, (30, 30)), (3, (7, 5))])
def test_batch_norm_training_sums_share_kernels(batch, size, tmp_path, monkeypatch):
    """A training batch norm's backward sums the gradient and the gradient times the
    centred input over the same pixels: one kernel reads the gradient once for both
    (mlirc-gpu-sibling-reductions), and the forward's per-channel rsqrt joins the
    variance's last, short stage (mlirc-gpu-loop-order makes a short column sum a row
    reduction).  Every kernel compiles."""
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    conv, norm = torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
    x = torch.randn(batch, 3, *size)
    texts = _kernels_ir(lambda t: F.relu(norm(conv(t))).square().sum(), [x], tmp_path)
    assert len(texts) == 2, len(texts)  # forward, backward
    shared = 0
    for index, text in enumerate(texts):
        with make_context():
            module = ir.Module.parse(text)
            run_passes(module, _gpu_stages("gpu-fusion"), stage="mlirc-stage-gpu-fusion")
            for generics in _reductions_by_kernel(module).values():
                # tensors each reads, not its init: an argument, or a member's result
                inputs = [
                    {v for v in list(g.operands)[:-1] if isinstance(v.type, ir.RankedTensorType)} for g in generics
                ]
                shared += len(generics) >= 2 and bool(set.intersection(*inputs))
            run_passes(module, _gpu_stages("gpu"), stage="mlirc-stage-gpu")
            kernels = triton_kernels(module)
        for kernel in kernels:
            assert len(compile_ttir(kernel, SM90).asm["cubin"]) > 1000
        if index == 0:  # the forward: the statistics' rsqrt where the variance is summed
            rsqrt = [k for k in kernels if '"math.rsqrt"' in k.ttir]
            assert len(rsqrt) == 1 and '"tt.reduce"' in rsqrt[0].ttir, [k.name for k in rsqrt]
    assert shared >= 1
