"""The host wrapper's build-time plan: buffer reuse never hands out storage that a
live value still reads, views keep their layout, and compiled graphs that reuse
buffers still give eager's answers."""

import re
import threading

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare, wrapper_source
from mlir import ir
from mlir.dialects import func

from mlirc.backends.host_wrapper import WrapperBuilder
from mlirc.backends.in_place import in_place_operands
from mlirc.config import config
from mlirc.dialects import layouts, make_context
from mlirc.frontend.compile import compile_region

# %v is a view of %0 that outlives %0's last direct use: %2 must not take %0's
# storage.  %1 is dead once %2 is computed, so %3 may take it.
VIEW_KEEPS_STORAGE = """
func.func private @k(tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @main(%a: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<4x8xf32>) attributes {mlirc.entry} {
  %0 = func.call @k(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = tensor.collapse_shape %0 [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %1 = func.call @k(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = func.call @k(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = func.call @k(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %v, %3 : tensor<32xf32>, tensor<4x8xf32>
}
"""


def _wrapper_lines(text: str, scratch_limit_bytes: int = 0) -> list[str]:
    with make_context():
        module = ir.Module.parse(text)
        funcs = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
        builder = WrapperBuilder(funcs["main"], [torch.float32, torch.float32], funcs, scratch_limit_bytes)
        source = builder.build()
    return [line.strip() for line in source.splitlines()]


def test_storage_with_a_live_view_is_not_reused():
    lines = _wrapper_lines(VIEW_KEEPS_STORAGE)
    # buf1 = %0, view2 = %v, buf3 = %1, buf4 = %2, buf5 = %3
    assert "view2 = reinterpret_tensor(buf1, (32,), (1,), 0)" in lines
    assert any(line.startswith("buf4 = empty_strided(") for line in lines), lines
    assert "buf5 = buf3; del buf3" in lines, lines
    assert not any(re.match(r"del .*buf1", line) for line in lines), "buf1 is returned through its view"
    assert "del buf4" in lines, "a dead buffer nobody reuses is freed at its last use"


def test_only_buffers_that_never_reach_a_result_are_scratch():
    lines = _wrapper_lines(VIEW_KEEPS_STORAGE, scratch_limit_bytes=1 << 20)
    assert "scratch = scratch_buffers()" in lines, lines
    assert "buf1 = empty_strided((4, 8), (8, 1), torch.float32)" in lines, "returned through its view"
    assert "buf3 = empty_strided((4, 8), (8, 1), torch.float32)" in lines, "its storage is returned as buf5"
    assert "buf4 = scratch[0]" in lines, lines


def test_scratch_over_the_limit_is_allocated_per_call():
    lines = _wrapper_lines(VIEW_KEEPS_STORAGE, scratch_limit_bytes=4 * 8 * 4 - 1)
    assert not any("scratch" in line for line in lines), lines
    assert "buf4 = empty_strided((4, 8), (8, 1), torch.float32)" in lines


# Views are written only where read as tensors: %v (a view of the argument that
# starts where it does) is all @k1 reads, so @k1 gets the argument; the returned %e,
# a view of a view, is one view of the argument; the slice %s starts 16 elements in.
VIEWS_OF_VIEWS = """
func.func private @k1(tensor<32xf32>) -> tensor<32xf32>
func.func private @k2(tensor<2x8xf32>) -> tensor<2x8xf32>
func.func @main(%a: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<2x8xf32>, tensor<8x4xf32>) attributes {mlirc.entry} {
  %v = tensor.collapse_shape %a [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %0 = func.call @k1(%v) : (tensor<32xf32>) -> tensor<32xf32>
  %s = tensor.extract_slice %a[2, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
  %1 = func.call @k2(%s) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %e = tensor.expand_shape %v [[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
  return %0, %1, %e : tensor<32xf32>, tensor<2x8xf32>, tensor<8x4xf32>
}
"""


def test_views_are_written_once_from_their_root_where_read_as_tensors():
    with make_context():
        module = ir.Module.parse(VIEWS_OF_VIEWS)
        funcs = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
        lines = [
            line.strip() for line in WrapperBuilder(funcs["main"], [torch.float32] * 3, funcs).build().splitlines()
        ]
    # view1 = %v, buf2 = %0, view3 = %s, buf4 = %1, view5 = %e
    assert "kernels['k1'](arg0.data_ptr(), buf2.data_ptr())" in lines, lines
    assert "view3 = reinterpret_tensor(arg0, (2, 8), (8, 1), 16)" in lines, lines
    assert "view5 = reinterpret_tensor(arg0, (8, 4), (4, 1), 0)" in lines, lines
    assert not any(line.startswith("view1 =") or "del view1" in line for line in lines), lines


def test_convolution_operands_that_are_views_give_eager_results():
    """A convolution's NHWC operands become NCHW views of their roots (one tensor
    each): computed inputs (a batch slice of one) and computed, sliced weights."""
    w = torch.randn(6, 5, 3, 3)

    def f(x):
        y = torch.relu(x[:, 1:6]) * 0.5
        return F.conv2d(y, w * 2, padding=1, stride=2), F.conv2d(y[1:], w[:, :, :2, :], padding=(0, 1))

    compile_and_compare(f, torch.randn(3, 7, 9, 11))
    compile_and_compare(f, torch.randn(3, 7, 2, 5))


# @relu reads its argument at the element it writes: %1 may go over %0, which dies
# there, and %2 over %1; never over the argument %a (the caller's tensor), and %4
# not over %3, which %5 still reads.
IN_PLACE = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @relu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
func.func private @k(tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @main(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {mlirc.entry} {
  %0 = func.call @relu(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = func.call @relu(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = func.call @relu(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = func.call @k(%2, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = func.call @relu(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = func.call @k(%3, %4) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4, %5 : tensor<4x8xf32>, tensor<4x8xf32>
}
"""


def test_elementwise_results_overwrite_dying_operands():
    lines = _wrapper_lines(IN_PLACE)
    # buf1 = %0, buf2 = %1, buf3 = %2, buf4 = %3, buf5 = %4, buf6 = %5
    assert any(line.startswith("buf1 = empty_strided(") for line in lines), "never over the argument"
    # the same layout: the result is the operand's tensor under a second name
    assert "buf2 = buf1" in lines, lines
    assert "buf3 = buf2" in lines, lines
    assert "buf5 = buf3; del buf3" in lines, "%3 is read after %4: %4 takes the dead %2's storage"
    assert not any(line.startswith(("buf5 = reinterpret_tensor(buf4", "buf6 = reinterpret_tensor")) for line in lines)


def test_in_place_chains_into_a_result_are_not_scratch():
    lines = _wrapper_lines(IN_PLACE, scratch_limit_bytes=1 << 20)
    # buf1 -> buf2 -> buf3 in place, and buf5 (a result) takes buf3's storage.
    assert "buf1 = empty_strided((4, 8), (8, 1), torch.float32)" in lines, lines
    assert "buf4 = scratch[0]" in lines, lines
    assert not any(line.startswith("buf6 = scratch") for line in lines), lines


def _two_layer(x, w1, w2):
    h = torch.relu(x @ w1)  # scratch: read only by the next GEMM
    return torch.tanh(h @ w2) + 1.0


def test_scratch_keeps_results_of_earlier_calls(tmp_path):
    w1, w2 = torch.randn(67, 131), torch.randn(131, 29)
    xs = [torch.randn(53, 67) for _ in range(3)]
    source = wrapper_source(_two_layer, (xs[0], w1, w2), tmp_path)
    assert re.search(r"buf\d+ = scratch\[0\]", source), source
    compiled = torch.compile(_two_layer, backend="mlirc")
    results = [compiled(x, w1, w2) for x in xs]
    for x, result in zip(xs, results, strict=True):
        torch.testing.assert_close(result, _two_layer(x, w1, w2), rtol=1e-4, atol=1e-4)
    assert len({r.data_ptr() for r in results}) == len(results)


def test_scratch_off_allocates_every_buffer(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "scratch_mb", 0)
    args = (torch.randn(53, 67), torch.randn(67, 131), torch.randn(131, 29))
    source = wrapper_source(_two_layer, args, tmp_path)
    assert "scratch" not in source, source


def test_threads_calling_one_graph_get_their_own_scratch():
    w1, w2 = torch.randn(67, 131), torch.randn(131, 29)
    compiled = torch.compile(_two_layer, backend="mlirc")
    compiled(torch.randn(53, 67), w1, w2)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        try:
            for _ in range(20):
                x = torch.randn(53, 67, generator=gen)
                torch.testing.assert_close(compiled(x, w1, w2), _two_layer(x, w1, w2), rtol=1e-4, atol=1e-4)
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# A merged kernel (mlirc-cpu-merge-small-kernels) runs its members in order: a row
# sum that reads %t, then a scale of %t.  The scale may write over %t (the sum has
# read it by then); in the other order it may not (the sum would read the scaled values).
MERGED = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @merged(%t: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) attributes {mlirc.kernel} {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %SUM
  %SCALE
  return %s, %u : tensor<4xf32>, tensor<4x8xf32>
}
"""
_SUM = """%s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>"""
_SCALE = """%f = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x8xf32>) outs(%f : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>"""


def _in_place_of(text: str) -> dict[int, list[int]]:
    """backends/in_place.py's answer for the one kernel in `text`."""
    with make_context():
        module = ir.Module.parse(text)
        return in_place_operands(next(op for op in module.body.operations if isinstance(op, func.FuncOp)))


@pytest.mark.parametrize("sum_first", [True, False])
def test_a_merged_kernels_member_writes_over_what_only_earlier_members_read(sum_first):
    first, second = (_SUM, _SCALE) if sum_first else (_SCALE, _SUM)
    assert _in_place_of(MERGED.replace("%SUM", first).replace("%SCALE", second)) == ({1: [0]} if sum_first else {})


SHARED_INIT = """
#id = affine_map<(d0) -> (d0)>
func.func @merged(%t: tensor<8xf32>, %p: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) attributes {mlirc.kernel} {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %two : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  %f = tensor.empty() : tensor<8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%t, %v : tensor<8xf32>, tensor<8xf32>) outs(%SHARED : tensor<8xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %m = arith.mulf %in, %w : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %v, %u : tensor<8xf32>, tensor<8xf32>
}
"""


@pytest.mark.parametrize("shared", [False, True])
def test_a_merged_kernels_member_writes_over_nothing_from_a_shared_init(shared):
    """Were the scale's init the earlier member's (CSE merges equal tensor.empty ops),
    bufferization could write both into one buffer: the earlier member's values would
    land on the argument the scale reads, before it reads it."""
    expected = {} if shared else {0: [1], 1: [0]}
    assert _in_place_of(SHARED_INIT.replace("%SHARED", "%e" if shared else "%f")) == expected


@pytest.mark.parametrize("sum_first", [True, False])
def test_merged_kernels_in_place_give_eager_results(sum_first, tmp_path):
    """A GEMM's small result read by a column sum and a scale, merged into one: the scale
    writes over the GEMM's result only where the sum has already read it."""
    x, w = torch.randn(5, 13), torch.randn(13, 7)

    def f(x, w):
        t = x @ w
        return (t.sum(0), t * 2) if sum_first else (t * 2, t.sum(0))

    source = wrapper_source(f, (x, w), tmp_path)
    assert "merged_" in source, source
    assert bool(re.search(r"^ +buf\d+ = buf\d+$", source, re.M)) == sum_first, source
    compile_and_compare(f, x, w)


def test_in_place_results_give_eager_results(tmp_path):
    """mm -> bias + relu (in place) -> mm -> sigmoid (in place), and an input kept intact."""
    x, w1, b1, w2 = torch.randn(37, 64), torch.randn(64, 129), torch.randn(129), torch.randn(129, 16)
    keep = x.clone()

    def f(x, w1, b1, w2):
        return torch.sigmoid(torch.relu(x @ w1 + b1) @ w2), torch.exp(x)

    source = wrapper_source(f, (x, w1, b1, w2), tmp_path)
    assert re.search(r"^ +buf\d+ = buf\d+$", source, re.M), source  # written over, the same layout
    compile_and_compare(f, x, w1, b1, w2)
    torch.testing.assert_close(x, keep, rtol=0, atol=0)


def test_channels_last_kernels_write_over_a_convolution_result(tmp_path):
    """Between convolutions, kernels loop in NCHW order over NHWC buffers (the same
    permuted map for the result and the convolution's output they read): the
    normalization + ReLU writes over the convolution's result, which dies there."""
    w1, w2, scale = torch.randn(11, 3, 3, 3), torch.randn(5, 11, 3, 3), torch.randn(11, 1, 1)

    def f(x):
        y = torch.relu(F.conv2d(x, w1, padding=1) * scale + 0.5)
        return F.conv2d(y, w2, padding=1)

    x = torch.randn(2, 3, 9, 7)
    source = wrapper_source(f, (x,), tmp_path)
    conv = re.search(r"(buf\d+) = (?:torch\.convolution|conv_sites)", source)
    assert conv and re.search(rf"^ +buf\d+ = {conv[1]}$", source, re.M), source
    compile_and_compare(f, x)


def test_layout_results_are_one_view_of_their_buffer(tmp_path):
    """A channels-last result (a buffer with a layout) is returned as one
    reinterpret_tensor of the wrapper's buffer, not a dispatched permute per call;
    values, sizes and strides are eager's (odd sizes, a bool result too)."""
    w = torch.randn(5, 3, 3, 3)

    def f(x):
        y = F.conv2d(x, w, padding=1)
        return torch.relu(y) * 0.5, y > 0

    x = torch.randn(2, 3, 9, 7).to(memory_format=torch.channels_last)
    source = wrapper_source(f, (x,), tmp_path)
    returned = next(line for line in source.splitlines() if line.startswith("    return ("))
    assert "reinterpret_tensor(" in returned and ".permute(" not in returned, source
    expected, actual = f(x), torch.compile(f, backend="mlirc")(x)
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, e)
        assert a.stride() == e.stride()


def _mlp(x, w1, w2, w3):
    h = torch.relu(x @ w1)
    h = torch.tanh(h @ w2) * 0.5
    h = torch.relu(h @ w2 + h)
    return torch.softmax(h @ w3, -1), h.t()


def test_reused_buffers_give_eager_results(tmp_path):
    # odd sizes: 7 rows, 13/13/5 columns; w2 square so its outputs can share buffers
    args = (torch.randn(7, 11), torch.randn(11, 13), torch.randn(13, 13), torch.randn(13, 5))
    source = wrapper_source(_mlp, args, tmp_path)
    assert re.search(r"buf\d+ = buf\d+; del buf\d+", source), source
    torch._dynamo.reset()
    compile_and_compare(_mlp, *[torch.randn_like(a) for a in args])


def test_non_contiguous_inputs_through_views():
    x, w = torch.randn(13, 7).t(), torch.randn(3, 13).t()  # both transposed views
    compile_and_compare(lambda a, b: torch.relu(a @ b).reshape(3, 7) * 2, x, w)


def _padded_mask(bias: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A mask padded to a multiple of 16 and cut back, as SDPA pads one for its
    memory-efficient kernel (Swin's shifted-window masks), expanded over a batch."""
    mask = (bias * 2 + x.sum()).unsqueeze(0)
    return F.pad(mask, (0, 7))[..., :49].expand(8, 3, 49, 49), mask.sum()


@pytest.mark.parametrize("shape", [(3, 49, 49), (2, 5, 9)])
def test_results_viewing_padded_rows_are_written_padded(shape, tmp_path):
    """A result whose eager strides skip each row's padding is computed into the padded
    buffer and returned as a view of it: eager's strides, no copy into them."""
    bias, x = torch.randn(*shape), torch.randn(5)
    fn = _padded_mask if shape[-1] == 49 else lambda b, y: (F.pad(b * y[0], (0, 7))[..., :9], b.sum())
    expected, actual = fn(bias, x), torch.compile(fn, backend="mlirc")(bias, x)
    torch.testing.assert_close(actual, expected)
    assert actual[0].stride() == expected[0].stride()
    assert "with_strides" not in wrapper_source(fn, (bias, x), tmp_path)


def test_layouts_pad_rows_of_results_only_by_an_alignment():
    """layouts.plan: a stride past a row's end is padding in a result's buffer (49 of
    56), not in an argument's (copied on entry), nor where the row is a narrow slice
    of a wide one (3 of 64: its buffer would be mostly padding)."""
    mask = layouts.plan([8, 3, 49, 49], [0, 2744, 56, 1], padding=True)
    assert mask == layouts.Layout((0, 1, 2, 3), (0,), ((3, 56),))
    assert mask.buffer_shape([8, 3, 49, 49]) == [1, 3, 49, 56]
    assert layouts.plan([8, 3, 49, 49], [0, 2744, 56, 1]) is None
    assert layouts.plan([5, 3], [64, 1], padding=True) is None
    assert layouts.plan([4, 5], [1, 8], padding=True) == layouts.Layout((1, 0), (), ((0, 8),))


def test_profile_names_every_call(monkeypatch):
    """MLIRC_PROFILE: each kernel and library call is a profiler range named after it
    (what `benchmarks/zoo.py --profile` lists beside Inductor's kernels)."""
    monkeypatch.setattr(config, "profile", True)
    torch._dynamo.reset()
    w = torch.randn(7, 5)
    compiled = torch.compile(lambda x: torch.relu(x @ w) + 1.0, backend="mlirc")
    x = torch.randn(3, 7)
    compiled(x)
    with torch.profiler.profile() as prof:
        torch.testing.assert_close(compiled(x), torch.relu(x @ w) + 1.0)
    names = {e.key for e in prof.key_averages()}
    assert any(n.startswith("mlirc kernel_") and n.endswith("[3x5]") for n in names), names
    assert any(n.startswith("mlirc mm") for n in names), names


def _held_then_reallocated(x: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.sin(x)  # written out: two reductions read it
    s = a.sum() + a.amax()
    b = torch.cos(other)  # a fresh allocation while a's buffer is released
    return b, torch.tanh(x) * s  # the size of a's buffer again


@pytest.mark.parametrize("other_shape, reused", [((8, 16), True), ((512, 512), False)])
def test_released_buffers_are_not_held_across_much_larger_allocations(other_shape, reused, tmp_path, monkeypatch):
    """A buffer released for a later allocation of its size is held until then: worth
    it across allocations of like size, not across one 4096 times as large (a GPU
    step's peak would carry it; BERT's backward kept two small gradients across its
    largest GEMM output).  Then it is freed at its last use and allocated again.
    (Kernels this small would run as one on the CPU: mlirc-cpu-merge-small-kernels
    is off here, so that the wrapper has buffers to plan.)"""
    monkeypatch.setattr(config, "merge_kib", -1)
    args = [torch.randn(8, 8), torch.randn(*other_shape)]
    source = wrapper_source(_held_then_reallocated, args, tmp_path)
    assert bool(re.search(r"(buf\d+) = (buf\d+); del \2", source)) == reused, source
    compile_and_compare(_held_then_reallocated, *args)


def _scaled_sigmoid(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * 2.0 + bias


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 1, 4, 3), (3, 16, 1, 1), (0, 3, 4, 4)])
def test_channels_last_arguments_read_by_kernels_are_not_permuted(shape, tmp_path):
    """A channels-last argument that only generated kernels read (they take its
    address) is checked dense channels-last, not viewed as NHWC first: a permute is a
    dispatched op per argument and call (~90 per CNN training step).  Given other
    strides at run time, it is copied channels-last; a unit channel or pixel dim and
    no elements at all stay eager's."""
    x = torch.randn(shape).to(memory_format=torch.channels_last)
    bias = torch.randn(shape[1], 1, 1)
    source = wrapper_source(_scaled_sigmoid, (x, bias), tmp_path)
    assert ".permute(" not in source, source
    nhwc = layouts.plan(x.shape, x.stride()) is not None  # else its memory is row-major too
    assert ("memory_format=torch.channels_last" in source) == nhwc, source
    expected, actual = _scaled_sigmoid(x, bias), torch.compile(_scaled_sigmoid, backend="mlirc")(x, bias)
    torch.testing.assert_close(actual, expected)
    assert actual.stride() == expected.stride()
    torch._dynamo.reset()
    region = compile_region(torch.fx.experimental.proxy_tensor.make_fx(_scaled_sigmoid)(x, bias))
    row_major = x.contiguous()  # the same values in NCHW memory: copied channels-last on entry
    (result,) = region.call(row_major, bias)
    torch.testing.assert_close(result, expected)
