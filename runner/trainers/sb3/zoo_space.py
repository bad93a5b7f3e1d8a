"""`tune.space: zoo`: rl-zoo3's own search space for the algorithm, from the installed rl-zoo3's
`hyperparams_opt.py` (the module rl-zoo3's `train.py -optimize` samples with).

The module itself imports only Optuna, NumPy, torch and Stable-Baselines3, but the `rl_zoo3`
package's `__init__` imports the whole zoo (Hugging Face hub included, which rlcrate does not
install), so the file is loaded on its own, by path, as a module of its own name. Which
algorithms it has is read from its source (`HYPERPARAMS_SAMPLER`'s keys) without running it, so
`validate` answers without torch. A sampled trial's SB3 keywords become manifest values:
`policy_kwargs`' classes by name (`activation_fn: ReLU`), action noise as `{type, std}`.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from runner.manifest.schema import Manifest
from runner.trainers.sb3.zoo import FILES

MODULE = "hyperparams_opt.py"
SAMPLERS = "HYPERPARAMS_SAMPLER"


def _path() -> Path | None:
    spec = importlib.util.find_spec("rl_zoo3")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0], MODULE)


@cache
def sampled_algos() -> tuple[str, ...] | None:
    """The zoo's names of the algorithms its sampler module has (None: rl-zoo3 is missing)."""
    path = _path()
    if path is None or not path.is_file():
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        named = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == SAMPLERS for t in node.targets
        )
        if named and isinstance(node.value, ast.Dict):  # type: ignore[attr-defined]
            keys = node.value.keys  # type: ignore[attr-defined]
            return tuple(str(k.value) for k in keys if isinstance(k, ast.Constant))
    return ()


def problem(cfg: Manifest) -> str | None:
    """Why rl-zoo3's space cannot be sampled for `cfg`'s algorithm (None: it can)."""
    algos = sampled_algos()
    if algos is None:
        return "zoo: needs the rl-zoo3 package (pip install 'rlcrate[zoo]')"
    name = cfg.algo.name
    theirs = FILES.get(name)
    if theirs is None or theirs not in algos or theirs == "ppo_lstm":
        ours = sorted(a for a, z in FILES.items() if z in algos and z != "ppo_lstm")
        return (
            f"zoo: the installed rl-zoo3 has no search space for {name} (it has one for "
            f"{', '.join(ours)}); write tune.space out"
        )
    return None


@cache
def _module() -> ModuleType:
    path = _path()
    spec = path and importlib.util.spec_from_file_location("rlcrate_zoo_hyperparams_opt", path)
    if not spec or spec.loader is None:  # problem() says so first; never a stripped assert
        raise RuntimeError(f"rl-zoo3's search spaces cannot be loaded from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample(cfg: Manifest, trial: Any) -> dict[str, Any]:
    """One trial's values from rl-zoo3's sampler for the algorithm, as dotted manifest paths
    (ValueError for a keyword the manifest cannot hold)."""
    sampler = getattr(_module(), SAMPLERS)[FILES[cfg.algo.name]]
    extra = {"using_her_replay_buffer": False, "her_kwargs": {}}
    kwargs = sampler(trial, 1, cfg.parallel.envs, extra)  # noise: one std for every dimension
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key == "policy_kwargs":
            for k, v in value.items():
                out[f"algo.params.policy_kwargs.{k}"] = _value(f"policy_kwargs.{k}", v)
        else:
            out[f"algo.params.{key}"] = _value(key, value)
    return out


def _value(key: str, value: Any) -> Any:
    """A sampled keyword's value as the manifest writes it."""
    if isinstance(value, type):  # torch.nn's activation modules, by name
        return value.__name__
    if key == "action_noise":
        if value is None:
            return None
        kind = "normal" if type(value).__name__ == "NormalActionNoise" else "ornstein-uhlenbeck"
        return {"type": kind, "std": float(value._sigma.flat[0])}
    if hasattr(value, "item"):  # a NumPy scalar
        return value.item()
    if isinstance(value, (str, int, float, bool, type(None), list, dict, tuple)):
        return list(value) if isinstance(value, tuple) else value
    raise ValueError(
        f"rl-zoo3 sampled {key} as a {type(value).__name__}, which a manifest cannot hold"
    )
