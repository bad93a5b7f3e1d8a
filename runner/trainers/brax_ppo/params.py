"""What brax_ppo accepts, checked before any unit starts and without importing Brax or JAX:
`algo.params` against `ppo.train`'s own keyword names (read from Brax's source, which may live in
Brax's own venv), and the limits `ppo.train` asserts on only once it runs."""

from __future__ import annotations

import ast
import difflib
from functools import cache

from runner.errors import FieldProblem
from runner.manifest.schema import Manifest

RUNNER_SUPPLIED = (
    "environment", "num_timesteps", "num_envs", "seed", "progress_fn", "policy_params_fn",
    "network_factory", "eval_env", "save_checkpoint_path", "restore_checkpoint_path",
    "restore_params", "wrap_env_fn", "randomization_fn",
)  # fmt: skip
EXTRA_PARAMS = ("network",)  # read by this trainer, not passed to ppo.train
TRAIN_FUNCTION = ("training/agents/ppo/train.py", "train")  # in Brax's package folder
# ppo.train's defaults in the pinned Brax (0.14.2), for the limits it asserts
DEFAULTS = {"batch_size": 32, "num_minibatches": 16}


@cache
def train_args(backend: str) -> tuple[str, ...] | None:
    """Keyword names of Brax's `ppo.train`, in the package of the backend whose envs it steps
    (None: that package is not installed)."""
    from runner.backends import get_backend

    relative, func = TRAIN_FUNCTION
    path = get_backend(backend).package_file(relative)
    tree = ast.parse(path.read_text(encoding="utf-8")) if path is not None else None
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.FunctionDef) and node.name == func:
            return tuple(a.arg for a in node.args.args + node.args.kwonlyargs)
    return None


def check_params(cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
    args = train_args(cfg.env.backend)
    if args is None:  # the backend is missing: env.id's one line says so and how to get it
        return []
    out = []
    for key in cfg.algo.params:
        if key in RUNNER_SUPPLIED:
            msg = f"'{key}' is set by the runner from the manifest"
        elif key not in args + EXTRA_PARAMS:
            close = difflib.get_close_matches(key, args + EXTRA_PARAMS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            msg = f"{cfg.algo.name} has no argument '{key}'{hint}"
        else:
            continue
        out.append(FieldProblem(("algo", "params", key), msg))
    return out


def check_limits(cfg: Manifest) -> list[FieldProblem]:
    """ppo.train asserts `batch_size * num_minibatches % num_envs == 0` (each batch is split evenly
    over the envs); a unit would fail there after minutes with a bare AssertionError."""
    out = []
    params = {**DEFAULTS, **cfg.algo.params}
    batch, minibatches, envs = params["batch_size"], params["num_minibatches"], cfg.parallel.envs
    if isinstance(batch, int) and isinstance(minibatches, int) and (batch * minibatches) % envs:
        msg = (
            f"{cfg.algo.name} needs batch_size x num_minibatches ({batch} x {minibatches} = "
            f"{batch * minibatches}) to be a multiple of parallel.envs ({envs}): Brax's PPO splits "
            "each batch evenly over the envs"
        )
        out.append(FieldProblem(("parallel", "envs"), msg))
    return out
