"""eval.video figures (a script, not a test): what a recorded frame costs on each path that draws
one, against the same steps without frames.

    .venv/bin/python tests/benchmarks/bench_video.py [--out bench-video.json] [--reps 3]

Godot 4, one process, one episode of `--steps` agent steps with random actions: headless (no
frames), the bundled game's `frame` message (408x408), and BallChase copied as a project of
one's own, read off the Xvfb screen at 408x408 and at 1152x648 (Godot 4's default window for a
project that names none). The cases alternate within each repeat (the machine is shared); each
figure is the median over repeats of the process start, the steps (with a frame each) and the
whole.

Brax (needs MUJOCO_GL=osmesa or egl in the environment): inverted_pendulum's states from a
jitted rollout of random actions, drawn by Brax's drawing (`backends.brax.frames.Painter`) at
320x240; the seconds per frame.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from runner.manifest.schema import ParallelSpec

ONE = ParallelSpec(envs=1, workers=1, mode="dummy")


def godot_cases(project: Path, steps: int) -> dict[str, tuple[Any, bool]]:
    from runner.backends.godot import Godot, GodotEnv

    g, kw = Godot(), {"episode_steps": steps}
    bundled = GodotEnv(backend="godot", id="ballchase", kwargs=kw)
    own = GodotEnv(backend="godot", id=str(project))
    return {
        "headless Godot 4, no frames": (bundled, False),
        "bundled game, frame message, 408x408": (g.video_env(bundled), True),
        "project of one's own, Xvfb screen 408x408": (g.video_env(own, size=(408, 408)), True),
        "project of one's own, Xvfb screen 1152x648": (g.video_env(own, size=(1152, 648)), True),
    }


def godot_episode(env: Any, frames: bool, steps: int) -> tuple[float, float, float]:
    """(start, steps, whole) seconds of one episode in a fresh Godot process."""
    from runner.backends.godot import Godot

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    venv = Godot().make_vec_env(env, ONE, seed=0, log_dir=None)
    t1 = time.perf_counter()
    try:
        venv.reset()
        for _ in range(steps):
            if frames:
                venv.get_images()
            venv.step(rng.integers(0, 9, size=1))
        t2 = time.perf_counter()
    finally:
        venv.close()
    return t1 - t0, t2 - t1, time.perf_counter() - t0


def godot(steps: int, reps: int) -> dict[str, Any]:
    from runner.backends.godot import GAMES_DIR

    with tempfile.TemporaryDirectory(prefix="bench-video-") as tmp:
        project = Path(tmp) / "ballchase"
        shutil.copytree(GAMES_DIR / "ballchase", project)
        cases = godot_cases(project, steps)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
        for _ in range(reps):
            for name, (env, frames) in cases.items():
                runs[name].append(godot_episode(env, frames, steps))
    out = {}
    for name, got in runs.items():
        start, stepped, whole = (statistics.median(r[i] for r in got) for i in range(3))
        out[name] = {
            "start_s": round(start, 3),
            "steps_s": round(stepped, 3),
            "ms_per_step": round(1000 * stepped / steps, 2),
            "whole_s": round(whole, 3),
        }
        print(f"{name:45s} start {start:5.2f} s  {steps} steps {stepped:5.2f} s "
              f"({1000 * stepped / steps:5.1f} ms a step)  whole {whole:5.2f} s")  # fmt: skip
    return out


def brax(steps: int) -> dict[str, Any]:
    if os.environ.get("MUJOCO_GL") not in ("osmesa", "egl"):
        return {"skipped": "set MUJOCO_GL=osmesa (or egl) to draw Brax's states"}
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    from brax import envs

    from runner.backends.brax.frames import Painter

    env = envs.get_environment("inverted_pendulum", backend="generalized")

    def roll(key: Any) -> Any:
        def body(state: Any, k: Any) -> Any:
            action = jax.random.uniform(k, (env.action_size,), minval=-1, maxval=1)
            nxt = env.step(state, action)
            return nxt, (state.pipeline_state.q, state.pipeline_state.qd)

        return jax.lax.scan(body, env.reset(key), jax.random.split(key, steps))[1]

    q, qd = (np.asarray(a) for a in jax.jit(roll)(jax.random.PRNGKey(0)))
    t0 = time.perf_counter()
    painter = Painter(env.sys)
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    for t in range(steps):
        painter.frame(q[t], qd[t])
    drawn = time.perf_counter() - t0
    painter.close()
    print(f"brax inverted_pendulum 320x240: renderer {made:.2f} s, "
          f"{1000 * drawn / steps:.1f} ms a frame over {steps} frames")  # fmt: skip
    return {"renderer_s": round(made, 3), "ms_per_frame": round(1000 * drawn / steps, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench-video.json")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    result = {
        "load_before": os.getloadavg(),
        "godot": godot(a.steps, a.reps),
        "brax": brax(a.steps),
        "load_after": os.getloadavg(),
    }
    Path(a.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
