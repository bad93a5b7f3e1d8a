"""The env part of an SB3 checkpoint's state (`state`): each sub-env's episode in progress,
VecMonitor's and VecNormalize's counters, and the model's last observation.

The sub-envs answer `env_method(REPLAY_STATE)` and `env_method(REPLAY, state)`
(`backends.replay.Replayable`, in this process or in a SubprocVecEnv's workers); the actions of
every episode are one array (`env.actions`, each env's rows in turn, `steps` rows each).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runner.backends.replay import REPLAY, REPLAY_STATE
from runner.errors import RunFileError

_LAST = {  # the model's attributes that `learn` would otherwise set by resetting the envs
    "last_obs": "_last_obs",
    "last_episode_starts": "_last_episode_starts",
    "last_original_obs": "_last_original_obs",
}


def capture(model: Any, layers: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    states = layers["env"].env_method(REPLAY_STATE)
    doc: dict[str, Any] = {
        "episodes": [
            {"start": s["start"], "obs": s["obs"], "steps": len(s["actions"])} for s in states
        ]
    }
    acts = [s["actions"] for s in states if len(s["actions"])]
    arrays: dict[str, Any] = {"env.actions": np.concatenate(acts) if acts else np.zeros((0,))}
    for key, attr in _LAST.items():
        value = getattr(model, attr, None)
        if isinstance(value, np.ndarray):
            arrays[key] = value
    if (monitor := layers["monitor"]) is not None:
        doc["monitor_episodes"] = int(monitor.episode_count)
        arrays["monitor.returns"] = monitor.episode_returns
        arrays["monitor.lengths"] = monitor.episode_lengths
    if (norm := layers["norm"]) is not None:
        arrays["norm.returns"] = norm.returns
        for name in ("old_obs", "old_reward"):
            if isinstance(getattr(norm, name, None), np.ndarray):
                arrays[f"norm.{name}"] = getattr(norm, name)
    return doc, arrays


def _episodes(saved: dict[str, Any], arrays: dict[str, Any], n_envs: int) -> list[dict[str, Any]]:
    episodes = saved.get("episodes")
    if not isinstance(episodes, list) or len(episodes) != n_envs:
        raise RunFileError(f"the checkpoint's state holds no episodes of {n_envs} envs")
    actions, at, out = arrays.get("env.actions"), 0, []
    if actions is None or sum(int(e["steps"]) for e in episodes) != len(actions):
        raise RunFileError("the checkpoint's state has not the actions its episodes took")
    for e in episodes:
        steps = int(e["steps"])
        out.append({"start": e["start"], "obs": e["obs"], "actions": actions[at : at + steps]})
        at += steps
    return out


def restore(
    model: Any, layers: dict[str, Any], saved: dict[str, Any], arrays: dict[str, Any]
) -> bool:
    """Replay every sub-env's episode; when each ends on its saved observation, set the
    counters and the model's last observation (so `learn` resets nothing) and return True.
    Otherwise leave the model's last observation unset (`learn` resets the envs): False."""
    env = layers["env"]
    episodes = _episodes(saved, arrays, env.num_envs)
    if "last_obs" not in arrays:
        raise RunFileError("the checkpoint's state has no last observation")
    replayed = [env.env_method(REPLAY, e, indices=[i])[0] for i, e in enumerate(episodes)]
    if not all(replayed):
        model._last_obs = None
        return False
    if (monitor := layers["monitor"]) is not None and "monitor.returns" in arrays:
        monitor.episode_count = int(saved["monitor_episodes"])
        monitor.episode_returns = arrays["monitor.returns"].copy()
        monitor.episode_lengths = arrays["monitor.lengths"].copy()
    if (norm := layers["norm"]) is not None and "norm.returns" in arrays:
        norm.returns = arrays["norm.returns"].copy()
        for name in ("old_obs", "old_reward"):
            if f"norm.{name}" in arrays:
                setattr(norm, name, arrays[f"norm.{name}"].copy())
    for key, attr in _LAST.items():
        if key in arrays:
            setattr(model, attr, arrays[key].copy())
    return True
