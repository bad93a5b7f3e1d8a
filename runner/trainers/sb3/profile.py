"""Rollout profile (`bench.profile: true`): where the time of a training step goes.

The manifest's algorithm trains for `bench.steps` with its own methods timed in place (instance
attributes that shadow the class's, removed afterwards): the env step (the VecEnv the model
steps), policy inference during rollouts (`policy.forward` / `policy._predict`), the gradient
update (`model.train`); what is left of the wall time is rollout bookkeeping (buffers, tensors,
callbacks). On the Godot backend the env step is split further (`runner/backends/godot/profile.py`).

The profile's own cost is measured two ways. Interleaved: each repeat times one plain and one
profiled `learn` of the same length on the same model, in alternating order; `overhead` is one
minus the median ratio of profiled to plain steps/s (as noisy as the host), `overhead_cpu` the
median extra CPU time per step of the training process (the timers run there; far less noisy
on a shared host, since other processes' load barely moves it). Counted:
`overhead_bound` is the number of timed calls per step times the cost of one timed call
(measured on a no-op), as a fraction of the step time: what the instrumentation itself adds.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from runner.manifest.schema import Manifest
from runner.trainers.sb3.options import options


def _split(cfg: Manifest, venv: Any) -> Any:
    """The backend's own split of the env step (Godot's: send, the game, receive), or None: a
    backend without the `StepSplit` ability shows it as one part, and says so once."""
    from runner import plugins
    from runner.backends import get_backend
    from runner.backends.abilities import StepSplit

    backend = get_backend(cfg.env.backend)
    if isinstance(backend, StepSplit):
        return backend.step_split(venv)
    plugins.lacks("backend", backend.name, "split its env step into parts",
                  "bench.profile shows the env step as one part")  # fmt: skip
    return None


class _Timers:
    """Timed stand-ins for the model's and the env's methods, removable with `detach`."""

    def __init__(self, model: Any, venv: Any, cfg: Manifest) -> None:
        self.seconds = {"env": 0.0, "inference": 0.0, "update": 0.0}
        self.calls = 0
        self._patched: list[tuple[Any, str]] = []
        self._busy = False
        self._sync = _cuda_sync if options(cfg).device.startswith("cuda") else (lambda: None)
        for obj, name, key in (
            (model, "train", "update"),
            (venv, "step_async", "env"),
            (venv, "step_wait", "env"),
            (model.policy, "forward", "inference"),
            (model.policy, "_predict", "inference"),
        ):
            self._wrap(obj, name, key)
        self.godot = _split(cfg, venv)

    def _wrap(self, obj: Any, name: str, key: str) -> None:
        inner = getattr(obj, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._busy and key == "inference":  # SAC's forward calls _predict
                return inner(*args, **kwargs)
            self._busy = key == "inference"
            t0 = time.perf_counter()
            try:
                out = inner(*args, **kwargs)
                if key in ("inference", "update"):
                    self._sync()
                return out
            finally:
                self.seconds[key] += time.perf_counter() - t0
                self._busy = False
                self.calls += 1

        object.__setattr__(obj, name, timed)  # torch modules route setattr through __setattr__
        self._patched.append((obj, name))

    def detach(self) -> None:
        for obj, name in self._patched:
            object.__delattr__(obj, name)
        self._patched.clear()
        if self.godot is not None:
            self.godot.detach()


def _cuda_sync() -> None:
    import torch

    torch.cuda.synchronize()


def _parts(timers: _Timers, wall: float) -> dict[str, float]:
    """Seconds per part; they add up to `wall`."""
    s = timers.seconds
    parts = {"env": s["env"]}
    if timers.godot is not None:
        parts = dict(timers.godot.seconds)
        parts["decode"] += max(s["env"] - sum(parts.values()), 0.0)  # the VecEnv wrappers
    parts["inference"] = s["inference"]
    parts["update"] = s["update"]
    parts["other"] = max(wall - sum(parts.values()), 0.0)
    return parts


def call_cost(iterations: int = 20_000) -> float:
    """Seconds one timed call adds over a plain call (a no-op wrapped as the model's are)."""

    class Probe:
        def train(self) -> None:
            return None

    plain, probe = Probe(), Probe()
    timers = _Timers.__new__(_Timers)
    timers.seconds, timers.calls, timers._patched, timers._busy = {"update": 0.0}, 0, [], False
    timers._sync = lambda: None
    timers._wrap(probe, "train", "update")

    def run(obj: Any) -> float:
        fn = obj.train
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        return time.perf_counter() - t0

    # the fastest of several runs each: the least disturbed by other processes
    probe_s = min(run(probe) for _ in range(7))
    plain_s = min(run(plain) for _ in range(7))
    return max(probe_s - plain_s, 0.0) / iterations


def _learn(model: Any, steps: int, timers: _Timers | None) -> tuple[int, float, float]:
    """(steps done, wall seconds, this process's CPU seconds); the timers detached after."""
    before = model.num_timesteps
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        model.learn(steps, reset_num_timesteps=False)
    finally:
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if timers is not None:
            timers.detach()
    return model.num_timesteps - before, wall, cpu


def profile_train(cfg: Manifest, venv: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """Per part: seconds per training step (env step), its share; the profile's overhead."""
    from runner.trainers.sb3.common import make_model

    spec = cfg.bench
    model = make_model(cfg, venv, seed=seeds["model"], tb_dir=None)
    model.learn(max(spec.warmup, 1))
    totals: dict[str, float] = {}
    steps_done, wall_done, reported, calls, stall = 0, 0.0, True, 0, None
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    for r in range(spec.repeats):
        per: dict[bool, tuple[int, float, float]] = {}
        for profiled in (False, True) if r % 2 == 0 else (True, False):
            timers = _Timers(model, venv, cfg) if profiled else None
            per[profiled] = steps, wall, _ = _learn(model, spec.steps, timers)
            if timers is not None:
                for k, v in _parts(timers, wall).items():
                    totals[k] = totals.get(k, 0.0) + v
                reported = reported and (timers.godot is None or timers.godot.reported)
                stall = stall or (timers.godot.stall() if timers.godot else None)
                calls += timers.calls + (timers.godot.calls if timers.godot else 0)
                steps_done, wall_done = steps_done + steps, wall_done + wall
        (n0, w0, c0), (n1, w1, c1) = per[False], per[True]
        ratios["wall"].append((n1 / w1) / (n0 / w0))
        ratios["cpu"].append((c1 / n1) / (c0 / n0))  # CPU seconds per step, profiled / plain
    return {
        "seconds_per_step": {k: v / steps_done for k, v in totals.items()},
        "share": {k: v / wall_done for k, v in totals.items()},
        "steps": steps_done,
        "steps_per_s": steps_done / wall_done,
        "overhead": float(1.0 - np.median(ratios["wall"])),
        "overhead_ratios": [float(x) for x in ratios["wall"]],
        "overhead_cpu": float(np.median(ratios["cpu"]) - 1.0),
        "overhead_cpu_ratios": [float(x) for x in ratios["cpu"]],
        "overhead_bound": calls * call_cost() / wall_done,
        "timed_calls_per_step": calls / steps_done,
        "engine_reported": reported,
        "env_stall": stall,
        "device": options(cfg).device,
    }
