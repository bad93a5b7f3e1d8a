"""Statistics for comparing agents across seeds: mean/std, IQM, bootstrap CIs, paired differences.

The interquartile mean follows Agarwal et al. (2021), "Deep RL at the Edge of the Statistical
Precipice": the mean of the middle 50% of the values (scipy's `trim_mean` with 25% cut).
Confidence intervals come from `scipy.stats.bootstrap` (percentile method, fixed RNG seed so a
report is reproducible).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# NumPy is imported where a statistic is computed: `iqm_note` is read by `rlcrate status`, which
# computes none.

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0.0 for a single value)."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan")
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return float(arr.mean()), std


IQM_TRIM = 0.25


def iqm(values: Sequence[float], axis: int | None = None) -> Any:
    """Interquartile mean: the mean after trimming 25% from each end (under 4 values nothing is
    trimmed: the mean, without importing SciPy, which costs a short run a second)."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    n = arr.size if axis is None else arr.shape[axis]
    if int(IQM_TRIM * n) == 0:
        return np.mean(arr, axis=axis)
    from scipy.stats import trim_mean

    return trim_mean(arr, IQM_TRIM, axis=axis)


def iqm_note(seed_counts: set[int]) -> str | None:
    """Why the IQM equals the mean, when it does: trim_mean cuts int(25% of n) values from each
    end, none for fewer than 4 seeds. None when every count trims something (or is 1 seed)."""
    small = sorted(n for n in seed_counts if n > 1 and int(IQM_TRIM * n) == 0)
    if not small:
        return None
    n = " or ".join(str(k) for k in small)
    return (
        f"with {n} seeds the IQM trims no seed (25% of {n} rounds down to 0 at each end), "
        "so it equals the mean; it differs from 4 seeds up"
    )


def bootstrap_ci(
    values: Sequence[float],
    statistic: Callable[..., Any] | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of `statistic` over `values`.

    With fewer than two values (or no spread at all) the interval collapses to the point.
    `statistic`: NumPy's mean when None.
    """
    import numpy as np

    statistic = np.mean if statistic is None else statistic
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan")
    point = float(statistic(arr))
    if arr.size < 2 or np.all(arr == arr[0]):
        return point, point
    from scipy.stats import bootstrap

    res = bootstrap(
        (arr,),
        statistic,
        vectorized=True,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def iqm_ci(values: Sequence[float], **kw: Any) -> tuple[float, float, float]:
    """IQM and its bootstrap CI: (iqm, low, high)."""
    low, high = bootstrap_ci(values, lambda x, axis=-1: iqm(x, axis=axis), **kw)
    return float(iqm(values)), low, high


def paired_differences(
    baseline: dict[int, float], other: dict[int, float], **kw: Any
) -> dict[str, Any]:
    """Per-seed differences other - baseline over the seeds both have.

    Returns the differences, their mean with a bootstrap CI, and who won on how many seeds.
    """
    import numpy as np

    seeds = sorted(set(baseline) & set(other))
    diffs = [other[s] - baseline[s] for s in seeds]
    mean = float(np.mean(diffs)) if diffs else float("nan")
    low, high = bootstrap_ci(diffs, **kw) if diffs else (float("nan"), float("nan"))
    return {
        "seeds": seeds,
        "differences": diffs,
        "mean": mean,
        "ci95": [low, high],
        "wins": sum(d > 0 for d in diffs),
        "losses": sum(d < 0 for d in diffs),
        "ties": sum(d == 0 for d in diffs),
    }
