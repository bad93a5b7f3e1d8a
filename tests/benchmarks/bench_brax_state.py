"""What an exact resume's env state costs on Brax through SB3's adapter (a script, not a test):
saving every env's state (`env_method(REPLAY_STATE)`, once for all envs) and putting it back into
a fresh adapter one env per call, as `trainers/sb3/state_env.py` does, at growing env counts.

    .venv/bin/python tests/benchmarks/bench_brax_state.py [--envs 4096 16384] [--reps 3]

Brax's `fast` env (its own env for testing trainers: a small state, no physics compile). Each
figure is the median over repeats; a restore that does not give the saved observations fails.
To compare two checkouts, run it in each with PYTHONPATH set to that checkout, in turns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from runner.backends import get_backend
from runner.backends.replay import REPLAY, REPLAY_STATE
from runner.manifest.schema import ParallelSpec

FAST = {"backend": "brax", "id": "fast", "kwargs": {"episode_length": 50}}


def once(n: int) -> tuple[float, float]:
    brax = get_backend("brax")
    env, parallel = brax.Options.model_validate(FAST), ParallelSpec(envs=n)
    a = brax.make_vec_env(env, parallel, seed=7, log_dir=None)
    a.reset()
    a.step(np.zeros((n, *(a.action_space.shape or ())), np.float32))
    t0 = time.perf_counter()
    saved = a.env_method(REPLAY_STATE)
    t1 = time.perf_counter()
    b = brax.make_vec_env(env, parallel, seed=0, log_dir=None)
    t2 = time.perf_counter()
    put = [b.env_method(REPLAY, s, indices=[i])[0] for i, s in enumerate(saved)]
    t3 = time.perf_counter()
    if not all(put):
        raise SystemExit(f"{n} envs: the restored state does not give the saved observations")
    return t1 - t0, t3 - t2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    out = {}
    for n in args.envs:
        runs = [once(n) for _ in range(args.reps)]
        out[n] = {
            "save_s": round(statistics.median(r[0] for r in runs), 3),
            "restore_s": round(statistics.median(r[1] for r in runs), 3),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
