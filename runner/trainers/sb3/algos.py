"""Known Stable-Baselines3 / sb3-contrib algorithms, checked without importing torch.

`validate` must answer in well under a second, and importing Stable-Baselines3 pulls torch
(seconds). So the constructor's keyword names are read from the installed source with `ast`,
and the action spaces each algorithm supports come from SB3's own `supported_action_spaces`.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

from runner.errors import did_you_mean

# name -> (module, class, action space kinds it supports)
ALGOS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "PPO": (
        "stable_baselines3.ppo.ppo",
        "PPO",
        ("Box", "Discrete", "MultiDiscrete", "MultiBinary"),
    ),
    "A2C": (
        "stable_baselines3.a2c.a2c",
        "A2C",
        ("Box", "Discrete", "MultiDiscrete", "MultiBinary"),
    ),
    "DQN": ("stable_baselines3.dqn.dqn", "DQN", ("Discrete",)),
    "SAC": ("stable_baselines3.sac.sac", "SAC", ("Box",)),
    "TD3": ("stable_baselines3.td3.td3", "TD3", ("Box",)),
    "DDPG": ("stable_baselines3.ddpg.ddpg", "DDPG", ("Box",)),
    "ARS": ("sb3_contrib.ars.ars", "ARS", ("Box", "Discrete")),
    "QRDQN": ("sb3_contrib.qrdqn.qrdqn", "QRDQN", ("Discrete",)),
    "TQC": ("sb3_contrib.tqc.tqc", "TQC", ("Box",)),
    "TRPO": ("sb3_contrib.trpo.trpo", "TRPO", ("Box", "Discrete", "MultiDiscrete", "MultiBinary")),
    "CrossQ": ("sb3_contrib.crossq.crossq", "CrossQ", ("Box",)),
    "MaskablePPO": (
        "sb3_contrib.ppo_mask.ppo_mask",
        "MaskablePPO",
        ("Discrete", "MultiDiscrete", "MultiBinary"),
    ),
    "RecurrentPPO": (
        "sb3_contrib.ppo_recurrent.ppo_recurrent",
        "RecurrentPPO",
        ("Box", "Discrete", "MultiDiscrete", "MultiBinary"),
    ),
}
# Arguments the runner itself supplies; users may not pass them in algo.params.
RUNNER_ARGS = ("policy", "env", "seed", "tensorboard_log", "device", "verbose", "_init_setup_model")


def _source(module: str) -> ast.Module | None:
    """The parsed source of an installed module, without importing it or its parents (importing
    stable_baselines3 or brax would start torch or JAX)."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0], *rest[:-1], rest[-1] + ".py")
    return ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else None


def arg_names(func: ast.FunctionDef, skip: int) -> tuple[str, ...]:
    return tuple(a.arg for a in func.args.args[skip:] + func.args.kwonlyargs)


@cache
def constructor_args(name: str) -> tuple[str, ...] | None:
    """Keyword names of the algorithm's __init__, or None when its package is not installed."""
    module, cls, _ = ALGOS[name]
    for node in getattr(_source(module), "body", []):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return arg_names(item, 1)
    return None


def check(name: str, params: dict[str, Any], action_kind: str | None) -> tuple[str, str] | None:
    """(field, message) for the first problem with this algorithm choice, or None."""
    if name not in ALGOS:
        hint = did_you_mean(name, list(ALGOS))
        return "name", f"unknown algorithm '{name}'{hint} (known: {', '.join(ALGOS)})"
    args = constructor_args(name)
    if args is None:
        pkg = ALGOS[name][0].split(".")[0].replace("_", "-")
        return "name", f"{name} needs the '{pkg}' package, which is not installed"
    for key in params:
        if key in RUNNER_ARGS:
            return (
                f"params.{key}",
                f"'{key}' is set by the runner from the manifest, not algo.params",
            )
        if key not in args:
            close = difflib.get_close_matches(key, args, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            return f"params.{key}", f"{name} has no argument '{key}'{hint}"
    if action_kind is not None:
        kind = action_kind
        supported = ALGOS[name][2]
        if kind not in supported:
            return "name", (
                f"{name} supports {'/'.join(supported)} action spaces, but this env's "
                f"action space is {kind}"
            )
    return None
