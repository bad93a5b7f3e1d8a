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

from runner.trainers import OWN_LOOPS

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


def _arg_names(func: ast.FunctionDef, skip: int) -> tuple[str, ...]:
    return tuple(a.arg for a in func.args.args[skip:] + func.args.kwonlyargs)


@cache
def constructor_args(name: str) -> tuple[str, ...] | None:
    """Keyword names of the algorithm's __init__, or None when its package is not installed."""
    module, cls, _ = ALGOS[name]
    for node in getattr(_source(module), "body", []):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return _arg_names(item, 1)
    return None


# Algorithms with their own training loop: name -> (file in Brax's package, function taking
# algo.params). The brax backend finds the file: it may live in Brax's own venv. rsl_rl_ppo's
# params override the task's runner configuration, which only Isaac Lab's Python can read: the
# dry construction checks them there (runner.trainers.sb3.construct), before any unit starts.
OWN_LOOP_FUNCTIONS = {"brax_ppo": ("training/agents/ppo/train.py", "train")}


@cache
def own_loop_args(name: str) -> tuple[str, ...] | None:
    """Keyword names of an own-loop algorithm's training function (None: not installed)."""
    from runner.backends.brax import source

    relative, func = OWN_LOOP_FUNCTIONS[name]
    path = source(relative)
    tree = ast.parse(path.read_text(encoding="utf-8")) if path is not None else None
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            return _arg_names(node, 0)
    return None


def _own_loop_check(name: str, params: dict[str, Any], backend: str) -> tuple[str, str] | None:
    only = OWN_LOOPS[name][1]
    if backend != only:
        return "name", f"{name} runs only on the {only} backend (this env's is {backend})"
    if name not in OWN_LOOP_FUNCTIONS:  # its config is the task's: checked in the task's Python
        return _supplied(name, params)
    args = own_loop_args(name)
    if args is None:  # the backend is missing: env.id's one line says so and how to get it
        return None
    from runner.trainers.brax_ppo import EXTRA_PARAMS, RUNNER_SUPPLIED

    for key in params:
        if key in RUNNER_SUPPLIED:
            return f"params.{key}", f"'{key}' is set by the runner from the manifest"
        if key not in args + EXTRA_PARAMS:
            close = difflib.get_close_matches(key, args + EXTRA_PARAMS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            return f"params.{key}", f"{name} has no argument '{key}'{hint}"
    return None


def _supplied(name: str, params: dict[str, Any]) -> tuple[str, str] | None:
    from runner.trainers.rsl_rl_ppo import RUNNER_SUPPLIED

    for key in params:
        if key in RUNNER_SUPPLIED:
            return f"params.{key}", f"'{key}' is set by the runner from the manifest"
    return None


def check(
    name: str, params: dict[str, Any], action_kind: str | None, *, backend: str
) -> tuple[str, str] | None:
    """(field, message) for the first problem with this algorithm choice, or None."""
    if name in OWN_LOOPS:
        return _own_loop_check(name, params, backend)
    if name not in ALGOS:
        close = difflib.get_close_matches(name, list(ALGOS), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
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
