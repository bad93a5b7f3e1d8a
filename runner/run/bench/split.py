"""Where a training step's time goes at one bench point: the one computation behind every
sentence the bench says about it, and what its measurements can support.

With a profile (`bench.profile`), the profile's parts, measured inside training, say it
(`profile_report.bottleneck`). Otherwise the three rates do: the env's share as timed inside
training (`env_fraction`; else env-only's time per step), what policy inference adds (env +
inference's time per step less env-only's) and the update (the rest). Those are separate runs,
so inference and the update are told apart only where the runs support it: at least two repeats,
the rates' ranges (min-max over the repeats) ordered as the parts are (env-only faster than env +
inference, faster than training), and the env and inference fitting inside a training step.
Otherwise the sentence gives the env's share and says why the rest is not split. A part "bounds
training" only when it leads the next by BOUND_MARGIN of a step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BOUND_MARGIN = 0.1  # a share ahead of the next by less than this bounds nothing on its own


@dataclass(frozen=True)
class Rate:
    median: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.median:,.0f} [{self.low:,.0f}–{self.high:,.0f}]"


def rate(p: dict[str, Any], key: str) -> Rate | None:
    m = (p.get(key) or {}).get("steps_per_s")
    if not m or not m.get("median"):
        return None
    return Rate(float(m["median"]), float(m["min"]), float(m["max"]))


def repeats(p: dict[str, Any], key: str = "train") -> int:
    return len(((p.get(key) or {}).get("steps_per_s") or {}).get("runs") or [])


def apart(a: Rate, b: Rate) -> bool:
    """Whether two rates' ranges do not overlap (the difference is larger than the spread)."""
    return a.low > b.high or b.low > a.high


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _bound(shares: dict[str, float]) -> str:
    top, *rest = sorted(shares, key=lambda k: -shares[k])
    if rest and shares[top] - shares[rest[0]] < BOUND_MARGIN:
        close = f"{100 * BOUND_MARGIN:.0f} points of a step"
        return f"no one part bounds training ({top} and {rest[0]} within {close})"
    return f"{top} {'bound' if ' and ' in top else 'bounds'} training"


def sentence(p: dict[str, Any]) -> str | None:
    """The point's one sentence on where a training step goes; None without a training rate."""
    if p.get("profile"):
        from runner.run.bench.profile_report import bottleneck

        return bottleneck(p)
    env, inference, train = rate(p, "env_only"), rate(p, "inference"), rate(p, "train")
    found = _env_share(p, env, train) if train is not None else None
    if train is None or found is None:
        return None
    env_share, how = found
    head = (
        f"{p['label']}: a training step takes {1e6 / train.median:,.0f} µs: the env "
        f"{_pct(env_share)} ({how})"
    )
    why = _not_apart(env, inference, train, repeats(p), env_share)
    if why is None and env is not None and inference is not None:
        inference_share = (1 / inference.median - 1 / env.median) * train.median
        shares = {
            "the env": env_share,
            "policy inference": inference_share,
            "the update": 1 - env_share - inference_share,
        }
        return (
            f"{head}, policy inference {_pct(inference_share)}, the update "
            f"{_pct(shares['the update'])}: {_bound(shares)}"
        )
    rest = "policy inference and the update"
    bound = _bound({"the env": env_share, rest: 1 - env_share})
    return f"{head}, {rest} together {_pct(1 - env_share)} ({why}): {bound}"


def _env_share(p: dict[str, Any], env: Rate | None, train: Rate) -> tuple[float, str] | None:
    """The env's share of a training step, and how it was measured."""
    fraction = p["train"].get("env_fraction")
    if fraction is not None:
        return float(fraction), "timed inside training"
    if env is None:
        return None
    return min(1.0, train.median / env.median), "env-only's time per step"


def _not_apart(
    env: Rate | None, inference: Rate | None, train: Rate, runs: int, env_share: float
) -> str | None:
    """Why the measurements do not separate inference from the update; None when they do."""
    if env is None or inference is None:
        return "not measured apart by this trainer"
    if runs < 2:
        return "one repeat: no spread to tell them apart by; bench.repeats 2 or more"
    if train.median >= inference.median:
        return (
            f"training measured as fast as env + inference, {train.text()} vs "
            f"{inference.text()} steps/s: the runs vary more than inference costs"
        )
    if not (apart(env, inference) and apart(inference, train)):
        return (
            f"the rates' ranges overlap: env-only {env.text()}, env + inference "
            f"{inference.text()}, training {train.text()} steps/s"
        )
    inference_s = 1 / inference.median - 1 / env.median
    if env_share + inference_s * train.median >= 1:
        return "the env's time inside training and what inference adds outside it exceed a step"
    return None
