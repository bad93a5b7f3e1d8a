"""Runner overhead vs a plain Stable-Baselines3 script, and CLI start-up time.

    .venv/bin/python tests/benchmarks/bench_overhead.py [--timesteps 30000] [--repeats 3]

Both sides train PPO on CartPole-v1 with the same hyperparameters, env count and torch threads,
interleaved (plain, runner, plain, runner ...) so machine noise hits both alike. Steps/s is the
training loop's own rate: the runner's status.json `train_steps_per_s` and, for the plain script,
the same learn() call timed the same way. Also reported: end-to-end wall time per unit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "manifests/quickstart.yaml"
EXE = Path(sys.executable).with_name("rlcrate")
PARAMS = {"n_steps": 128, "batch_size": 256, "n_epochs": 4}

PLAIN = """
import sys, time, torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
torch.set_num_threads(1)
env = make_vec_env("CartPole-v1", n_envs=4, seed=0)
model = PPO("MlpPolicy", env, seed=0, device="cpu", verbose=0, **{params})
t = time.perf_counter()
model.learn(total_timesteps={timesteps})
print(model.num_timesteps / (time.perf_counter() - t))
"""


def plain(timesteps: int) -> tuple[float, float]:
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", PLAIN.format(params=PARAMS, timesteps=timesteps)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip()), time.perf_counter() - t


def runner(timesteps: int, tmp: Path, i: int) -> tuple[float, float]:
    manifest = {
        "rlcrate": 1,
        "name": f"overhead{i}",
        "env": {"backend": "gymnasium", "id": "CartPole-v1"},
        "parallel": {"envs": 4},
        "algo": {"name": "PPO", "params": PARAMS},
        "train": {"timesteps": timesteps},
        "eval": {"episodes": 1},
        "seeds": [0],
    }
    path = tmp / f"m{i}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    t = time.perf_counter()
    subprocess.run(
        [str(EXE), "run", str(path), "--out", str(tmp / "runs"), "--jobs", "train"],
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - t
    status = next((tmp / "runs" / f"overhead{i}").glob("*/units/default/seed-0/status.json"))
    return json.loads(status.read_text())["train_steps_per_s"], wall


def startup(args: list[str], n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([str(EXE), *args], capture_output=True, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timesteps", type=int, default=30_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {"plain": [], "runner": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            rows["plain"].append(plain(args.timesteps))
            rows["runner"].append(runner(args.timesteps, Path(tmp), i))
    med = {k: statistics.median(r for r, _ in v) for k, v in rows.items()}
    print(f"PPO CartPole-v1, 4 envs, {args.timesteps} steps, {args.repeats} interleaved repeats")
    for k, v in rows.items():
        print(
            f"  {k:7s} steps/s median {med[k]:8.0f}  runs {[round(r) for r, _ in v]}  "
            f"wall s {[round(w, 1) for _, w in v]}"
        )
    print(
        f"  runner/plain steps/s ratio of medians: {med['runner'] / med['plain']:.3f} "
        f"(overhead {100 * (1 - med['runner'] / med['plain']):+.1f}%)"
    )
    pairs = [r / p for (r, _), (p, _) in zip(rows["runner"], rows["plain"], strict=True)]
    print(f"  per interleaved pair: {[round(x, 3) for x in pairs]}")
    print(f"  rlcrate --help: {startup(['--help']):.3f} s (median of 5)")
    print(f"  rlcrate validate quickstart: {startup(['validate', str(QUICKSTART)]):.3f} s")


if __name__ == "__main__":
    main()
