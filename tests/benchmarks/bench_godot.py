"""Benchmark of the godot backend with the bundled BallChase game (a script, not a test).

Measures, in one run so the figures compare on a shared machine:
  1. env-only agent-steps/s with random actions over processes x instances, paced and unpaced;
  2. our VecEnv against godot-rl's own StableBaselinesGodotEnv driving the same game with the
     same settings (alternating runs);
  3. PPO training steps/s on our VecEnv.

    .venv/bin/python tests/benchmarks/bench_godot.py [--steps 2000] [--out bench-godot.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socket
import stat
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from runner.backends import get_backend, godot
from runner.backends.godot import GodotEnv
from runner.manifest.schema import ParallelSpec

BACKEND = get_backend("godot")

GRID = [(1, 1), (1, 8), (1, 16), (1, 32), (2, 16), (4, 8), (1, 64), (2, 32)]


def _timed(step, reset, num_envs: int, steps: int, warmup: int) -> float:
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 9, size=(steps + warmup, num_envs, 1))
    reset()
    for i in range(warmup):
        step(actions[i])
    t = time.perf_counter()
    for i in range(warmup, warmup + steps):
        step(actions[i])
    return steps * num_envs / (time.perf_counter() - t)


def ours(procs: int, inst: int, pacing: str, steps: int, warmup: int = 100) -> float:
    env = GodotEnv(backend="godot", id="ballchase", pacing=pacing, speedup=20)
    venv = BACKEND.make_vec_env(
        env, ParallelSpec(envs=procs * inst, workers=procs), seed=0, log_dir=None
    )
    try:
        return _timed(venv.step, venv.reset, venv.num_envs, steps, warmup)
    finally:
        venv.close()


def _free_port_range(n: int) -> int:
    """godot-rl uses ports base..base+n-1; find a base where all are free right now."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65535:
            continue
        try:
            socks = [socket.socket() for _ in range(n)]
            for i, s in enumerate(socks):
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def godot_rl(procs: int, inst: int, steps: int, tmp: Path, warmup: int = 100) -> float:
    from godot_rl.wrappers.stable_baselines_wrapper import StableBaselinesGodotEnv

    binary, _ = godot.godot_binary()
    launcher = tmp / f"ballchase-{inst}.x86_64"  # godot-rl only launches files named *.x86_64
    launcher.write_text(
        f'#!/bin/sh\nexec "{binary}" --path "{godot.GAMES_DIR / "ballchase"}" '
        f'--instances={inst} "$@"\n'
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
    with contextlib.redirect_stdout(io.StringIO()):
        venv = StableBaselinesGodotEnv(
            str(launcher),
            n_parallel=procs,
            port=_free_port_range(procs),
            framerate=godot.UNPACED_FPS,
            speedup=1,
        )
    try:
        return _timed(venv.step, venv.reset, venv.num_envs, steps, warmup)
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            venv.close()


def ppo_steps_per_s(procs: int, inst: int, timesteps: int) -> float:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)
    env = GodotEnv(backend="godot", id="ballchase")
    venv = VecMonitor(
        BACKEND.make_vec_env(
            env, ParallelSpec(envs=procs * inst, workers=procs), seed=0, log_dir=None
        )
    )
    try:
        model = PPO(
            "MlpPolicy",
            venv,
            n_steps=max(1, 2048 // venv.num_envs),
            batch_size=512,
            seed=0,
            device="cpu",
        )
        t = time.perf_counter()
        model.learn(timesteps)
        return timesteps / (time.perf_counter() - t)
    finally:
        venv.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="vector steps per unpaced point")
    ap.add_argument("--paced-steps", type=int, default=300, help="vector steps per paced point")
    ap.add_argument("--repeats", type=int, default=3, help="alternating runs, ours vs godot-rl")
    ap.add_argument("--ppo-timesteps", type=int, default=30_000)
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = ap.parse_args()
    binary, version = godot.godot_binary()
    res: dict = {"godot": [binary, version], "cpus": os.cpu_count(), "grid": {}, "vs_godot_rl": {}}
    print(
        f"Godot {version} ({binary}), {os.cpu_count()} CPUs; agent-steps/s, random actions; "
        f"best (median) of {args.repeats} interleaved rounds"
    )
    runs: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.repeats):  # rounds over the whole grid: load from others hits all alike
        for procs, inst in GRID:
            for p in ("unpaced", "paced"):
                n = args.steps if p == "unpaced" else args.paced_steps
                runs.setdefault(f"{procs}x{inst}", {}).setdefault(p, []).append(
                    ours(procs, inst, p, n)
                )
    for key, row in runs.items():
        res["grid"][key] = {
            p: {"best": max(v), "median": statistics.median(v)} for p, v in row.items()
        }
        u, pc = res["grid"][key]["unpaced"], res["grid"][key]["paced"]
        print(
            f"  {key:<5} unpaced {u['best']:>7.0f} ({u['median']:>6.0f})   "
            f"paced, speedup 20 {pc['best']:>7.0f} ({pc['median']:>6.0f})"
        )
    g = res["grid"]
    for p in ("unpaced", "paced"):
        ratio = g["1x16"][p]["best"] / g["1x1"][p]["best"]
        res[f"ratio_1x16_1x1_{p}"] = ratio
        print(f"  1x16 / 1x1 ({p}) = {ratio:.1f}x")
    with tempfile.TemporaryDirectory() as tmp:
        for procs, inst in [(1, 1), (1, 32), (2, 16)]:
            a, b = [], []
            for _ in range(args.repeats):
                a.append(ours(procs, inst, "unpaced", args.steps))
                b.append(godot_rl(procs, inst, args.steps, Path(tmp)))
            ma, mb = max(a), max(b)
            res["vs_godot_rl"][f"{procs}x{inst}"] = {"ours": a, "godot_rl": b, "ratio": ma / mb}
            print(
                f"  ours vs godot-rl {procs}x{inst}: best {ma:.0f} vs {mb:.0f} = {ma / mb:.2f}x "
                f"(medians {statistics.median(a):.0f} vs {statistics.median(b):.0f})"
            )
    for procs, inst in [(1, 16), (2, 16)]:
        sps = ppo_steps_per_s(procs, inst, args.ppo_timesteps)
        res[f"ppo_{procs}x{inst}"] = sps
        print(f"  PPO training {procs}x{inst}: {sps:.0f} steps/s")
    if args.out:
        args.out.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
