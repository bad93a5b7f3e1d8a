"""Executor overhead: the same tiny manifest through local, Ray and Slurm, interleaved.

    .venv/bin/python tests/benchmarks/bench_executors.py [--repeats 3] [--seeds 2]

Needs root (it starts the tests' single-node Slurm cluster) and Ray. The Ray head (all CPUs of
this machine) and the Slurm daemons are started once, before the first run, so their start-up
is not counted: that is what a user submitting to a running cluster sees. Per run it reports the
wall time of `rlcrate run` (start of the process to its exit) and the time from that start to
the first unit running (the earliest `started` a unit writes into its status.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import ray_nodes, slurm_cluster  # noqa: E402

EXE = Path(sys.executable).with_name("rlcrate")
EXECUTORS = ("local", "ray", "slurm")


def manifest(seeds: int) -> dict:
    return {
        "rlcrate": 1,
        "name": "overhead",
        "env": {"backend": "gymnasium", "id": "CartPole-v1"},
        "parallel": {"envs": 2, "workers": 1, "mode": "dummy"},
        "algo": {"name": "PPO", "params": {"n_steps": 64, "batch_size": 64, "n_epochs": 2}},
        "train": {"timesteps": 2048},
        "eval": {"episodes": 3},
        "seeds": list(range(seeds)),
    }


def one(executor: str, m: Path, out: Path, extra: list[str], env: dict) -> tuple[float, float]:
    t0 = time.time()
    got = subprocess.run(
        [str(EXE), "run", str(m), "--out", str(out), "-x", executor, *extra],
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.time() - t0
    if got.returncode:
        raise SystemExit(f"{executor} run failed: {got.stderr[-2000:]}")
    run = sorted((out / "overhead").iterdir())[-1]
    starts = [json.loads(p.read_text())["started"] for p in run.glob("units/*/*/status.json")]
    return wall, min(starts) - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {e: [] for e in EXECUTORS}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        m = tmp / "m.yaml"
        m.write_text(yaml.safe_dump(manifest(args.seeds)))
        env_slurm = slurm_cluster.start(tmp / "slurm")
        address, head = ray_nodes.start_head(tmp, cpus=os.cpu_count() or 1)
        try:
            extra = {
                "local": [],
                "ray": ["--ray-address", address],
                "slurm": ["--time", "30"],
            }
            for i in range(args.repeats):
                order = EXECUTORS[i % 3 :] + EXECUTORS[: i % 3]  # rotate who goes first
                for e in order:
                    rows[e].append(one(e, m, tmp / f"runs-{e}", extra[e], env_slurm))
        finally:
            head.kill()
            slurm_cluster.stop(tmp / "slurm", env_slurm)
    load = os.getloadavg()
    print(
        f"tiny manifest: PPO CartPole-v1, 2048 steps, {args.seeds} seeds (units), "
        f"{args.repeats} interleaved repeats; load average {load[0]:.1f} {load[1]:.1f}"
    )
    base = statistics.median(w for w, _ in rows["local"])
    for e, r in rows.items():
        wall = statistics.median(w for w, _ in r)
        first = statistics.median(f for _, f in r)
        print(
            f"  {e:6s} wall s median {wall:6.1f} (x{wall / base:.2f} local)  "
            f"to first unit running median {first:5.1f} s  "
            f"runs {[round(w, 1) for w, _ in r]} / {[round(f, 1) for _, f in r]}"
        )


if __name__ == "__main__":
    main()
