"""MuJoCo Playground's registry as one JSON line: `python -m runner.backends.playground.registry`.

Every registered environment's family and default configuration (flattened to dotted keys, each
value with its type, which `env.kwargs` overrides are checked against), and the Brax PPO
hyperparameters Playground publishes for it (`mujoco_playground.config.*_params`,
`algo.defaults: task`). Importing Playground takes 10-15 s here (JAX, MJX, every env module), so
the backend runs this once per install, in the Python its units run in, and caches the answer
(`catalog`). Reading it changes nothing: no env is made and nothing is downloaded (Playground
clones MuJoCo Menagerie only when a locomotion or manipulation env is loaded).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import io
import json
import sys
from typing import Any

MARKER = "rlcrate-playground-registry:"
FORMAT = 1  # bumped when the answer changes shape (the cache keys on it)
FAMILIES = ("dm_control_suite", "locomotion", "manipulation")
# Modules Playground imports only to offer torch and RSL-RL wrappers (each import guarded): left
# out of this read-only process, they would double its time (torch alone takes seconds).
NOT_NEEDED = ("torch", "rsl_rl", "tensordict")


def _flat(tree: Any, at: str = "") -> dict[str, list[Any]]:
    """Dotted key -> [value as JSON, the value's type name], for every leaf of a config."""
    out: dict[str, list[Any]] = {}
    items = tree.items() if isinstance(tree, dict) else []
    for key, value in items:
        path = f"{at}.{key}" if at else str(key)
        if isinstance(value, dict) and value:
            out.update(_flat(value, path))
        else:
            out[path] = [_json(value), type(value).__name__]
    return out


def _json(value: Any) -> Any:
    """`value` as JSON data: tuples as lists, anything else JSON cannot hold as its repr."""
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _ppo(family: str, env_id: str) -> dict[str, Any]:
    """{entry, cfg}: the Brax PPO config Playground publishes for `env_id` (entry None: none)."""
    name = f"mujoco_playground.config.{family}_params"
    try:
        module = importlib.import_module(name)
        cfg = module.brax_ppo_config(env_id)
    except Exception as exc:  # noqa: BLE001 - a family without one for this env: say why
        return {"entry": None, "why": f"{type(exc).__name__}: {exc}"[:300]}
    return {"entry": f"{name}.brax_ppo_config", "cfg": _json(cfg.to_dict())}


def registry() -> dict[str, Any]:
    for name in NOT_NEEDED:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]  # import fails: not needed
    with contextlib.redirect_stdout(io.StringIO()):  # MJX says whether Warp imports
        from mujoco_playground._src import mjx_env
        from mujoco_playground._src import registry as reg

        families = {f: importlib.import_module(f"mujoco_playground._src.{f}") for f in FAMILIES}
        envs, ppo = {}, {}
        for family, module in families.items():
            for env_id in module.ALL_ENVS:
                config = module.get_default_config(env_id).to_dict()
                envs[env_id] = {"family": family, "config": _flat(config)}
                ppo[env_id] = _ppo(family, env_id)
    if set(envs) != set(reg.ALL_ENVS):  # a family this module does not know of
        unknown = ", ".join(sorted(set(reg.ALL_ENVS) - set(envs)))
        raise SystemExit(f"Playground registers envs outside {', '.join(FAMILIES)}: {unknown}")
    return {
        "format": FORMAT,
        "playground": importlib.metadata.version("playground"),
        "menagerie": {"path": str(mjx_env.MENAGERIE_PATH), "commit": mjx_env.MENAGERIE_COMMIT_SHA},
        "envs": envs,
        "brax_ppo": ppo,
    }


if __name__ == "__main__":
    print(MARKER + json.dumps(registry()))
    sys.exit(0)
