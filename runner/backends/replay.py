"""Record-and-replay of a Gymnasium env's episode in progress: its state without pickling it.

An env whose dynamics depend only on its own generator (`np_random`) and the actions it is
given is back in the same state after the same reset and the same actions. `Replayable` keeps,
for the episode in progress, how it started (the seed of a seeded reset, or the generator's
state before an unseeded one) and the actions since; `rlcrate_replay_state()` returns them as
data (JSON and arrays), and `rlcrate_replay(state)` on a freshly made env replays them. A digest
of the last observation is kept with them: a replay that does not end on the same observation
(an env with state of its own beyond `np_random`) says so instead of resuming a different
episode. Both methods are reached through a VecEnv's `env_method`, in the unit's process
(DummyVecEnv) or in each worker (SubprocVecEnv).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import gymnasium as gym
import numpy as np

REPLAY_STATE = "rlcrate_replay_state"  # the env_method names a trainer calls
REPLAY = "rlcrate_replay"


def digest(obs: Any) -> str:
    """SHA-256 of an observation's bytes (a dict observation: each key's, in key order)."""
    h = hashlib.sha256()
    if isinstance(obs, dict):
        for key in sorted(obs):
            h.update(str(key).encode())
            h.update(np.ascontiguousarray(obs[key]).tobytes())
    else:
        h.update(np.ascontiguousarray(obs).tobytes())
    return h.hexdigest()


class Replayable(gym.Wrapper):
    """Keeps how the episode in progress started and its actions (see the module)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._start: dict[str, Any] = {}
        self._actions: list[np.ndarray] = []
        self._last: Any = None  # the last observation; its digest is taken when saved

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self._start = {"seed": int(seed)}
        else:  # the generator as the unseeded reset finds it
            self._start = {"rng": self.unwrapped.np_random.bit_generator.state}
        if options:  # kept when it is data; else the episode cannot be replayed
            try:
                self._start["options"] = json.loads(json.dumps(options))
            except (TypeError, ValueError):
                self._start["unreplayable"] = "reset options that are not data"
        self._actions = []
        obs, info = self.env.reset(seed=seed, options=options)
        self._last = obs
        return obs, info

    def step(self, action: Any) -> Any:
        self._actions.append(np.array(action, copy=True))
        out = self.env.step(action)
        self._last = out[0]
        return out

    def rlcrate_replay_state(self) -> dict[str, Any]:
        """{"start", "obs" (digest), "actions" (an array, one row per step)}."""
        actions = np.stack(self._actions) if self._actions else np.zeros((0,))
        return {"start": self._start, "obs": digest(self._last), "actions": actions}

    def rlcrate_replay(self, state: dict[str, Any]) -> bool:
        """Replay `state`'s episode on this env; True when it ends on the saved observation."""
        start = state["start"]
        if "unreplayable" in start:
            return False
        if "rng" in start:
            self.unwrapped.np_random.bit_generator.state = start["rng"]
        self.reset(seed=start.get("seed"), options=start.get("options"))
        if "rng" in start:  # the recorded start is the one saved, not the generator read back
            self._start = start
        for action in state["actions"]:
            self.step(action)
        return bool(digest(self._last) == state["obs"])
