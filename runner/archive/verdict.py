"""Archived vs rerun eval results: per unit, per variant, and one verdict.

`identical`: every rerun unit's eval returns equal the archived ones exactly. Otherwise, where
the variant's determinism level is bitwise (and the environment matches), `different`; where it
is statistical, SciPy's Mann-Whitney U test on the eval episode returns, two-sided, at
alpha / (number of variants): `within tolerance` when it does not reject, else `different`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from runner.provenance.determinism import BITWISE
from runner.record.eval import EvalRecord

IDENTICAL, WITHIN, DIFFERENT = "identical", "within tolerance", "different"
ORDER = (IDENTICAL, WITHIN, DIFFERENT)
TEST_NAME = "Mann-Whitney U (scipy.stats.mannwhitneyu), two-sided"


@dataclass
class UnitResult:
    key: str
    seed: int
    archived: float | None
    rerun: float | None
    identical: bool

    @property
    def diff(self) -> float | None:
        if self.archived is None or self.rerun is None:
            return None
        return self.rerun - self.archived


@dataclass
class VariantResult:
    name: str
    level: str
    why: str
    units: list[UnitResult] = field(default_factory=list)
    verdict: str = DIFFERENT
    p_value: float | None = None
    note: str = ""


def unit_result(key: str, seed: int, old: EvalRecord | None, new: EvalRecord | None) -> UnitResult:
    same = old is not None and new is not None and old.returns() == new.returns()
    return UnitResult(key, seed, old.mean if old else None, new.mean if new else None, same)


def mann_whitney(a: list[float], b: list[float]) -> float:
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if math.isnan(p):  # every value tied: no evidence either way unless the samples differ
        return 1.0 if sorted(a) == sorted(b) else 0.0
    return p


def judge(
    v: VariantResult, old_eps: list[float], new_eps: list[float], alpha: float, same_env: bool
) -> None:
    """Fill in the variant's verdict from its units and pooled episode returns."""
    if any(u.rerun is None for u in v.units):
        v.verdict, v.note = DIFFERENT, "a rerun unit has no eval result"
        return
    if all(u.identical for u in v.units):
        v.verdict = IDENTICAL
        return
    if v.level == BITWISE and same_env:
        v.verdict, v.note = DIFFERENT, "bitwise level: any difference is a difference"
        return
    if len(old_eps) < 2 or len(new_eps) < 2:
        v.verdict, v.note = DIFFERENT, "too few episodes for a test"
        return
    v.p_value = mann_whitney(old_eps, new_eps)
    v.verdict = WITHIN if v.p_value >= alpha else DIFFERENT
    v.note = f"p = {v.p_value:.3g} vs alpha {alpha:.3g}"


def overall(variants: list[VariantResult]) -> str:
    return max((v.verdict for v in variants), key=ORDER.index, default=DIFFERENT)
