"""SB3 hyperparameters written as YAML, checked without torch: `policy_kwargs` names classes by
their name (`activation_fn: ReLU`, `optimizer_class: Adam`), and `action_noise` is a mapping; the
SB3 trainer turns them into objects where the unit runs (runner/trainers/sb3/hyperparams.py).
Schedules: runner/manifest/schedules.py.
"""

from __future__ import annotations

from typing import Any

from runner.manifest.schedules import Issue, number

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


NOISE_TYPES = ("normal", "ornstein-uhlenbeck")


def action_noise_issue(value: Any) -> str | None:
    """`action_noise: {type: normal | ornstein-uhlenbeck, std: <number>}` (rl-zoo3's noise_type
    and noise_std): the trainer sizes it to the env's action space."""
    ok = (
        isinstance(value, dict)
        and set(value) == {"type", "std"}
        and value["type"] in NOISE_TYPES
        and number(value["std"])
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
    if key in _NUMBER_KWARGS and not number(value):
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
