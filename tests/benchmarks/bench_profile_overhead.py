"""The rollout profile's own cost on training steps/s, Godot BallChase 1x16 and 2x16, unpaced.

    .venv/bin/python tests/benchmarks/bench_profile_overhead.py [--pairs 10] [--steps 2048]

Each pair trains the same PPO model for --steps with and without the profile's timers, in
alternating order (ABBA); prints the median and quartiles over the pairs of the steps/s lost and
of the training process's CPU time per step added, and the counted bound (timed calls per step x
the cost of one timed call).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import yaml

from runner.manifest.schema import Manifest
from runner.record.seeding import derive, seed_everything
from runner.trainers.sb3.common import make_env
from runner.trainers.sb3.options import options
from runner.trainers.sb3.profile import profile_train
from tests.helpers import ROOT


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2048)
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()}, {os.cpu_count()} CPUs")
    for workers in (1, 2):
        data = yaml.safe_load((ROOT / "manifests" / "ballchase-profile.yaml").read_text())
        data.pop("matrix")
        data["env"]["pacing"] = "unpaced"
        data["parallel"]["workers"] = workers
        data["bench"].update(steps=args.steps, warmup=1024, repeats=args.pairs)
        cfg = Manifest.model_validate(data)
        seeds = derive(0)
        seed_everything(seeds, torch_threads=options(cfg).torch_threads)
        venv = make_env(cfg, seed=seeds["env"])
        try:
            prof = profile_train(cfg, venv, seeds)
        finally:
            venv.close()
        r = np.array(prof["overhead_ratios"])
        q1, med, q3 = np.percentile(1 - r, [25, 50, 75])
        c1, cmed, c3 = np.percentile(np.array(prof["overhead_cpu_ratios"]) - 1, [25, 50, 75])
        print(
            f"{workers}x16: steps/s lost, median {100 * med:+.2f}% (quartiles {100 * q1:+.2f}% "
            f".. {100 * q3:+.2f}%); trainer CPU per step added, median {100 * cmed:+.2f}% "
            f"(quartiles {100 * c1:+.2f}% .. {100 * c3:+.2f}%); {len(r)} pairs of "
            f"{args.steps} steps; counted bound "
            f"{100 * prof['overhead_bound']:.3f}% ({prof['timed_calls_per_step']:.2f} timed "
            f"calls per step); {prof['steps_per_s']:.0f} steps/s profiled"
        )
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
