"""A Stable-Baselines3 VecEnv over several supervised Godot processes, each with N instances."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from runner.backends.godot.connection import GodotConnection
from runner.backends.godot.screen import Screen
from runner.backends.godot.stall import StallWatch, advice
from runner.backends.godot.supervisor import GodotProcess
from runner.errors import FieldError, RunnerError


class GodotVecEnv(VecEnv):
    """Processes are stepped in lockstep: actions go to all of them, then all answers are read.

    Observations with a single key (godot-rl's usual {"obs": ...}) come out as a plain array, so
    MlpPolicy works; several keys stay a dict (MultiInputPolicy). A finished episode restarts at
    once: the step returns the new episode's first observation and puts the last one in
    `infos[i]["terminal_observation"]`, as SB3 expects.
    """

    def __init__(
        self,
        argvs: list[list[str]],
        *,
        instances: int,
        timeout: float,
        log_dir: Path,
        own_log_dir: bool = False,
        frames: bool = False,
        screens: list[Screen] | None = None,
        game: str = "the game",
    ):
        self.log_dir = log_dir
        self._own_log_dir = own_log_dir
        self.instances = instances
        self.game = game
        self.stalls = StallWatch()  # replies held back by the game's socket (Nagle), once
        self._sent_at = 0.0
        # its games draw (eval.video): bundled ones answer `frame`, others are read off the
        # screen of each process's Xvfb (`screens`, one a process, removed on close)
        self.frames = frames
        self.screens = screens
        self.conns: list[GodotConnection] = []
        self.procs: list[GodotProcess] = []
        self._closed = False
        self._failed = False
        try:
            for i, argv in enumerate(argvs):  # start them all, then connect: startup overlaps
                self.procs.append(GodotProcess(argv, index=i, log_path=log_dir / f"godot-{i}.log"))
            for proc in self.procs:
                self.conns.append(GodotConnection(proc, timeout=timeout))
            self._check_agents()
        except BaseException:
            self._fail()
            raise
        first = self.conns[0]
        keys = list(first.observation_space.spaces)
        self._obs_key = keys[0] if len(keys) == 1 else None
        obs_space: spaces.Space = first.observation_space
        if self._obs_key:
            obs_space = first.observation_space[self._obs_key]
        act_space = first.action_space
        self._discrete = isinstance(act_space, spaces.MultiDiscrete) and len(act_space.nvec) == 1
        if self._discrete:
            act_space = spaces.Discrete(int(act_space.nvec[0]))
        super().__init__(instances * len(self.conns), obs_space, act_space)

    def _check_agents(self) -> None:
        for c in self.conns:
            if c.num_envs != self.instances:
                raise FieldError(
                    ("parallel", "envs"),
                    f"{self.game} runs {c.num_envs} agents in each Godot process (its scene "
                    f"holds them), but parallel.envs / parallel.workers asks for "
                    f"{self.instances}: set parallel.envs to parallel.workers x {c.num_envs}",
                )
            if (
                c.observation_space != self.conns[0].observation_space
                or c.action_space != self.conns[0].action_space
            ):
                raise RunnerError(
                    f"{c.process.describe()} reports different observation/action spaces than "
                    "Godot process 0"
                )

    # -- stepping ----------------------------------------------------------------------------

    def _obs_array(self, obs: list[dict[str, Any]]) -> Any:
        if self._obs_key:
            return np.asarray([o[self._obs_key] for o in obs], dtype=np.float32)
        return {k: np.asarray([o[k] for o in obs]) for k in obs[0]}

    def reset(self):
        try:
            obs: list[dict[str, Any]] = []
            for c in self.conns:
                obs.extend(c.reset()[0])
            self._reset_seeds()
            self._reset_options()
            return self._obs_array(obs)
        except BaseException:
            self._fail()
            raise

    def step_async(self, actions: np.ndarray) -> None:
        actions = np.asarray(actions)
        if self._discrete:
            actions = actions.reshape(-1, 1).astype(np.int64)
        k = self.instances
        try:
            for i, c in enumerate(self.conns):
                c.step_send(actions[i * k : (i + 1) * k])
        except BaseException:
            self._fail()
            raise
        self._sent_at = time.perf_counter()

    def step_wait(self):
        try:
            responses = [c.recv_step() for c in self.conns]
        except BaseException:  # timeouts, a dead game, Ctrl-C: end every game before raising
            self._fail()
            raise
        if not self.stalls.judged:
            self._watch(responses)
        if len(responses) == 1:
            obs, rewards, dones = responses[0]["obs"], responses[0]["reward"], responses[0]["done"]
        else:
            obs, rewards, dones = [], [], []
            for resp in responses:
                obs += resp["obs"]
                rewards += resp["reward"]
                dones += resp["done"]
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if any(dones):
            self._episode_ends(responses, obs, dones, infos)
        return (
            self._obs_array(obs),
            np.asarray(rewards, dtype=np.float32),
            np.asarray(dones, dtype=bool),
            infos,
        )

    def _watch(self, responses: list[dict[str, Any]]) -> None:
        """The reply latency less the engine's own simulation time (the bundled games report
        it): a stall of about 40 ms on every step is said once, on stderr (the unit's log)."""
        engine = max((r.get("tick_us", 0) + r.get("codec_us", 0) for r in responses), default=0)
        stall = self.stalls.record(time.perf_counter() - self._sent_at - engine * 1e-6)
        if stall is not None:
            print(f"rlcrate: {advice(self.game, stall)}", file=sys.stderr)

    def _episode_ends(self, responses, obs, dones, infos) -> None:
        for p, resp in enumerate(responses):
            for key, final in resp.get("final_obs", {}).items():
                info = infos[p * self.instances + int(key)]
                info["terminal_observation"] = self._obs_array([final["obs"]])[0]
                info["TimeLimit.truncated"] = bool(final.get("truncated", False))
        for i, done in enumerate(dones):
            if done:  # a godot-rl game without final_obs sends the last observation itself
                infos[i].setdefault("terminal_observation", self._obs_array([obs[i]])[0])

    # -- the rest of the VecEnv interface ------------------------------------------------------

    def close(self, grace: float = 2.0) -> None:
        """Asks every game to quit, waits up to `grace` s, then ends the process groups."""
        if self._closed:
            return
        self._closed = True
        sent = all([c.send_close() for c in self.conns])
        for proc in self.procs:
            proc.kill(grace=grace if sent else 0.0)
        for c in self.conns:
            c.connection.close()
        for screen in self.screens or []:
            screen.close()
        if self._own_log_dir and not self._failed:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def _fail(self) -> None:
        """After an error: end every game at once and keep the logs the error points to."""
        self._failed = True
        self.close(grace=0.0)

    def env_method(
        self, method_name: str, *method_args, indices=None, **method_kwargs
    ) -> list[Any]:
        """Calls a method on every instance through the protocol's `call` message."""
        if method_args or method_kwargs:
            raise RunnerError("Godot env methods take no arguments (godot-rl's call message)")
        returns: list[Any] = []
        for c in self.conns:
            returns.extend(c.call(method_name))
        return [returns[i] for i in self._get_indices(indices)]

    def get_images(self) -> list[Any]:
        """Each process's first instance as drawn now (the bundled games' `frame`, eval.video),
        or each process's whole screen (a game of one's own); None for the other instances, and
        for every env of games that do not draw."""
        if not self.frames:
            return [None] * self.num_envs
        try:
            rest = [None] * (self.instances - 1)
            if self.screens:
                return [x for s in self.screens for x in (s.grab(), *rest)]
            return [x for c in self.conns for x in (c.frame(), *rest)]
        except BaseException:
            self._fail()
            raise

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        if attr_name == "render_mode":
            return ["rgb_array" if self.frames else None for _ in self._get_indices(indices)]
        raise AttributeError(f"Godot envs have no attribute '{attr_name}' readable from Python")

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"Godot envs have no attribute '{attr_name}' settable from Python")

    def env_is_wrapped(self, wrapper_class: type, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    @property
    def ports(self) -> list[int]:
        return [p.port for p in self.procs]
