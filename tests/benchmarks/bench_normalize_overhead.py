"""What `algo.normalize` costs in training steps/s (a script, not a test): the same manifest
trained with and without VecNormalize, as interleaved pairs (the order alternates), through the
SB3 trainer's own env and model construction, one torch thread.

    .venv/bin/python tests/benchmarks/bench_normalize_overhead.py [--env CartPole-v1] \\
        [--envs 8] [--steps 16384] [--pairs 5] [--out normalize-overhead.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from runner.manifest.schema import Manifest
from runner.record.seeding import derive, seed_everything
from runner.trainers.sb3.common import make_env, make_model


def steps_per_s(env_id: str, envs: int, steps: int, normalize: bool, seed: int) -> float:
    cfg = Manifest.model_validate(
        {
            "rlcrate": 1,
            "name": "overhead",
            "env": {"backend": "gymnasium", "id": env_id},
            "parallel": {"envs": envs},
            "algo": {"name": "PPO", "params": {"n_steps": 256}, "normalize": normalize},
        }
    )
    seeds = derive(seed)
    seed_everything(seeds, torch_threads=1)
    venv = make_env(cfg, seed=seeds["env"])
    try:
        model = make_model(cfg, venv, seed=seeds["model"], tb_dir=None)
        t0 = time.perf_counter()
        model.learn(steps)
        return model.num_timesteps / (time.perf_counter() - t0)
    finally:
        venv.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--env", default="CartPole-v1")
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=16384)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("normalize-overhead.json"))
    a = p.parse_args()
    pairs = []
    for i in range(a.pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        rate = {n: steps_per_s(a.env, a.envs, a.steps, n, seed=i) for n in order}
        pairs.append(
            {
                "off": rate[False],
                "on": rate[True],
                "ratio": rate[True] / rate[False],
                "load": os.getloadavg()[0],
            }
        )
        print(
            f"pair {i}: off {rate[False]:.0f} on {rate[True]:.0f} steps/s, "
            f"ratio {pairs[-1]['ratio']:.3f}",
            flush=True,
        )
    ratios = [x["ratio"] for x in pairs]
    result = {
        "args": vars(a) | {"out": str(a.out)},
        "pairs": pairs,
        "median_ratio": statistics.median(ratios),
        "min_ratio": min(ratios),
        "max_ratio": max(ratios),
    }
    print(
        f"median on/off ratio {result['median_ratio']:.3f} "
        f"[{result['min_ratio']:.3f}, {result['max_ratio']:.3f}]"
    )
    a.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
