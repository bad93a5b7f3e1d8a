"""`algo.defaults: task`: the agent configuration a task registers for the chosen library (the
backend's `TaskConfigs` ability: Isaac Lab's tasks, MuJoCo Playground's environments), processed
as that framework's own training script does, applied under the manifest (anything the manifest
sets wins), each value's source recorded.

Stable-Baselines3 algorithms read `sb3_cfg_entry_point`, as `train_sb3` with `process_sb3_cfg`:
`policy` -> algo.policy; `n_timesteps` -> train.timesteps; `normalize_input`, `normalize_value`,
`clip_obs` -> algo.normalize (its VecNormalize: clip_obs defaults to 100, rewards unclipped);
`n_minibatches` -> algo.params.batch_size (n_steps x parallel.envs / n_minibatches); `nn.<Name>`
-> `<Name>` (policy_kwargs by name); schedules `lin_<x>` as they are; every other key ->
algo.params. Isaac Lab's `seed` gives way to the unit's seed, its `device` to algo.device.

`rsl_rl_ppo` reads `rsl_rl_cfg_entry_point` (the trainer starts from it in any case): each value
of the runner configuration -> algo.params at its nested path, and `max_iterations` ->
train.timesteps (max_iterations x num_steps_per_env x parallel.envs); seed and device as above.

`brax_ppo` reads `brax_ppo_cfg_entry_point` (MuJoCo Playground publishes one per environment, the
keyword arguments of Brax's `ppo.train` its own training script passes): `num_timesteps` ->
train.timesteps; `num_envs` -> parallel.envs; `episode_length` and `action_repeat` ->
env.kwargs (the env's configuration, which gives both the training wrapper and the evaluation
their episode length); `network_factory` -> algo.params.network; every other key ->
algo.params, but `num_evals` (Brax's in-loop evaluations: rlcrate's eval job evaluates) and
`seed` (the unit's).

Which backend's task it is, and where its config comes from, is the source recorded for each
value (`resolved.yaml`'s `sources`).
"""

from __future__ import annotations

import copy
import math
from typing import Any

from runner.manifest.load import given
from runner.trainers.defaults import put
from runner.trainers.rsl_rl_ppo import RUNNER_SUPPLIED

Path_ = tuple[str, ...]
ENTRY_POINTS = {"rsl_rl_ppo": "rsl_rl_cfg_entry_point", "brax_ppo": "brax_ppo_cfg_entry_point"}
LIBRARIES = {"rsl_rl_ppo": "RSL-RL", "brax_ppo": "Brax PPO"}
SB3_ENTRY_POINT = "sb3_cfg_entry_point"
NOT_APPLIED = ("seed", "device")  # the unit's seed; algo.device (rsl_rl_ppo: the task's device)
NORMALIZE = {"normalize_input": "obs", "normalize_value": "reward", "clip_obs": "clip_obs"}


class TaskDefaultsError(ValueError):
    """The task's config cannot supply the defaults (one line, at algo.defaults)."""


def _names(value: Any) -> Any:
    """process_sb3_cfg turns 'nn.ELU' into torch's class; the manifest names it 'ELU'."""
    if isinstance(value, dict):
        return {k: _names(v) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("nn."):
        return value[3:]
    return value


def sb3_values(cfg: dict[str, Any], n_envs: int) -> dict[Path_, Any]:
    out: dict[Path_, Any] = {}
    normalize: dict[str, Any] = {}
    for key, value in cfg.items():
        if key in NOT_APPLIED:
            continue
        if key == "policy":
            out[("algo", "policy")] = str(value)
        elif key == "n_timesteps":
            out[("train", "timesteps")] = int(float(value))
        elif key in NORMALIZE:
            normalize[NORMALIZE[key]] = value
        elif key == "n_minibatches":
            n_steps = int(cfg.get("n_steps", 2048))
            out[("algo", "params", "batch_size")] = n_steps * n_envs // int(value)
        else:
            out[("algo", "params", key)] = _names(value)
    if normalize.get("obs"):
        out[("algo", "normalize")] = {"reward": False, "clip_obs": 100.0,
                                      "clip_reward": math.inf, **normalize}  # fmt: skip
    return out


def _leaves(value: Any, at: Path_) -> dict[Path_, Any]:
    """Nested values by path; an empty mapping is a field left unset (Isaac Lab's `to_dict`
    writes MISSING so), which the configuration keeps as it is."""
    if isinstance(value, dict):
        out: dict[Path_, Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, (*at, key)))
        return out
    return {at: value}


def rsl_rl_values(cfg: dict[str, Any], n_envs: int) -> dict[Path_, Any]:
    out: dict[Path_, Any] = {}
    for key, value in cfg.items():
        if key in NOT_APPLIED or key in RUNNER_SUPPLIED:
            continue
        if key == "max_iterations":
            steps = int(value) * int(cfg["num_steps_per_env"]) * n_envs
            out[("train", "timesteps")] = steps
        else:
            out.update(_leaves(value, ("algo", "params", key)))
    return out


# Brax's ppo.train arguments a task's config carries that go elsewhere in the manifest
BRAX_PLACES: dict[str, Path_] = {
    "num_timesteps": ("train", "timesteps"),
    "num_envs": ("parallel", "envs"),
    "episode_length": ("env", "kwargs", "episode_length"),
    "action_repeat": ("env", "kwargs", "action_repeat"),
}
BRAX_NOT_APPLIED = ("num_evals", "seed")  # rlcrate's eval job; the unit's seed


def brax_ppo_values(cfg: dict[str, Any], n_envs: int) -> dict[Path_, Any]:
    out: dict[Path_, Any] = {}
    for key, value in cfg.items():
        if key in BRAX_NOT_APPLIED:
            continue
        if key in BRAX_PLACES:
            out[BRAX_PLACES[key]] = int(value)
        elif key == "network_factory":
            out.update(_leaves(value, ("algo", "params", "network")))
        else:
            out.update(_leaves(value, ("algo", "params", key)))
    return out


CONVERT = {"rsl_rl_ppo": rsl_rl_values, "brax_ppo": brax_ppo_values}


def apply(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """`data` (the manifest as parsed) with the task's values under it; dotted path -> source of
    each value the task supplied. TaskDefaultsError when the task cannot supply them."""
    from runner.backends import get_backend
    from runner.backends.abilities import TaskConfigs
    from runner.errors import BackendUnavailable, UserInputError
    from runner.trainers.sb3.algos import ALGOS

    algo: dict[str, Any] = data["algo"] if isinstance(data.get("algo"), dict) else {}
    env: dict[str, Any] = data["env"] if isinstance(data.get("env"), dict) else {}
    name, backend, task = algo.get("name", "PPO"), env.get("backend"), env.get("id")
    if name not in ENTRY_POINTS and name not in ALGOS:
        return data, {}  # the unknown algorithm gets its own line from the checks
    entry_point = ENTRY_POINTS.get(name, SB3_ENTRY_POINT)
    try:
        known = get_backend(backend) if isinstance(backend, str) else None
        found = (
            known.agent_config(task, entry_point)
            if isinstance(known, TaskConfigs) and isinstance(task, str)
            else None
        )
    except BackendUnavailable as exc:
        raise TaskDefaultsError(str(exc)) from None
    except UserInputError:  # no such backend: its own line says so
        found = None
    if found is None:
        raise TaskDefaultsError(f"'task' reads the agent config a task registers; the {backend} "
                                "backend's tasks register none")  # fmt: skip
    if found.get("entry") is None:
        library = LIBRARIES.get(name, "Stable-Baselines3")
        raise TaskDefaultsError(f"{task} registers no {library} agent config ({entry_point})")
    parallel = data.get("parallel") if isinstance(data.get("parallel"), dict) else {}
    n_envs = int((parallel or {}).get("envs", 1))
    convert = CONVERT.get(name, sb3_values)
    out, sources = copy.deepcopy(data), {}
    source = f"{backend} task {task} ({entry_point}: {found['entry']})"
    for path, value in convert(dict(found["cfg"]), n_envs).items():
        if not given(data, path):
            put(out, path, value)
            sources[".".join(path)] = source
    return out, sources


def prepare(data: Any, source: str, lines: Any) -> tuple[Any, dict[str, str]]:
    """The manifest's `prepare` step (runner.manifest.load.read_manifest): the task's values
    when `algo.defaults: task`; ManifestError (one line, at algo.defaults) when it cannot."""
    from runner.errors import ManifestError
    from runner.manifest.problems import at

    algo = data.get("algo") if isinstance(data, dict) else None
    if not (isinstance(algo, dict) and algo.get("defaults") == "task"):
        return data, {}
    try:
        return apply(data)
    except TaskDefaultsError as exc:
        raise ManifestError([at(source, lines, ("algo", "defaults"), str(exc))]) from None
