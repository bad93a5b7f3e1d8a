"""BallChase surrogate: the bundled Godot game (runner/games/ballchase/arena.gd) in NumPy.

Every instance is stepped in one array operation. With `physics: faithful` it repeats the game's
arithmetic in the game's own precision (Godot 3's Vector2 is float32, its script floats are float64)
and its random stream (Godot's PCG32, each instance seeded `hash([env_seed, i])` as sync.gd does),
so it tracks the game step by step (tests/backends/gymnasium/test_ballchase_sim.py). `physics: alt`
changes drag and speeds, as another engine would, but keeps the game's observation scaling, so a
policy sees the same spaces with other dynamics. docs/ballchase-surrogate.md lists every difference
from the game.

Registered with Gymnasium as `rlcrate/BallChaseSim-v0` on import (no torch, no SB3 here);
`ballchase_vec.py` wraps the vector in a Stable-Baselines3 VecEnv.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np

from runner.backends.gymnasium.godot_random import arena_seeds, pcg_seed, randf
from runner.errors import FieldError

ENV_ID = "rlcrate/BallChaseSim-v0"
f32 = np.float32

# The game's constants (arena.gd).
W = H = 400.0
AGENT_R = BALL_R = 15.0
DT = 1.0 / 60.0
CATCH_REWARD = 1.0
SHAPING = 0.5
WALL_PENALTY = 0.01
OBS_SIZE = 10
N_ACTIONS = 9
# Observation scales stay the game's in every variant: a policy meets the same numbers for the
# same state, and a faster variant shows up as observations beyond them (what calibration sees).
OBS_SPEED = 300.0
OBS_BALL_SPEED = 120.0
_D = 0.70710678
_DT32, _LO, _HI = f32(DT), f32(AGENT_R), f32(W - AGENT_R)  # AGENT_R == BALL_R
DIRS = np.array(
    [[0, 0], [0, -1], [_D, -_D], [1, 0], [_D, _D], [0, 1], [-_D, _D], [-1, 0], [-_D, -_D]],
    dtype=f32,
)


@dataclass(frozen=True)
class Physics:
    max_speed: float = 300.0
    accel: float = 1500.0
    drag: float = 2.0
    ball_max_speed: float = 120.0


PHYSICS = {
    "faithful": Physics(),
    # Lighter drag, a faster agent and ball: other motion, same spaces and rewards.
    "alt": Physics(max_speed=420.0, accel=2400.0, drag=0.6, ball_max_speed=180.0),
}
KWARGS = {
    "action_space": "discrete (9 compass moves, default) or continuous (2D force), as the game",
    "episode_steps": "agent steps per episode (default 500), as the game",
    "action_repeat": "physics ticks per agent step (default 1; the backend passes "
    "env.action_repeat)",
    "physics": "faithful (the game's constants, default) or alt (other drag and speeds)",
    **{k: f"override one physics constant (float), e.g. {k}: 2.0" for k in vars(Physics())},
}


@dataclass(frozen=True)
class Config:
    continuous: bool = False
    episode_steps: int = 500
    action_repeat: int = 1
    physics: Physics = Physics()


def config(kwargs: dict[str, Any]) -> Config:
    """The env kwargs as a Config; FieldError (("env", "kwargs", key), one sentence) if bad."""
    for key in kwargs:
        if key not in KWARGS:
            raise _bad(key, "is not an argument of " + ENV_ID, known=True)
    kind = kwargs.get("action_space", "discrete")
    if kind not in ("discrete", "continuous"):
        raise _bad("action_space", f"expected 'discrete' or 'continuous', got {kind!r}")
    name = kwargs.get("physics", "faithful")
    if name not in PHYSICS:
        raise _bad("physics", f"expected one of {', '.join(PHYSICS)}, got {name!r}")
    physics = PHYSICS[name]
    for key in vars(physics):
        if key in kwargs:
            value = kwargs[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise _bad(key, f"expected a positive number, got {value!r}")
            physics = replace(physics, **{key: float(value)})
    ints = {}
    for key, default in (("episode_steps", 500), ("action_repeat", 1)):
        value = kwargs.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _bad(key, f"expected a positive integer, got {value!r}")
        ints[key] = value
    return Config(continuous=kind == "continuous", physics=physics, **ints)


def _bad(key: str, msg: str, known: bool = False) -> FieldError:
    if known:
        msg = f"'{key}' {msg}; known: " + "; ".join(f"{k}: {v}" for k, v in KWARGS.items())
    return FieldError(("env", "kwargs", key), msg)


def spaces(continuous: bool) -> tuple[Any, Any]:
    """The game's spaces, exactly as the godot backend declares them."""
    gs = gym.spaces
    obs = gs.Box(-1.0, 1.0, shape=(OBS_SIZE,), dtype=np.float32)
    act = gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float32) if continuous else gs.Discrete(9)
    return obs, act


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vector2::distance_to in float32: sqrt(dx * dx + dy * dy)."""
    dx, dy = a[:, 0] - b[:, 0], a[:, 1] - b[:, 1]
    return np.sqrt(dx * dx + dy * dy)


class BallChase:
    """n BallChase arenas as arrays, stepped together; Godot's arena.gd + sync.gd step cycle.

    `reset()` and `step(actions)` return float32 observations; `step` also returns float64
    rewards, bool dones and the finished episodes' last observations (a finished episode restarts
    at once, as in the game). The state fields are public so a test can set any state.
    """

    def __init__(self, n: int, cfg: Config, seed: int = 0):
        self.n, self.cfg = n, cfg
        ph = cfg.physics
        # Script constants are float64, cast to float32 where they meet a Vector2, as in Godot.
        self._keep = f32(1.0 - ph.drag * DT)
        self._push = f32(ph.accel * DT)
        # Godot compares the float32 speed squared with a float64 limit; the largest float32
        # at or below that limit gives the same answer in float32 (one cast less per tick).
        limit = ph.max_speed * ph.max_speed
        self._max2 = f32(limit) if f32(limit) <= limit else np.nextafter(f32(limit), f32(0))
        self._max = f32(ph.max_speed)
        self._dirs = DIRS * self._push
        z = np.zeros((n, 2), dtype=f32)
        self.agent_pos, self.agent_vel, self.move = z, z.copy(), z.copy()
        self.ball_pos, self.ball_vel = z.copy(), z.copy()
        self.prev_dist = np.zeros(n)  # a script float (float64) holding a float32 distance
        self.steps = np.zeros(n, dtype=np.int64)
        self.catches = np.zeros(n, dtype=np.int64)
        self.rng = np.zeros(n, dtype=np.uint64)
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """As a Godot process launched with this run seed: instance setup (one episode start)."""
        self.rng = pcg_seed(arena_seeds(seed, self.n))
        self._reset_episode(np.ones(self.n, dtype=bool))

    def reset(self) -> np.ndarray:
        """The protocol's reset message: every arena starts a new episode."""
        self._reset_episode(np.ones(self.n, dtype=bool))
        return self.observe()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self._set_action(np.asarray(actions))
        reward = np.zeros(self.n)
        for _ in range(self.cfg.action_repeat):
            reward = self._tick(reward)
        self.steps += 1
        done = self.steps >= self.cfg.episode_steps
        final = self.observe()
        if done.any():
            self._reset_episode(done)
            return self.observe(), reward, done, final
        return final, reward, done, final

    def _set_action(self, a: np.ndarray) -> None:
        if not self.cfg.continuous:
            idx = a.reshape(self.n).astype(np.int64)
            self.move = self._dirs[np.minimum(np.maximum(idx, 0), N_ACTIONS - 1)]
            return
        m = a.reshape(self.n, 2).astype(f32)
        l2 = m[:, 0] * m[:, 0] + m[:, 1] * m[:, 1]
        over = l2 > 1.0
        m[over] /= np.sqrt(l2[over])[:, None]
        self.move = m * self._push

    def _tick(self, reward: np.ndarray) -> np.ndarray:
        # Few whole-array operations, with the rare cases (top speed, a wall, a catch) behind
        # one any() each: at tens of envs the cost is per NumPy call, not per env.
        v = self.agent_vel * self._keep + self.move
        l2 = (v * v).sum(1)  # x * x + y * y in float32, as Vector2.length_squared
        fast = l2 > self._max2
        if fast.any():
            v = np.where(fast[:, None], v / np.sqrt(l2)[:, None] * self._max, v)
        p = self.agent_pos + v * _DT32
        out = (p < _LO) | (p > _HI)
        wall = out.any()
        if wall:
            p = np.minimum(np.maximum(p, _LO), _HI)
            v = np.where(out, f32(0.0), v)
        self.agent_vel, self.agent_pos = v, p
        b = self.ball_pos + self.ball_vel * _DT32
        out_b = (b < _LO) | (b > _HI)
        if out_b.any():
            self.ball_vel = np.where(out_b, -self.ball_vel, self.ball_vel)
            b = np.minimum(np.maximum(b, _LO), _HI)
        self.ball_pos = b
        diff = p - b
        d = np.sqrt((diff * diff).sum(1)).astype(np.float64)
        caught = d < AGENT_R + BALL_R
        if caught.any():
            reward = reward + np.where(caught, CATCH_REWARD, SHAPING * (self.prev_dist - d) / W)
            self.prev_dist = np.where(caught, self.prev_dist, d)
            self.catches += caught
            self._spawn_ball(caught)
        else:
            reward = reward + SHAPING * (self.prev_dist - d) / W
            self.prev_dist = d
        return reward - WALL_PENALTY * out.any(1) if wall else reward

    def _reset_episode(self, mask: np.ndarray) -> None:
        self.agent_pos[mask] = (W * 0.5, H * 0.5)
        self.agent_vel[mask] = 0.0
        self.move[mask] = 0.0
        self.steps[mask] = 0
        self.catches[mask] = 0
        self._spawn_ball(mask)

    def _spawn_ball(self, mask: np.ndarray) -> None:
        # Up to 8 draws away from the agent, as the game (which keeps the last draw regardless).
        todo = np.flatnonzero(mask)
        for _ in range(8):
            if not todo.size:
                break
            self.rng[todo], x = randf(self.rng[todo])
            self.rng[todo], y = randf(self.rng[todo])
            span = f32(W - 2 * BALL_R)
            self.ball_pos[todo] = np.stack([x * span + f32(BALL_R), y * span + f32(BALL_R)], 1)
            far = _dist(self.ball_pos[todo], self.agent_pos[todo]) > 3.0 * (AGENT_R + BALL_R)
            todo = todo[~far]
        idx = np.flatnonzero(mask)
        self.rng[idx], r = randf(self.rng[idx])
        angle = r.astype(np.float64) * (2 * np.pi)
        unit = np.stack([np.cos(angle), np.sin(angle)], 1).astype(f32)
        self.rng[idx], r = randf(self.rng[idx])
        self.ball_vel[idx] = unit * r[:, None] * f32(self.cfg.physics.ball_max_speed)
        self.prev_dist[idx] = _dist(self.agent_pos[idx], self.ball_pos[idx])

    def observe(self) -> np.ndarray:
        """arena.gd's observe(): ball offset and relative velocity, own velocity, wall distances."""
        obs = np.empty((self.n, OBS_SIZE), dtype=f32)
        obs[:, 0:2] = (self.ball_pos - self.agent_pos) * f32(1.0 / W)
        obs[:, 2:4] = (self.ball_vel - self.agent_vel) * f32(1.0 / (OBS_SPEED + OBS_BALL_SPEED))
        obs[:, 4:6] = self.agent_vel * f32(1.0 / OBS_SPEED)
        wall = (self.agent_pos - f32(AGENT_R)) * f32(1.0 / (W - 2.0 * AGENT_R))
        obs[:, 6::2] = wall
        obs[:, 7::2] = 1.0 - wall.astype(np.float64)  # `scale - wall.x`: a float64 in Godot
        return obs


class BallChaseSimEnv(gym.Env):
    """One arena as a Gymnasium env (gym.make, `rlcrate envs`, spaces); training uses the
    vectorized `ballchase_vec.BallChaseVecEnv`. The episode ends by truncation only, as the
    game's (no terminal state)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, **kwargs: Any):
        self.cfg = config(kwargs)
        self.observation_space, self.action_space = spaces(self.cfg.continuous)
        self.sim = BallChase(1, self.cfg, seed=0)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.sim.seed(seed)
        return self.sim.reset()[0], {}

    def step(self, action: Any):
        obs, reward, done, final = self.sim.step(np.asarray(action).reshape(1, -1))
        return final[0], float(reward[0]), False, bool(done[0]), {}

    def close(self) -> None:
        pass


def _register() -> None:
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=f"{__name__}:BallChaseSimEnv", disable_env_checker=True)


_register()
