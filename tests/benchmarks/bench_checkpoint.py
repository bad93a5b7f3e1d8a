"""Checkpoint figures (a script, not a test): the share of training time spent saving periodic
checkpoints (model, statistics and the state of an exact resume), and their size on disk, for
PPO on CartPole and SAC on Pendulum with a 100k replay buffer.

    .venv/bin/python tests/benchmarks/bench_checkpoint.py [--out bench-checkpoint.json]

Each case trains one unit in this process through the SB3 trainer (`trainers.sb3.train`), with
every checkpoint save timed; the share is the saves' seconds over the training's wall time.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.record.seeding import derive, seed_everything
from runner.trainers import sb3
from runner.trainers.sb3 import exact

CASES: dict[str, dict[str, Any]] = {
    "PPO CartPole-v1, 8 envs, 200k steps, checkpoint every 20k": {
        "env": {"backend": "gymnasium", "id": "CartPole-v1"},
        "parallel": {"envs": 8, "workers": 1, "mode": "dummy"},
        "algo": {"name": "PPO", "params": {"n_steps": 256}},
        "train": {"timesteps": 200_000, "checkpoint_every": 20_000},
    },
    "SAC Pendulum-v1, 1 env, 100k buffer, 20k steps, checkpoint every 2k": {
        "env": {"backend": "gymnasium", "id": "Pendulum-v1"},
        "parallel": {"envs": 1, "workers": 1, "mode": "dummy"},
        "algo": {"name": "SAC", "params": {"buffer_size": 100_000}},
        "train": {"timesteps": 20_000, "checkpoint_every": 2_000},
    },
}


def _sizes(folder: Path) -> dict[str, int]:
    """Bytes of the newest checkpoint's files, by kind."""
    steps = max(int(p.stem.split("-")[1]) for p in folder.glob("step-*.zip"))
    return {p.name.split(".", 1)[1]: p.stat().st_size for p in folder.glob(f"step-{steps}.*")}


def measure(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    cfg = Manifest.model_validate({"rlcrate": 1, "name": "bench", "seeds": [0], **spec})
    seeds = derive(0)
    seed_everything(seeds, torch_threads=1, with_torch=True)
    spent: list[float] = []
    save = exact.Exact.save

    def timed(self, *args, **kwargs):
        t0 = time.perf_counter()
        save(self, *args, **kwargs)
        spent.append(time.perf_counter() - t0)

    exact.Exact.save = timed  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            fields = sb3.train(cfg, Path(tmp), seeds)
            sizes = _sizes(Path(tmp) / "checkpoints")
    finally:
        exact.Exact.save = save  # type: ignore[method-assign]
    wall = fields["train_wall_time_s"]
    return {
        "case": name,
        "train_wall_s": round(wall, 2),
        "checkpoints": len(spent),
        "save_s_total": round(sum(spent), 3),
        "save_s_each": round(sum(spent) / max(len(spent), 1), 4),
        "share_of_training": round(sum(spent) / wall, 4),
        "newest_checkpoint_bytes": sizes,
        "newest_checkpoint_total_bytes": sum(sizes.values()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    results = [measure(name, spec) for name, spec in CASES.items()]
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
