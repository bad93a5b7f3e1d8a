"""What brax_ppo accepts, checked before any unit starts and without importing Brax or JAX:
`algo.params` against `ppo.train`'s own keyword names (read from Brax's source, which may live in
Brax's own venv), and the limits `ppo.train` asserts on only once it runs."""

from __future__ import annotations

import ast
import difflib
from functools import cache

from runner.manifest.schema import Manifest

RUNNER_SUPPLIED = (
    "environment", "num_timesteps", "num_envs", "seed", "progress_fn", "policy_params_fn",
    "network_factory", "eval_env", "save_checkpoint_path", "restore_checkpoint_path",
    "restore_params", "wrap_env_fn", "randomization_fn",
)  # fmt: skip
EXTRA_PARAMS = ("network",)  # read by this trainer, not passed to ppo.train
TRAIN_FUNCTION = ("training/agents/ppo/train.py", "train")  # in Brax's package folder
BACKEND = "brax"  # the one backend whose envs Brax's PPO steps (it runs SB3 algorithms too)
# ppo.train's defaults in the pinned Brax (0.14.2), for the limits it asserts
DEFAULTS = {"batch_size": 32, "num_minibatches": 16}


@cache
def train_args() -> tuple[str, ...] | None:
    """Keyword names of Brax's `ppo.train` (None: Brax is not installed)."""
    from runner.backends.brax import source
    from runner.trainers.sb3.algos import arg_names

    relative, func = TRAIN_FUNCTION
    path = source(relative)
    tree = ast.parse(path.read_text(encoding="utf-8")) if path is not None else None
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            return arg_names(node, 0)
    return None


def check_params(cfg: Manifest, action_kind: str | None) -> tuple[str, str] | None:
    args = train_args()
    if args is None:  # the backend is missing: env.id's one line says so and how to get it
        return None
    for key in cfg.algo.params:
        if key in RUNNER_SUPPLIED:
            return f"params.{key}", f"'{key}' is set by the runner from the manifest"
        if key not in args + EXTRA_PARAMS:
            close = difflib.get_close_matches(key, args + EXTRA_PARAMS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            return f"params.{key}", f"{cfg.algo.name} has no argument '{key}'{hint}"
    return None


def check_limits(cfg: Manifest) -> tuple[str, str] | None:
    """ppo.train asserts `batch_size * num_minibatches % num_envs == 0` (each batch is split evenly
    over the envs); a unit would fail there after minutes with a bare AssertionError."""
    only = BACKEND
    if cfg.env.backend != only:
        return (
            "algo.name",
            f"{cfg.algo.name} runs only on the {only} backend (this env's is {cfg.env.backend})",
        )
    if cfg.algo.normalize is not None:
        return "algo.normalize", (
            f"normalize applies to Stable-Baselines3 algorithms; {cfg.algo.name} has its own loop"
        )
    params = {**DEFAULTS, **cfg.algo.params}
    batch, minibatches, envs = params["batch_size"], params["num_minibatches"], cfg.parallel.envs
    if isinstance(batch, int) and isinstance(minibatches, int) and (batch * minibatches) % envs:
        return "parallel.envs", (
            f"{cfg.algo.name} needs batch_size x num_minibatches ({batch} x {minibatches} = "
            f"{batch * minibatches}) to be a multiple of parallel.envs ({envs}): Brax's PPO splits "
            "each batch evenly over the envs"
        )
    return None
