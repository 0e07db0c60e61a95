"""The CI part of the OpInfo sweep: results must equal tests/opinfo_expected.tsv.

Any change fails, an improvement as much as a regression, so the file always tells
the truth; `python tests/opinfo_sweep.py --update` rewrites it after a real change.
And whatever the file says, no (op, dtype) may give a wrong answer.
"""

import os

import pytest
from opinfo_sweep import CI_SAMPLES, all_cases, compare_with_expected, read_expected, summary, sweep

pytestmark = pytest.mark.skipif(os.environ.get("MLIRC_SKIP_OPINFO") == "1", reason="MLIRC_SKIP_OPINFO=1")


@pytest.fixture(scope="module")
def results():
    return sweep(all_cases(), "mlirc", max_samples=CI_SAMPLES, jobs=os.cpu_count() or 1, progress=False)


def test_no_wrong_answers(results):
    wrong = [f"{r.case}: {r.reason}" for r in results if r.status == "wrong"]
    assert not wrong, "\n".join(wrong)


def test_matches_expectations(results):
    problems = compare_with_expected(results, read_expected())
    assert not problems, summary(results, "mlirc") + "\n\n" + "\n".join(problems)
