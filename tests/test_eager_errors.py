"""Eager's answer or eager's exception: bad indices, integer division by zero,
INT_MIN / -1, IEEE special values, empty extrema, overflowing fill values.

Each case runs eagerly and compiled on the same inputs; both must raise the same
exception type, or both return the same values.  Cases that raise must do so from
compiled code (a run-time check), not because the op fell back to eager.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same_outcome, wrapper_source

import mlirc

T = torch.tensor
X = torch.randn(3, 4)


def unpool(p, i):
    return F.max_unpool2d(p, i, 2)


# (name, fn, args): an index outside what eager accepts, in every op that takes one.
BAD_INDICES = [
    ("index_select", lambda x, i: torch.index_select(x, 0, i), (X, T([3]))),
    ("index_select_negative", lambda x, i: torch.index_select(x, 0, i), (X, T([-1]))),
    ("gather", lambda x, i: torch.gather(x, 1, i), (X, T([[0], [4], [1]]))),
    ("gather_negative", lambda x, i: torch.gather(x, 0, i), (X, T([[-1]]))),
    ("getitem", lambda x, i: x[i], (X, T([3]))),
    ("getitem_negative", lambda x, i: x[i], (X, T([1, -4]))),
    ("getitem_2d", lambda x, i, j: x[i, j], (X, T([0]), T([5]))),  # not x[1, 1] of the flattened tensor
    ("getitem_int32", lambda x, i: x[:, i], (X, T([4], dtype=torch.int32))),
    ("embedding", lambda w, i: F.embedding(i, w), (X, T([[0, 3]]))),
    ("embedding_negative", lambda w, i: F.embedding(i, w), (X, T([-1]))),
    ("index_put", lambda x, i: x.index_put((i,), T(1.0)), (X, T([3]))),
    ("index_put_accumulate", lambda x, i: x.index_put((i,), T(1.0), accumulate=True), (X, T([-4]))),
    ("scatter", lambda x, i: x.scatter(0, i, 1.0), (X, T([[3]]))),
    ("scatter_add", lambda x, i: x.scatter_add(1, i, x), (X, T([[0, 4]]))),
    ("scatter_reduce", lambda x, i: x.scatter_reduce(0, i, x, "amax"), (X, T([[-1]]))),
    ("index_add", lambda x, i: x.index_add(0, i, x[:1]), (X, T([3]))),
    ("index_add_negative", lambda x, i: x.index_add(0, i, x[:1]), (X, T([-1]))),
    ("index_copy", lambda x, i: x.index_copy(0, i, x[:1]), (X, T([-1]))),
    ("index_fill", lambda x, i: x.index_fill(0, i, 1.0), (X, T([-4]))),
    ("index_reduce", lambda x, i: x.index_reduce(0, i, x[:1], "amax"), (X, T([3]))),
    ("take", lambda x, i: torch.take(x, i), (X, T([12]))),
    ("take_negative", lambda x, i: torch.take(x, i), (X, T([-13]))),
    ("take_0d", lambda x, i: torch.take(x, i), (torch.randn(()), T(1))),  # a 0-d index: not `.item()`
    ("nll_loss", lambda x, t: F.nll_loss(x, t), (X, T([0, 4, 1]))),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), (X, T([0, -1, 1]))),
    (
        "searchsorted_sorter",
        lambda s, v, i: torch.searchsorted(s, v, sorter=i),
        (T([3.0, 1, 2]), T([2.0]), T([1, 2, 5])),
    ),
    ("max_unpool_negative", unpool, (torch.randn(1, 2, 2, 2), T([[[[0, 1], [2, 15]], [[0, 1], [2, -1]]]]))),
    ("max_unpool_next_plane", unpool, (torch.randn(1, 2, 2, 2), T([[[[0, 1], [2, 16]], [[0, 1], [2, 3]]]]))),
    *(  # any index into an empty dim (an empty tensor's data pointer may be null)
        ("gather_from_empty", lambda x, i: torch.gather(x.clone(), 0, i), (torch.randn(0, 5), T([[0, 0], [3, 0]]))),
        ("index_select_from_empty", lambda x, i: torch.index_select(x, 0, i), (torch.randn(0, 5), T([0, 0, 0]))),
        ("embedding_from_empty", lambda w, i: F.embedding(i, w), (torch.randn(0, 4), T([[0, 0, 0]]))),
    ),
]

# Indices eager accepts, near the edges (negative ones wrap where eager wraps them).
GOOD_INDICES = [
    ("getitem_negative", lambda x, i: x[i], (X, T([-3, 2]))),
    ("index_fill_negative", lambda x, i: x.index_fill(0, i, 1.0), (X, T([-1]))),
    ("take_negative", lambda x, i: torch.take(x, i), (X, T([-12, 11]))),
    ("take_0d", lambda x, i: torch.take(x, i), (X, T(-5))),
    ("nll_loss_ignore", lambda x, t: F.nll_loss(x, t), (X, T([0, -100, 3]))),
    ("index_empty", lambda x, i: x[i], (X, T([], dtype=torch.int64))),
]


@pytest.mark.parametrize("name,fn,args", BAD_INDICES, ids=[c[0] for c in BAD_INDICES])
def test_bad_index_raises_eager_error(name, fn, args):
    assert assert_same_outcome(fn, *args) is not None
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()  # raised by compiled code


@pytest.mark.parametrize("name,fn,args", [c for c in BAD_INDICES if "empty" in c[0]], ids=lambda c: str(c))
def test_bad_index_into_an_empty_dim_with_symbolic_sizes(name, fn, args):
    """The same with dynamic=True: the empty dim is static (Dynamo specializes 0), the
    others symbolic, and the kernels are formed before the sizes are known."""
    assert assert_same_outcome(fn, *args, dynamic=True) is not None
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


@pytest.mark.parametrize("name,fn,args", GOOD_INDICES, ids=[c[0] for c in GOOD_INDICES])
def test_edge_indices_match_eager(name, fn, args):
    assert assert_same_outcome(fn, *args) is None


def test_checks_are_left_out_where_indices_are_known(tmp_path):
    """arange and clamp bound an index: no run-time check; an input index: one."""
    x = torch.randn(5, 7)
    known = wrapper_source(
        lambda x, i: (x[torch.arange(5), i.clamp(0, 6)], x[1:4][torch.arange(3) - 3]), (x, T([9])), tmp_path
    )
    assert "raise" not in known
    unknown = wrapper_source(lambda x, i: x[i], (x, T([1])), tmp_path / "b")
    assert unknown.count("raise IndexError") == 1


INTS = (torch.int8, torch.int16, torch.int32, torch.int64)


DIVISIONS = {
    "floordiv": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "fmod": torch.fmod,
    "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", sorted(DIVISIONS))
def test_integer_division(name, dtype):
    """A zero divisor: eager's ZeroDivisionError; INT_MIN / -1: eager's wrapped values, no SIGFPE."""
    op, info = DIVISIONS[name], torch.iinfo(dtype)
    a = T([info.min, info.max, 7, -7, 0, info.min], dtype=dtype)
    b = T([-1, -1, 2, -2, 3, 1], dtype=dtype)
    if name == "trunc" and dtype in (torch.int32, torch.int64):
        # eager's own trunc division traps (SIGFPE) on INT_MIN / -1; mlirc wraps, as floordiv does
        assert torch.compile(op, backend="mlirc")(a, b).tolist() == [info.min, -info.max, 3, 3, 0, info.min]
    else:
        assert_same_outcome(op, a, b)
    torch._dynamo.reset()
    error = assert_same_outcome(op, a, T([1, 2, 0, 1, 1, 1], dtype=dtype))
    assert error is not None and "ZeroDivisionError" in str(error)


def test_integer_division_by_python_zero():
    assert assert_same_outcome(lambda a: a // 0, T([1, 2])) is not None


SPECIAL = T([float("nan"), float("inf"), -float("inf"), 7.0, -7.0, -0.0, 0.0, 1e-40, 3e38])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x // 3.0,
        lambda x: torch.div(x, x.flip(0), rounding_mode="floor"),
        lambda x: x // -0.0,
        torch.sign,
        lambda x: torch.remainder(x, 2.5),
    ],
)
def test_float_special_values(fn):
    assert_same_outcome(fn, SPECIAL.clone())


@pytest.mark.parametrize(
    "fn,x",
    [
        (lambda x: x.max(), torch.empty(0)),
        (lambda x: x.min(), torch.empty(0)),
        (lambda x: torch.max(x, 0), torch.empty(0, 3)),
        (lambda x: x.amax(1) + 1, torch.empty(0, 3)),  # nothing asked: an empty result, as eager
    ],
)
def test_empty_extrema(fn, x):
    assert_same_outcome(fn, x)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.where(x > 0, x, 1e39),
        lambda x: x.masked_fill(x > 0, -1e39),
        lambda x: x.clamp(max=1e39),
        lambda x: F.pad(x, (1, 1), value=1e39),
        lambda x: x + 1e39,  # arithmetic does not check: inf
        lambda x: torch.full_like(x, 1e39, dtype=torch.float64) + x,
        lambda x: torch.where(x > 0, x.int(), 2**40),
        lambda x: x.long() + 2**63,  # wraps, as eager
        lambda x: x.int() * 2**40,
        lambda x: x.to(torch.int8) + 300,
    ],
)
def test_scalars_beyond_the_dtype(fn):
    assert_same_outcome(fn, X * 10)


def test_addmm_beta_zero_ignores_input():
    bias = torch.full((3, 3), float("nan"))
    assert_same_outcome(lambda i, a, b: torch.addmm(i, a, b, beta=0), bias, X, X.t().contiguous())


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b, c: a.addcmul(b, c, value=0.5),  # a float value on integers: eager raises
        lambda a, b, c: a.addcmul(b, c, value=3),
    ],
    ids=["float_value", "int_value"],
)
def test_addcmul_on_integers(fn):
    """(An integer addcdiv never reaches mlirc: Dynamo's fake tensors raise first.)"""
    a, b, c = (torch.randint(1, 9, (4, 5)) for _ in range(3))
    assert_same_outcome(fn, a, b, c)


# Eager's checks on argument values (ATen's TORCH_CHECKs), each a run-time check in the
# compiled code: (name, fn, args); the value at fault, then a valid call beside it.
VALUE_CHECKS = [
    ("bce_input_above_one", lambda p, t: F.binary_cross_entropy(p, t), (T([0.2, 1.5, 0.7]), T([0.0, 1.0, 0.5]))),
    (
        "bce_input_negative",
        lambda p, t: F.binary_cross_entropy(p, t, reduction="none"),
        (T([-0.1, 0.5]), T([1.0, 0.0])),
    ),
    ("bce_input_nan", lambda p, t: F.binary_cross_entropy(p, t), (T([0.5, float("nan")]), T([1.0, 0.0]))),
    ("bce_target_above_one", lambda p, t: F.binary_cross_entropy(p, t), (T([0.2, 0.7]), T([0.0, 3.0]))),
    ("bce_weighted", lambda p, t, w: F.binary_cross_entropy(p, t, w), (T([0.2, 2.0]), T([0.0, 1.0]), T([1.0, 2.0]))),
    ("one_hot_too_large", lambda t: F.one_hot(t, 3), (T([0, 5]),)),
    ("one_hot_negative", lambda t: F.one_hot(t, 3) * 2, (T([0, -1]),)),
    ("histc_range_of_inf", lambda x: torch.histc(x, 4), (T([1.0, float("inf")]),)),
    ("histc_range_of_nan", lambda x: torch.histc(x, 4), (T([1.0, float("nan")]),)),
]
VALID_VALUES = [
    ("bce_edges", lambda p, t: F.binary_cross_entropy(p, t), (T([0.0, 1.0, 0.5]), T([0.0, 1.0, 0.25]))),
    ("bce_empty", lambda p, t: F.binary_cross_entropy(p, t, reduction="sum"), (torch.rand(0), torch.rand(0))),
    ("one_hot", lambda t: F.one_hot(t, 4), (T([[0, 3], [2, 1]]),)),
    ("histc_of_the_data_range", lambda x: torch.histc(x, 5), (T([1.0, 4.0, 2.0, 2.5]),)),
]


@pytest.mark.parametrize("name,fn,args", VALUE_CHECKS, ids=[c[0] for c in VALUE_CHECKS])
def test_value_checks_raise_eager_error(name, fn, args):
    error = assert_same_outcome(fn, *args)
    assert error is not None
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()  # raised by compiled code


@pytest.mark.parametrize("name,fn,args", VALID_VALUES, ids=[c[0] for c in VALID_VALUES])
def test_valid_values_pass_the_checks(name, fn, args):
    assert assert_same_outcome(fn, *args) is None
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


def test_bernoulli_probabilities_outside_the_unit_interval():
    """bernoulli's own draw runs eagerly (torch's generator); its check is compiled."""
    for p in (T([0.5, 1.5]), T([-0.5]), T([float("nan")])):
        torch._dynamo.reset()
        error = assert_same_outcome(lambda p: torch.bernoulli(p), p)
        assert error is not None and "p_in >= 0" in str(error)


@pytest.mark.parametrize("dtype", [*INTS, torch.uint8, torch.bool], ids=str)
@pytest.mark.parametrize("exponent", [-1, -2])
def test_integer_to_a_negative_power(dtype, exponent):
    """Eager rejects the call whatever the values (an empty tensor too); pow_ as well
    (of a bool tensor, Dynamo's fake tensors raise before mlirc sees it)."""
    x = T([1, 2, 3]).to(dtype)
    error = assert_same_outcome(lambda x: x**exponent, x)
    assert error is not None and "negative integer powers" in str(error)
    torch._dynamo.reset()
    assert assert_same_outcome(lambda x: x**exponent, x[:0]) is not None
    if dtype != torch.bool:
        torch._dynamo.reset()
        assert assert_same_outcome(lambda x: x.clone().pow_(exponent), x) is not None


def test_index_add_source_of_the_wrong_shape():
    """PyTorch's decomposition would broadcast the source: ATen's shape checks raise
    first (the graph then runs eagerly, to raise eager's error).  (A count of indices
    unlike the source's dim never reaches mlirc: Dynamo's fake tensors raise.)"""
    x = torch.zeros(3, 2)
    for source in (torch.ones(2), torch.ones(2, 3)):
        torch._dynamo.reset()
        assert assert_same_outcome(lambda x, i, s: x.index_add(0, i, s), x, T([0, 1]), source) is not None
    torch._dynamo.reset()
    assert assert_same_outcome(lambda x, i, s: x.index_add(0, i, s, alpha=2), x, T([0, 2]), torch.ones(2, 2)) is None
