"""How a schedule is written in a manifest: a number, `lin_<value>` (rl-baselines3-zoo's spelling:
the value falls linearly to 0 over training) or `{schedule: linear, start: A, end: B}`. Both
schedule forms resolve to the mapping, which is what resolved.yaml shows; the SB3 trainer turns
it into a function of the remaining progress (runner/trainers/sb3/hyperparams.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

# SB3 arguments that accept a schedule (a function of the remaining progress); the zoo's list.
SCHEDULE_KEYS = ("learning_rate", "clip_range", "clip_range_vf", "delta_std")
SCHEDULE_FIELDS = ("schedule", "start", "end")
SCHEDULE_HELP = (
    "expected a number, lin_<number> or {schedule: linear, start: <number>, end: <number>}"
)
_LIN = re.compile(r"^lin_(.+)$")

# Where each schedulable value, and the rates beside them, must stay over the whole of training:
# (lowest, highest). A learning rate below 0 is gradient ascent; a rate above 1 is no rate.
RANGES: dict[str, tuple[float, float | None]] = {
    "learning_rate": (0.0, None),
    "clip_range": (0.0, None),
    "clip_range_vf": (0.0, None),
    "delta_std": (0.0, None),
    "gamma": (0.0, 1.0),
    "gae_lambda": (0.0, 1.0),
    "tau": (0.0, 1.0),
    "exploration_fraction": (0.0, 1.0),
    "exploration_initial_eps": (0.0, 1.0),
    "exploration_final_eps": (0.0, 1.0),
}

Issue = tuple[tuple[str, ...], str]  # (field path under algo.params, message)


def number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def parse_schedule(value: Any) -> dict[str, Any] | None:
    """The mapping form of a schedule, None for a plain value; ValueError for a malformed one."""
    if isinstance(value, str):
        m = _LIN.match(value)
        if m is None:
            return None  # not a schedule at all: the signature check says what was expected
        try:
            start = float(m.group(1))
        except ValueError:
            raise ValueError(f"{value!r} is not a schedule; {SCHEDULE_HELP}") from None
        if not math.isfinite(start):
            raise ValueError(f"{value!r} is not a schedule; {SCHEDULE_HELP}")
        return {"schedule": "linear", "start": start, "end": 0.0}
    if isinstance(value, dict) and "schedule" in value:
        unknown = sorted(set(value) - set(SCHEDULE_FIELDS))
        if unknown:
            raise ValueError(f"unknown schedule key(s) {unknown}; {SCHEDULE_HELP}")
        if value["schedule"] != "linear":
            raise ValueError(f"unknown schedule {value['schedule']!r}; {SCHEDULE_HELP}")
        if not number(value.get("start")) or not number(value.get("end", 0.0)):
            raise ValueError(f"start and end must be numbers; {SCHEDULE_HELP}")
        return {
            "schedule": "linear",
            "start": float(value["start"]),
            "end": float(value.get("end", 0.0)),
        }
    return None


def canonical_params(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with every well-formed schedule in its mapping form (malformed ones left for
    the checks to name)."""
    out = dict(params)
    for key in SCHEDULE_KEYS:
        try:
            found = parse_schedule(out.get(key))
        except ValueError:
            continue
        if found is not None:
            out[key] = found
    return out


def schedule_issues(params: dict[str, Any]) -> list[Issue]:
    out: list[Issue] = []
    for key, value in params.items():
        looks = (isinstance(value, str) and value.startswith("lin_")) or (
            isinstance(value, dict) and "schedule" in value
        )
        if not looks:
            continue
        if key not in SCHEDULE_KEYS:
            out.append(
                ((key,), f"'{key}' takes no schedule (these do: {', '.join(SCHEDULE_KEYS)})")
            )
            continue
        try:
            parse_schedule(value)
        except ValueError as exc:
            out.append(((key,), str(exc)))
    return out


def _range_text(low: float, high: float | None) -> str:
    return f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"


def range_issues(params: dict[str, Any]) -> list[Issue]:
    """Values (a schedule's start and end, which bound every value between) outside RANGES."""
    out: list[Issue] = []
    for key, value in canonical_params(params).items():
        if key not in RANGES:
            continue
        low, high = RANGES[key]
        ends: list[Any] = (
            [value.get("start"), value.get("end")] if isinstance(value, dict) else [value]
        )
        values = [float(v) for v in ends if number(v)]
        bad = [v for v in values if v < low or (high is not None and v > high)]
        if bad:
            where = "the schedule reaches" if isinstance(value, dict) else "got"
            out.append(((key,), f"'{key}' must stay {_range_text(low, high)}; {where} {bad[0]}"))
    return out
