"""What `rlcrate run` costs beyond its training: whole processes, against a plain script.

    .venv/bin/python tests/benchmarks/bench_overhead.py [--pairs 3] [--short 30000]
        [--long 300000] [--matrix-steps 4096] [--only short,long,matrix,commands]

The plain script is what a researcher writes without rlcrate: Stable-Baselines3's PPO on
CartPole-v1 with 4 envs in one process (DummyVecEnv), `PARAMS`, torch on one thread, `learn`,
`save`, and a 2-episode deterministic evaluation on a fresh env. `rlcrate run` gets the same job
as a manifest (one seed, `train,eval`), so it also writes what a run directory holds: TensorBoard
scalars, checkpoints, provenance, the summary, report.md and its plots.

- short and long: one unit of `--short` and `--long` env steps (about 10 s and 60 s here),
  `--pairs` interleaved pairs (plain, rlcrate, plain, rlcrate ...) so that machine noise hits both
  alike; wall and CPU time (user + system of every process, children included) per side, the
  rlcrate/plain ratio per pair, its median and range.
- matrix: 24 units (6 learning rates x 4 seeds) of `--matrix-steps` steps each, `rlcrate run` with
  `parallel.units: 2` against the plain script run 24 times, two at a time.
- commands: median of 5 of `--help`, `validate`, `status`, `image ls` and `doctor`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).with_name("rlcrate")
RATES = [1e-4, 2e-4, 3e-4, 5e-4, 1e-3, 2e-3]
SEEDS = [0, 1, 2, 3]
PARAMS = {"n_steps": 128, "batch_size": 256, "n_epochs": 4}  # a job of ~10 s plain

PLAIN = """
import sys
import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

steps, seed, lr, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
torch.set_num_threads(1)
env = make_vec_env("CartPole-v1", n_envs=4, seed=seed)
params = {params}
model = PPO("MlpPolicy", env, seed=seed, learning_rate=lr, device="cpu", verbose=0, **params)
model.learn(total_timesteps=steps)
model.save(out)
eval_env = gym.make("CartPole-v1")
eval_env.reset(seed=seed + 1000)
mean, std = evaluate_policy(model, eval_env, n_eval_episodes=2, deterministic=True)
print(mean)
"""


def _cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(fn) -> tuple[float, float]:
    """(wall s, CPU s of the processes `fn` started and waited for)."""
    cpu, t = _cpu(), time.perf_counter()
    fn()
    return time.perf_counter() - t, _cpu() - cpu


def plain_unit(tmp: Path, steps: int, seed: int = 0, lr: float = 3e-4) -> None:
    out = tmp / f"plain-{seed}-{lr}.zip"
    code = PLAIN.format(params=PARAMS)
    subprocess.run([sys.executable, "-c", code, str(steps), str(seed), str(lr), str(out)],
                   capture_output=True, check=True)  # fmt: skip


def manifest(tmp: Path, name: str, steps: int, matrix: bool = False) -> Path:
    m = {
        "rlcrate": 1,
        "name": name,
        "env": {"backend": "gymnasium", "id": "CartPole-v1"},
        "parallel": {"envs": 4, "mode": "dummy", **({"units": 2} if matrix else {})},
        "algo": {"name": "PPO", "params": PARAMS},
        "train": {"timesteps": steps},
        "eval": {"episodes": 2},
        "seeds": SEEDS if matrix else [0],
    }
    if matrix:
        m["matrix"] = {"algo.params.learning_rate": RATES}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    return path


def rlcrate(tmp: Path, path: Path) -> None:
    res = subprocess.run(
        [str(EXE), "run", str(path), "--out", str(tmp / "runs")], capture_output=True, text=True
    )
    if res.returncode != 0:
        raise SystemExit(f"rlcrate run {path} failed:\n{res.stderr[-3000:]}")


def plain_matrix(tmp: Path, steps: int) -> None:
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(plain_unit, tmp, steps, s, lr) for lr in RATES for s in SEEDS]
        for job in jobs:
            job.result()


def pairs(label: str, n: int, plain, ours) -> None:
    rows = []
    for i in range(n):
        rows.append((timed(plain), timed(lambda i=i: ours(i))))
    ratios = [o[0] / p[0] for p, o in rows]
    cpu_ratios = [o[1] / p[1] for p, o in rows]
    print(f"{label}: {n} interleaved pairs")
    for side, k in (("plain  ", 0), ("rlcrate", 1)):
        walls = [r[k][0] for r in rows]
        cpus = [r[k][1] for r in rows]
        med = statistics.median(walls)
        print(f"  {side} wall s {[round(w, 1) for w in walls]} (median {med:.1f})"
              f"  CPU s {[round(c, 1) for c in cpus]}")  # fmt: skip
    print(
        f"  rlcrate/plain wall: median {statistics.median(ratios):.3f}, "
        f"range {min(ratios):.3f}-{max(ratios):.3f}; CPU: median "
        f"{statistics.median(cpu_ratios):.3f}, range {min(cpu_ratios):.3f}-{max(cpu_ratios):.3f}"
    )


def commands(tmp: Path) -> None:
    path = manifest(tmp, "look", 512)
    rlcrate(tmp, path)
    run_dir = next((tmp / "runs" / "look").iterdir())
    print("commands: median of 5, whole processes")
    for args in (
        ["--help"],
        ["validate", str(path)],
        ["status", str(run_dir)],
        ["image", "ls"],
        ["doctor"],
    ):
        walls = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([str(EXE), *args], capture_output=True, check=False)
            walls.append(time.perf_counter() - t)
        print(f"  rlcrate {args[0]:9s} {statistics.median(walls):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--short", type=int, default=30_000)
    ap.add_argument("--long", type=int, default=300_000)
    ap.add_argument("--matrix-steps", type=int, default=4096)
    ap.add_argument("--only", default="short,long,matrix,commands")
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(f"load average before: {os.getloadavg()[0]:.2f}; CPUs: {os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        for label, steps in (("short", args.short), ("long", args.long)):
            if label in only:
                path = lambda i, s=steps, lb=label: manifest(tmp, f"{lb}{i}", s)  # noqa: E731
                pairs(
                    f"{label} job: PPO CartPole-v1, 4 envs, {steps} steps, 2 eval episodes",
                    args.pairs,
                    lambda s=steps: plain_unit(tmp, s),
                    lambda i, p=path: rlcrate(tmp, p(i)),
                )
        if "matrix" in only:
            pairs(
                f"matrix: {len(RATES) * len(SEEDS)} units of {args.matrix_steps} steps, two at a "
                "time",
                max(1, args.pairs - 1),
                lambda: plain_matrix(tmp, args.matrix_steps),
                lambda i: rlcrate(tmp, manifest(tmp, f"matrix{i}", args.matrix_steps, True)),
            )
        if "commands" in only:
            commands(tmp)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
