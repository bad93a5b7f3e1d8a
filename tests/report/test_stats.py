"""runner.report.stats against direct computations on fixed numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.report import stats

SCORES = [3.0, 9.0, 1.0, 7.0, 4.0, 10.0, 2.0, 8.0, 6.0, 5.0]


def _hand_bootstrap(values, statistic, *, resamples=20_000, seed=123, confidence=0.95):
    """A plain numpy percentile bootstrap, independent of scipy's implementation."""
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(resamples, arr.size))
    boots = np.array([statistic(arr[row]) for row in idx])
    alpha = (1 - confidence) / 2
    return float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha))


def _hand_iqm(values):
    arr = np.sort(np.asarray(values, dtype=float))
    cut = int(0.25 * arr.size)  # whole values trimmed from each end, as scipy's trim_mean
    return float(arr[cut : arr.size - cut].mean())


def test_mean_std_is_sample_std():
    mean, std = stats.mean_std([2.0, 4.0, 6.0])
    assert mean == pytest.approx(4.0)
    assert std == pytest.approx(2.0)  # sqrt(((-2)^2 + 0 + 2^2) / (3 - 1))
    assert stats.mean_std([5.0]) == (5.0, 0.0)
    assert all(math.isnan(x) for x in stats.mean_std([]))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2, 3, 4, 5, 6, 7, 8], 4.5),  # drops 1, 2 and 7, 8
        (SCORES, 5.5),  # n=10: two trimmed from each end -> mean(3..8)
        ([0, 0, 0, 100], 0.0),  # the outlier does not move it
    ],
)
def test_iqm_fixed_numbers(values, expected):
    assert stats.iqm(values) == pytest.approx(expected)
    assert stats.iqm(values) == pytest.approx(_hand_iqm(values))


def test_bootstrap_ci_of_mean_matches_hand_rolled():
    low, high = stats.bootstrap_ci(SCORES)
    hand_low, hand_high = _hand_bootstrap(SCORES, np.mean)
    # Different random streams: the intervals agree to Monte-Carlo error, not bit for bit.
    assert low == pytest.approx(hand_low, abs=0.15)
    assert high == pytest.approx(hand_high, abs=0.15)
    assert low < np.mean(SCORES) < high
    # Normal approximation as a sanity bound: mean +- 1.96 * sd / sqrt(n) ~ [3.72, 7.28].
    assert 3.4 < low < 4.0 and 7.0 < high < 7.6


def test_bootstrap_ci_is_reproducible_and_degenerate_cases():
    assert stats.bootstrap_ci(SCORES) == stats.bootstrap_ci(SCORES)
    assert stats.bootstrap_ci([3.0]) == (3.0, 3.0)
    assert stats.bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert all(math.isnan(x) for x in stats.bootstrap_ci([]))


def test_iqm_ci_matches_hand_rolled():
    point, low, high = stats.iqm_ci(SCORES)
    hand_low, hand_high = _hand_bootstrap(SCORES, _hand_iqm)
    assert point == pytest.approx(5.5)
    assert low == pytest.approx(hand_low, abs=0.2)
    assert high == pytest.approx(hand_high, abs=0.2)
    assert low <= point <= high


def test_paired_differences_fixed_numbers():
    baseline = {0: 1.0, 1: 2.0, 2: 3.0, 4: 7.0}
    other = {0: 2.0, 1: 1.0, 2: 5.0, 3: 9.0}  # seed 3 unpaired, seed 4 missing: both ignored
    res = stats.paired_differences(baseline, other)
    assert res["seeds"] == [0, 1, 2]
    assert res["differences"] == pytest.approx([1.0, -1.0, 2.0])
    assert res["mean"] == pytest.approx(2.0 / 3.0)
    assert (res["wins"], res["losses"], res["ties"]) == (2, 1, 0)
    hand_low, hand_high = _hand_bootstrap([1.0, -1.0, 2.0], np.mean)
    assert res["ci95"][0] == pytest.approx(hand_low, abs=0.15)
    assert res["ci95"][1] == pytest.approx(hand_high, abs=0.15)


def test_paired_differences_without_common_seeds():
    res = stats.paired_differences({0: 1.0}, {1: 2.0})
    assert res["seeds"] == [] and res["wins"] == 0
    assert math.isnan(res["mean"])
