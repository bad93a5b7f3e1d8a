"""The verdict `rlcrate reproduce` gives, in process: archived against rerun eval results per
unit, per variant (identical; different at a bitwise level; else SciPy's Mann-Whitney U test at
alpha) and overall. The rerun itself is tests/archive/test_reproduce.py's."""

from __future__ import annotations

import pytest

from runner.archive import verdict
from runner.archive.verdict import DIFFERENT, IDENTICAL, WITHIN, VariantResult
from runner.provenance.determinism import BITWISE
from runner.record.eval import EvalRecord


def _eval(*returns: float) -> EvalRecord:
    import numpy as np

    return EvalRecord(
        episodes=[{"return": r, "length": 10} for r in returns],
        mean=float(np.mean(returns)), std=float(np.std(returns)),
    )  # fmt: skip


def test_a_unit_result_says_whether_its_returns_are_the_same():
    same = verdict.unit_result("default/seed-0", 0, _eval(1.0, 2.0), _eval(1.0, 2.0))
    assert same.identical and same.diff == 0.0
    moved = verdict.unit_result("default/seed-0", 0, _eval(1.0, 2.0), _eval(2.0, 3.0))
    assert not moved.identical and moved.diff == pytest.approx(1.0)
    lost = verdict.unit_result("default/seed-0", 0, _eval(1.0), None)
    assert not lost.identical and lost.rerun is None and lost.diff is None


def _variant(level: str, *units) -> VariantResult:
    return VariantResult("default", level, "why", list(units))


SAME = verdict.unit_result("u", 0, _eval(1.0, 2.0), _eval(1.0, 2.0))
MOVED = verdict.unit_result("u", 1, _eval(1.0, 2.0), _eval(1.5, 2.0))
LOST = verdict.unit_result("u", 2, _eval(1.0, 2.0), None)
LOW = [float(x) for x in range(20)]
HIGH = [x + 100.0 for x in LOW]


@pytest.mark.parametrize(
    ("level", "units", "old", "new", "same_env", "want", "note"),
    [
        ("statistical", [SAME, LOST], LOW, LOW, True, DIFFERENT, "no eval result"),
        (BITWISE, [SAME, SAME], LOW, LOW, True, IDENTICAL, ""),
        (BITWISE, [SAME, MOVED], LOW, LOW, True, DIFFERENT, "bitwise level"),
        (BITWISE, [SAME, MOVED], LOW, LOW[::-1], False, WITHIN, "p = 1"),  # another machine
        ("statistical", [MOVED], [1.0], [2.0], True, DIFFERENT, "too few episodes"),
        ("statistical", [MOVED], LOW, LOW[::-1], True, WITHIN, "p = 1 vs alpha 0.05"),
        ("statistical", [MOVED], LOW, HIGH, True, DIFFERENT, "vs alpha 0.05"),
    ],
)
def test_a_variants_verdict(level, units, old, new, same_env, want, note):
    v = _variant(level, *units)
    verdict.judge(v, old, new, alpha=0.05, same_env=same_env)
    assert v.verdict == want and note in v.note, (v.verdict, v.note)


def test_tied_samples_are_the_same_only_when_equal():
    assert verdict.mann_whitney([3.0, 3.0], [3.0, 3.0]) == 1.0
    assert verdict.mann_whitney([3.0, 3.0, 3.0], [3.0, 3.0, 3.0]) == 1.0
    assert verdict.mann_whitney(LOW, HIGH) < 1e-6


def test_the_overall_verdict_is_the_worst_variants():
    def of(*verdicts: str) -> str:
        return verdict.overall([VariantResult(f"v{i}", BITWISE, "", verdict=x)
                                for i, x in enumerate(verdicts)])  # fmt: skip

    assert of(IDENTICAL, IDENTICAL) == IDENTICAL
    assert of(IDENTICAL, WITHIN) == WITHIN
    assert of(WITHIN, DIFFERENT, IDENTICAL) == DIFFERENT
    assert of() == DIFFERENT  # nothing compared is not a reproduction
