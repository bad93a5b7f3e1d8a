"""Env-only steps/s of the BallChase surrogate against the Godot game (a script, not a test).

Godot (one process of N instances, unpaced) and the surrogate (N envs, one NumPy call a step)
are timed in alternation, so both see the same load on a shared machine; the ratio of each
pair is reported with the medians.

    .venv/bin/python tests/benchmarks/bench_ballchase_sim.py [--envs 16 64] [--steps 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from runner.backends import get_backend
from runner.manifest.schema import ParallelSpec, validate_env

godot, gymnasium = get_backend("godot"), get_backend("gymnasium")

SPECS = {
    "godot": validate_env({"backend": "godot", "id": "ballchase"}),
    "surrogate": validate_env({"backend": "gymnasium", "id": "rlcrate/BallChaseSim-v0"}),
}
BACKENDS = {"godot": godot, "surrogate": gymnasium}


def env_only(name: str, n: int, steps: int, warmup: int = 200) -> float:
    venv = BACKENDS[name].make_vec_env(SPECS[name], ParallelSpec(envs=n), seed=0, log_dir=None)
    try:
        actions = np.random.default_rng(0).integers(0, 9, size=(steps + warmup, n))
        venv.reset()
        for i in range(warmup):
            venv.step(actions[i])
        t = time.perf_counter()
        for i in range(warmup, warmup + steps):
            venv.step(actions[i])
        return steps * n / (time.perf_counter() - t)
    finally:
        venv.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--envs", type=int, nargs="+", default=[16, 64])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    out = {}
    for n in args.envs:
        pairs = [
            (env_only("godot", n, args.steps), env_only("surrogate", n, args.steps))
            for _ in range(args.repeats)
        ]
        g, s = (statistics.median(x) for x in zip(*pairs, strict=True))
        ratios = [b / a for a, b in pairs]
        out[n] = {"godot": g, "surrogate": s, "ratios": ratios}
        print(
            f"{n} envs: godot {g:,.0f} steps/s, surrogate {s:,.0f} steps/s, "
            f"ratio {statistics.median(ratios):.1f}x (pairs {min(ratios):.1f}-{max(ratios):.1f}x)"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
