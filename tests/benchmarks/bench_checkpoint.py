"""Checkpoint figures (a script, not a test): the share of training time spent saving periodic
checkpoints (model, statistics and the state of an exact resume), and their size on disk, for
PPO on CartPole and SAC on Pendulum with a 100k replay buffer.

    .venv/bin/python tests/benchmarks/bench_checkpoint.py [--out bench-checkpoint.json] [--quick]

Each case trains one unit in this process through the SB3 trainer (`sb3.training.train`), with
every checkpoint save timed; the share is the saves' seconds over the training's wall time
(`--quick` skips these trainings, about 7 minutes here). Then SAC's state with its 100k buffer
full (written and read once), and what recording the envs' actions for the replay costs per
env step (CartPole, 8 envs in a DummyVecEnv, random actions, with and without `Replayable`).
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
from runner.trainers import get_trainer
from runner.trainers.sb3 import exact, state

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
            fields = get_trainer("sb3").train(cfg, Path(tmp), seeds).fields()
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


def full_buffer() -> dict[str, Any]:
    """SAC on Pendulum with its 100k replay buffer full: the state's size, write and read time."""
    import numpy as np

    from runner.trainers.sb3.common import make_env, make_model

    spec = CASES["SAC Pendulum-v1, 1 env, 100k buffer, 20k steps, checkpoint every 2k"]
    cfg = Manifest.model_validate({"rlcrate": 1, "name": "bench", "seeds": [0], **spec})
    seeds = derive(0)
    venv = make_env(cfg, seed=seeds["env"])
    model = make_model(cfg, venv, seed=seeds["model"], tb_dir=None)
    model.learn(200)  # an episode in progress
    buf, rng = model.replay_buffer, np.random.default_rng(0)
    for name in ("observations", "next_observations", "actions", "rewards"):
        arr = getattr(buf, name)
        arr[:] = rng.standard_normal(arr.shape).astype(arr.dtype)
    buf.full, buf.pos = True, 0
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = Path(tmp) / "step-200.zip"
        t0 = time.perf_counter()
        names = state.write_state(model, ckpt, {"bench": 1}, True)
        t1 = time.perf_counter()
        state.read_state(ckpt, {"bench": 1})
        t2 = time.perf_counter()
        sizes = {n.split(".", 1)[1]: (Path(tmp) / n).stat().st_size for n in names}
    venv.close()
    return {"case": "SAC state, 100k buffer full", "bytes": sizes,
            "write_s": round(t1 - t0, 4), "read_s": round(t2 - t1, 4)}  # fmt: skip


def recording_cost(n_envs: int = 8, steps: int = 20_000) -> dict[str, Any]:
    """Env steps/s of CartPole in a DummyVecEnv, plain and with `Replayable`, twice each."""
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.vec_env import DummyVecEnv

    from runner.backends.replay import Replayable

    def rate(wrap: bool) -> float:
        make = (lambda: Replayable(gym.make("CartPole-v1"))) if wrap else (
            lambda: gym.make("CartPole-v1"))  # fmt: skip
        venv = DummyVecEnv([make] * n_envs)
        venv.seed(0)
        venv.reset()
        actions = np.random.default_rng(0).integers(0, 2, size=(steps, n_envs))
        t0 = time.perf_counter()
        for a in actions:
            venv.step(a)
        return steps * n_envs / (time.perf_counter() - t0)

    plain, recorded = [], []
    for _ in range(2):
        plain.append(rate(False))
        recorded.append(rate(True))
    us = 1e6 * (1 / max(recorded) - 1 / max(plain))
    return {"case": "recording actions (CartPole, 8 envs)", "plain_steps_per_s": plain,
            "recorded_steps_per_s": recorded, "us_per_env_step": round(us, 2)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--quick", action="store_true", help="skip the two trainings")
    args = ap.parse_args()
    results = [] if args.quick else [measure(name, spec) for name, spec in CASES.items()]
    results += [full_buffer(), recording_cost()]
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
