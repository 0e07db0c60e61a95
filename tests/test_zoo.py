"""Real architectures (benchmarks/zoo.py) through mlirc: models it was not written or
tuned on, compiled whole and compared with eager, statically and with symbolic sizes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

import mlirc

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import zoo  # noqa: E402


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return ((actual - expected).abs().max() / expected.abs().max()).item()


@pytest.mark.parametrize("case", ["resnet18@1", "t5_small_encoder@1", "llama_gqa@1"])
def test_zoo_model_matches_eager(case):
    model, inputs = zoo.make_case(case)
    torch._dynamo.reset()
    mlirc.reset_stats()
    with torch.no_grad():
        expected = model(*inputs)
        actual = torch.compile(model, backend="mlirc")(*inputs)
    assert expected.abs().max() > 0  # random weights give an output worth comparing
    assert relative_error(actual, expected) < 1e-4
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.failed_regions == 0, stats.summary()


def test_zoo_encoder_at_new_batch_sizes_and_lengths():
    """dynamic=True on a real encoder: every batch size and sequence length goes
    through the one symbolic graph Dynamo traced, compiled, matching eager."""
    model, _ = zoo.make_case("electra_small@1")
    torch._dynamo.reset()
    counters.clear()
    mlirc.reset_stats()
    compiled = torch.compile(model, backend="mlirc", dynamic=True)
    with torch.no_grad():
        for batch, length in [(2, 128), (3, 128), (7, 37), (2, 64)]:
            ids = torch.randint(0, model.model.config.vocab_size, (batch, length))
            assert relative_error(compiled(ids), model(ids)) < 1e-4
    assert counters["stats"]["unique_graphs"] == 1
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.symbolic_graphs == 1, stats.summary()
