"""Benchmark of the godot backend (a script, not a test): env-only agent steps/s with random
actions, unpaced (fixed 60 Hz timestep, as fast as the CPU allows), in interleaved pairs so that
both sides of a ratio see the same machine:

  1. BallChase on Godot 4 (the bundled game) against BallChase on Godot 3 (tests/games/
     ballchase3, the last Godot 3 version, on godot3-server), at processes x instances 1x16, 4x4
     and 16x1;
  2. rlcrate's client against godot-rl's own (`StableBaselinesGodotEnv`, unchanged) driving the
     same real export of BallChase (`rlcrate godot export --instances N`), at 1x16 and 2x8.

Each cell: `--pairs` pairs (A then B, B then A alternately), the median and range of each side
and of the per-pair ratio A/B.

    .venv/bin/python tests/benchmarks/bench_godot.py [--steps 2000] [--pairs 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import platform
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from runner.backends import get_backend, godot
from runner.backends.godot import GodotEnv
from runner.manifest.schema import ParallelSpec

BACKEND = get_backend("godot")
ROOT = Path(__file__).resolve().parents[2]
GODOT3_GAME = ROOT / "tests" / "games" / "ballchase3"


def _timed(step: Callable, reset: Callable, num_envs: int, steps: int, warmup: int) -> float:
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 9, size=(steps + warmup, num_envs, 1))
    reset()
    for i in range(warmup):
        step(actions[i])
    t = time.perf_counter()
    for i in range(warmup, warmup + steps):
        step(actions[i])
    return steps * num_envs / (time.perf_counter() - t)


def rlcrate_env(game: str, procs: int, inst: int, steps: int, **kwargs: int) -> float:
    """rlcrate's VecEnv: the bundled game, a project (kwargs: its launch arguments) or an
    exported game, unpaced."""
    env = GodotEnv(backend="godot", id=game, kwargs=kwargs)
    venv = BACKEND.make_vec_env(
        env, ParallelSpec(envs=procs * inst, workers=procs), seed=0, log_dir=None
    )
    try:
        return _timed(venv.step, venv.reset, venv.num_envs, steps, warmup=100)
    finally:
        venv.close()


def _free_port_range(n: int) -> int:
    """godot-rl uses ports base..base+n-1; a base where all are free right now."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65535:
            continue
        socks = [socket.socket() for _ in range(n)]
        try:
            for i, s in enumerate(socks):
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def godot_rl_env(game: Path, procs: int, steps: int) -> float:
    """godot-rl's own client as its users run an exported game: n_parallel processes, the
    engine's fixed 60 Hz timestep (framerate 60: `--fixed-fps 60`), speedup 1 (unpaced)."""
    from godot_rl.wrappers.stable_baselines_wrapper import StableBaselinesGodotEnv

    with contextlib.redirect_stdout(io.StringIO()):
        venv = StableBaselinesGodotEnv(
            str(game), n_parallel=procs, port=_free_port_range(procs), framerate=60, speedup=1
        )
    try:
        return _timed(venv.step, venv.reset, venv.num_envs, steps, warmup=100)
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            venv.close()


def pairs(a: Callable[[], float], b: Callable[[], float], n: int) -> dict:
    """n interleaved pairs, A first in even pairs and B first in odd ones."""
    xs, ys = [], []
    for i in range(n):
        if i % 2:
            ys.append(b())
            xs.append(a())
        else:
            xs.append(a())
            ys.append(b())
    ratios = [x / y for x, y in zip(xs, ys, strict=True)]

    def stats(v: list[float]) -> dict:
        return {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": v}

    return {"a": stats(xs), "b": stats(ys), "ratio": stats(ratios)}


def _line(name: str, cell: dict, a: str, b: str) -> str:
    def fmt(s: dict, p: str = ".0f") -> str:
        return f"{s['median']:{p}} [{s['min']:{p}}, {s['max']:{p}}]"

    return (
        f"  {name:<6} {a} {fmt(cell['a']):>22}   {b} {fmt(cell['b']):>22}   "
        f"ratio {fmt(cell['ratio'], '.2f')}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="vector steps timed per run")
    ap.add_argument("--pairs", type=int, default=5, help="interleaved pairs per cell")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = ap.parse_args()
    g4, g3 = godot.godot_binary(4), godot.godot_binary(3)
    res: dict = {
        "godot4": list(g4), "godot3": list(g3), "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "steps": args.steps, "pairs": args.pairs,
        "godot4_vs_godot3": {}, "rlcrate_vs_godot_rl": {},
    }  # fmt: skip
    print(f"Godot 4 {g4[1]} vs Godot 3 {g3[1]}, {os.cpu_count()} CPUs; agent steps/s, median")
    print(f"[min, max] of {args.pairs} interleaved pairs, unpaced")
    for procs, inst in [(1, 16), (4, 4), (16, 1)]:
        cell = pairs(
            functools.partial(rlcrate_env, "ballchase", procs, inst, args.steps),
            functools.partial(
                rlcrate_env, str(GODOT3_GAME), procs, inst, args.steps, instances=inst
            ),
            args.pairs,
        )
        res["godot4_vs_godot3"][f"{procs}x{inst}"] = cell
        print(_line(f"{procs}x{inst}", cell, "Godot 4", "Godot 3"))
    with tempfile.TemporaryDirectory() as tmp:
        from runner.backends.godot.export import export_game

        for procs, inst in [(1, 16), (2, 8)]:
            game = Path(tmp) / f"ballchase{inst}.x86_64"
            if not game.exists():
                export_game("ballchase", game, games_dir=godot.GAMES_DIR, instances=inst)
            cell = pairs(
                functools.partial(rlcrate_env, str(game), procs, inst, args.steps),
                functools.partial(godot_rl_env, game, procs, args.steps),
                args.pairs,
            )
            res["rlcrate_vs_godot_rl"][f"{procs}x{inst}"] = cell
            print(_line(f"{procs}x{inst}", cell, "rlcrate", "godot-rl"))
    if args.out:
        args.out.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
