"""SB3 hyperparameters written as YAML: schedules, `policy_kwargs` by name; checked without torch.

A schedule is `lin_<value>` (rl-baselines3-zoo's spelling: the value falls linearly to 0 over
training) or `{schedule: linear, start: A, end: B}`; both resolve to the mapping form, which is
what resolved.yaml shows. `policy_kwargs` names classes by their name (`activation_fn: ReLU`,
`optimizer_class: Adam`); the SB3 trainer turns names into classes where the unit runs
(runner/trainers/sb3_hyper.py).
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

# torch.nn activation modules, by the name `policy_kwargs.activation_fn` takes.
ACTIVATIONS = (
    "ReLU",
    "Tanh",
    "ELU",
    "LeakyReLU",
    "SELU",
    "GELU",
    "SiLU",
    "Mish",
    "Sigmoid",
    "Softplus",
    "Softsign",
    "CELU",
    "ReLU6",
    "Hardtanh",
    "Hardswish",
    "Hardsigmoid",
    "LogSigmoid",
    "PReLU",
    "Tanhshrink",
    "Identity",
)
# Optimizers `policy_kwargs.optimizer_class` takes: torch.optim's, and SB3's TF-style RMSprop
# (the zoo's A2C Atari entries use it).
OPTIMIZERS = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "SGD", "Adagrad")
SB3_OPTIMIZERS = {"RMSpropTFLike": "stable_baselines3.common.sb2_compat.rmsprop_tf_like"}
NET_ARCH_KEYS = (("pi", "vf"), ("pi", "qf"))

Issue = tuple[tuple[str, ...], str]  # (field path under algo.params, message)


def _number(x: Any) -> bool:
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
        if not _number(value.get("start")) or not _number(value.get("end", 0.0)):
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


NOISE_TYPES = ("normal", "ornstein-uhlenbeck")


def action_noise_issue(value: Any) -> str | None:
    """`action_noise: {type: normal | ornstein-uhlenbeck, std: <number>}` (rl-zoo3's noise_type
    and noise_std): the trainer sizes it to the env's action space."""
    ok = (
        isinstance(value, dict)
        and set(value) == {"type", "std"}
        and value["type"] in NOISE_TYPES
        and _number(value["std"])
        and value["std"] >= 0
    )
    if ok or value is None:
        return None
    return f"expected {{type: normal | ornstein-uhlenbeck, std: <number >= 0>}}, got {value!r}"


def _int_list(x: Any) -> bool:
    return isinstance(x, list) and all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in x
    )


def net_arch_issue(value: Any) -> str | None:
    if _int_list(value):
        return None
    pairs = isinstance(value, dict) and any(set(value) == set(k) for k in NET_ARCH_KEYS)
    if pairs and all(_int_list(v) for v in value.values()):
        return None
    return (
        f"expected a list of layer sizes (e.g. [64, 64]) or {{pi: [...], vf: [...]}} / "
        f"{{pi: [...], qf: [...]}}, got {value!r}"
    )


def _name_issue(value: Any, known: tuple[str, ...], what: str) -> str | None:
    import difflib

    if isinstance(value, str) and value in known:
        return None
    lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(str(value).lower(), list(lower), n=1)
    hint = f"; did you mean '{lower[close[0]]}'?" if close else ""
    return f"unknown {what} {value!r}{hint} (known: {', '.join(known)})"


# policy_kwargs whose values have a fixed shape, whatever the policy class.
_BOOL_KWARGS = (
    "ortho_init",
    "use_sde",
    "use_expln",
    "squash_output",
    "full_std",
    "share_features_extractor",
    "normalize_images",
    "shared_lstm",
    "enable_critic_lstm",
)
_INT_KWARGS = ("n_critics", "n_quantiles", "lstm_hidden_size", "n_lstm_layers")
_NUMBER_KWARGS = ("log_std_init", "clip_mean", "dropout_rate")
_DICT_KWARGS = ("optimizer_kwargs", "features_extractor_kwargs", "lstm_kwargs")


def _value_issue(key: str, value: Any) -> str | None:
    if key == "activation_fn":
        return _name_issue(value, ACTIVATIONS, "activation function")
    if key == "optimizer_class":
        return _name_issue(value, OPTIMIZERS + tuple(SB3_OPTIMIZERS), "optimizer")
    if key == "net_arch":
        return net_arch_issue(value)
    if key in _BOOL_KWARGS and not isinstance(value, bool):
        return f"expected true or false, got {value!r}"
    if key in _INT_KWARGS and (isinstance(value, bool) or not isinstance(value, int)):
        return f"expected an integer, got {value!r}"
    if key in _NUMBER_KWARGS and not _number(value):
        return f"expected a number, got {value!r}"
    if key in _DICT_KWARGS and not isinstance(value, dict):
        return f"expected a mapping, got {value!r}"
    return None


def policy_kwargs_issues(value: Any, allowed: tuple[str, ...] | None, policy: str) -> list[Issue]:
    """Problems with `params.policy_kwargs`; `allowed` is the policy class's keyword names
    (None: unknown here, names unchecked)."""
    import difflib

    where = ("policy_kwargs",)
    if not isinstance(value, dict):
        return [(where, f"expected a mapping of the policy's keyword arguments, got {value!r}")]
    out: list[Issue] = []
    for key, item in value.items():
        if allowed is not None and key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            out.append((where + (key,), f"{policy} takes no keyword '{key}'{hint}"))
            continue
        problem = _value_issue(key, item)
        if problem:
            out.append((where + (key,), problem))
    return out
