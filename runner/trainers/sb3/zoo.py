"""`algo.defaults: zoo`: the hyperparameters the installed rl-zoo3 package publishes, applied under
the manifest (anything the manifest sets wins), each value's source recorded.

Which entry: `rl_zoo3/hyperparams/<algo>.yml`, keyed by env id. Gymnasium ids map directly;
EnvPool ids too (EnvPool names its classic-control and MuJoCo tasks as Gymnasium does), and an
Atari id (gymnasium `ALE/...`, EnvPool `...-v5` that the zoo does not list) takes the zoo's
`atari` entry. The zoo's `default` entry is never a silent fallback: an id it lacks is an error.

What applies: n_envs -> parallel.envs, n_timesteps -> train.timesteps, policy, normalize,
policy_kwargs, env_kwargs -> env.kwargs, the AtariWrapper (+ frame_stack) -> env.atari,
noise_type/noise_std -> algo.params.action_noise, and every other key -> algo.params. Anything
else the zoo names (another env wrapper, a replay buffer class, callbacks) is refused in one
line: silently dropping it would be a different experiment.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import ManifestError
from runner.manifest.load import given
from runner.manifest.parse import read_yaml
from runner.trainers.defaults import put
from runner.trainers.sb3.zoo_expr import literal

if TYPE_CHECKING:
    from runner.backends.abilities import ZooIds

FILES = {
    "PPO": "ppo",
    "A2C": "a2c",
    "DQN": "dqn",
    "SAC": "sac",
    "TD3": "td3",
    "DDPG": "ddpg",
    "ARS": "ars",
    "QRDQN": "qrdqn",
    "TQC": "tqc",
    "TRPO": "trpo",
    "CrossQ": "crossq",
    "RecurrentPPO": "ppo_lstm",
}
ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
# AtariWrapper's keyword -> env.atari's field
ATARI_KWARGS = {
    "noop_max": "noop_max",
    "frame_skip": "frame_skip",
    "screen_size": "screen_size",
    "terminal_on_life_loss": "terminal_on_life_loss",
    "clip_reward": "clip_reward",
    "action_repeat_probability": "repeat_action_probability",
}
NORMALIZE_KWARGS = {
    "norm_obs": "obs",
    "norm_reward": "reward",
    "clip_obs": "clip_obs",
    "clip_reward": "clip_reward",
    "epsilon": "epsilon",
}
UNSUPPORTED = {
    "callback": "a training callback",
    "vec_env_wrapper": "a VecEnv wrapper",
    "monitor_kwargs": "Monitor keywords",
    "replay_buffer_class": "a replay buffer class",
}
Path_ = tuple[str, ...]


class ZooError(ValueError):
    """One line: what the zoo has that this manifest cannot take."""


def version() -> str | None:
    try:
        return importlib.metadata.version("rl_zoo3")
    except importlib.metadata.PackageNotFoundError:
        return None


@cache
def _table(algo: str) -> dict[str, Any]:
    """The installed zoo's file for `algo`, read as a manifest is (bounded, plain YAML): a
    tampered file with Python tags or alias bombs is one line naming it."""
    spec = importlib.util.find_spec("rl_zoo3")
    if spec is None or not spec.submodule_search_locations:
        raise ZooError("algo.defaults zoo needs the rl-zoo3 package (pip install 'rlcrate[zoo]')")
    path = Path(list(spec.submodule_search_locations)[0], "hyperparams", f"{FILES[algo]}.yml")
    try:
        data, _ = read_yaml(path)
    except ManifestError as exc:
        raise ZooError(f"the installed rl-zoo3's file is damaged: {exc.problems[0]}") from None
    return data if isinstance(data, dict) else {}


def _backend(name: Any) -> ZooIds | None:
    """The backend `name` when its ids are in rl-zoo3's tables (its `ZooIds` ability); None when
    they are not, or no installed backend has that name (its own line says so)."""
    from runner.backends import get_backend
    from runner.backends.abilities import ZooIds
    from runner.errors import UserInputError

    try:
        backend = get_backend(name) if isinstance(name, str) else None
    except UserInputError:
        return None
    return backend if isinstance(backend, ZooIds) else None


def entry_key(algo: str, backend: ZooIds, env_id: str) -> str:
    table = _table(algo)
    if env_id in table:
        return env_id
    if backend.is_atari(env_id) and "atari" in table:
        return "atari"
    ids = [k for k in table if k not in ("default", "atari")]
    close = difflib.get_close_matches(env_id, ids, n=3, cutoff=0.5)
    hint = f"; nearest: {', '.join(close)}" if close else ""
    raise ZooError(f"rl-zoo3 {version()} {FILES[algo]}.yml has no entry for '{env_id}'{hint}")


def _wrappers(value: Any) -> list[tuple[str, dict[str, Any]]]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and len(item) == 1:
            name, kwargs = next(iter(item.items()))
            out.append((str(name), dict(kwargs or {})))
        else:
            out.append((str(item), {}))
    return out


def _normalize(value: Any) -> dict[str, Any] | None:
    value = literal(value) if isinstance(value, str) else value
    if value is True:
        return {}
    if value is False or value is None:
        return None
    if not isinstance(value, dict):
        raise ZooError(f"normalize {value!r} is not a mapping rlcrate reads")
    unknown = sorted(set(value) - set(NORMALIZE_KWARGS) - {"gamma"})
    if unknown:
        raise ZooError(f"normalize key(s) {unknown} have no rlcrate equivalent")
    # gamma: VecNormalize takes the algorithm's, as the zoo's own code does
    return {NORMALIZE_KWARGS[k]: v for k, v in value.items() if k in NORMALIZE_KWARGS}


def translate(entry: dict[str, Any]) -> dict[Path_, Any]:
    """The zoo entry as manifest values (path -> value); ZooError for what cannot apply."""
    out: dict[Path_, Any] = {}
    stack = entry.get("frame_stack")
    for key, value in entry.items():
        if key in UNSUPPORTED:
            raise ZooError(f"sets {key} ({UNSUPPORTED[key]}), which rlcrate does not apply")
        if key == "env_wrapper":
            for name, kwargs in _wrappers(value):
                if name != ATARI_WRAPPER:
                    raise ZooError(f"wraps the env in {name}, which rlcrate does not apply")
                for k, v in kwargs.items():
                    if k not in ATARI_KWARGS:
                        raise ZooError(f"AtariWrapper's {k} has no env.atari equivalent")
                    out[("env", "atari", ATARI_KWARGS[k])] = v
                out[("env", "atari", "frame_stack")] = int(stack or 1)
        elif key == "frame_stack":
            if "env_wrapper" not in entry:
                raise ZooError("frame_stack without the AtariWrapper, which rlcrate does not apply")
        elif key in ("noise_type", "noise_std"):
            if entry.get("noise_type") is not None:
                noise = {"type": str(entry["noise_type"]).strip(), "std": entry.get("noise_std")}
                out[("algo", "params", "action_noise")] = noise
        elif key == "n_envs":
            out[("parallel", "envs")] = int(value)
        elif key == "n_timesteps":
            out[("train", "timesteps")] = int(float(value))
        elif key == "policy":
            out[("algo", "policy")] = str(value)
        elif key == "normalize":
            out[("algo", "normalize")] = _normalize(value)
        elif key == "env_kwargs":
            out[("env", "kwargs")] = literal(value) if isinstance(value, str) else value
        elif key in ("policy_kwargs", "replay_buffer_kwargs") and isinstance(value, str):
            out[("algo", "params", key)] = literal(value)
        else:
            out[("algo", "params", key)] = value
    return out


def apply(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """`data` (the manifest as parsed) with the zoo's values under it; path -> source of each
    value the zoo supplied, and of each the manifest set over the zoo's (`manifest, over SOURCE:
    ZOO_VALUE`). ZooError when the zoo cannot supply them."""
    import copy

    algo: dict[str, Any] = data["algo"] if isinstance(data.get("algo"), dict) else {}
    env: dict[str, Any] = data["env"] if isinstance(data.get("env"), dict) else {}
    name, backend, env_id = algo.get("name", "PPO"), env.get("backend"), env.get("id")
    if version() is None:
        raise ZooError(
            "needs the rl-zoo3 package, which is not installed (pip install 'rlcrate[zoo]')"
        )
    if name not in FILES:
        raise ZooError(
            f"rl-zoo3 publishes no hyperparameters for {name} (it has: {', '.join(FILES)})"
        )
    known = _backend(backend)
    gym_id = known.gymnasium_id(env_id) if known and isinstance(env_id, str) else None
    if known is None or gym_id is None:
        raise ZooError(f"applies to backends whose ids are Gymnasium's, not the {backend} backend")
    key = entry_key(name, known, gym_id)
    entry = dict(_table(name)[key])
    try:
        values = translate(entry)
    except ValueError as exc:
        raise ZooError(f"rl-zoo3 {version()} {FILES[name]}.yml {key}: {exc}") from None
    out = copy.deepcopy(data)
    source = f"rl-zoo3 {version()} {FILES[name]}.yml {key}"
    sources = {}
    for path, value in values.items():
        if not given(data, path):
            put(out, path, value)
            sources[".".join(path)] = source
        else:  # the manifest's value wins; say what it replaced, so `--show` has both
            sources[".".join(path)] = f"manifest, over {source}: {json.dumps(value, default=str)}"
    return out, sources
