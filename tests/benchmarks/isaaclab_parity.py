"""Parity with Isaac Lab's own installed training workflows (a script, not a test): interleaved
pairs of Isaac Lab's `isaaclab_rl.entrypoints` train (`--rl_library rsl_rl` or `sb3`) and an
`rlcrate run` of the same task with `algo.defaults: task`, same num_envs, iterations and seed,
in the same Python (the GPU environment). Run from the checkout:

    .cache/gpu-env/bin/python tests/benchmarks/isaaclab_parity.py --library rsl_rl \\
        [--envs 8] [--iterations 4] [--pairs 3] [--seed 0] [--out parity.json]

On a CPU machine without network, Isaac Lab's workflow starts (it needs no Kit: its launcher
picks Newton's MuJoCo-Warp on the CPU) but cannot fetch the cartpole's USD and ground plane
from NVIDIA's asset server (isaaclab/utils/assets.py `_download_file`: FileNotFoundError). The
smallest change that lets it run is three Hydra overrides on its command line, the same
stand-in rlcrate uses: `env.scene.ground=null env.scene.cartpole.spawn.usd_path=<the local
cartpole.usda>` and, for RSL-RL, `agent.device=cpu` (its runner config defaults to cuda:0).

Figures: training steps/s (theirs: env steps / the wall time its `learn` reports, "Training
time" for RSL-RL, SB3's own fps line for SB3; ours: `train_steps_per_s` of the unit) and the
last mean training reward each reached at the same step count. The machine may be shared: the
load average before and after each run is recorded beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TASK = "Isaac-Cartpole-Direct"
STEPS_PER_ENV = {"rsl_rl": 16, "sb3": 16}  # num_steps_per_env / n_steps of the task's configs
CARTPOLE_USD = Path.home() / ".cache" / "rlcrate" / "cartpole.usda"  # rlcrate's stand-in


def theirs(library: str, envs: int, iters: int, seed: int, cwd: Path) -> dict:
    overrides = ["env.scene.ground=null", f"env.scene.cartpole.spawn.usd_path={CARTPOLE_USD}"]
    overrides += ["agent.device=cpu"]  # RSL-RL: its runner config says cuda:0; SB3: its yaml
    code = (
        "import sys; from isaaclab_rl.entrypoints import run_train_cli; sys.exit(run_train_cli())"
    )
    cmd = [sys.executable, "-c", code, "--rl_library", library, "--task", TASK,
           "--num_envs", str(envs), "--max_iterations", str(iters), "--seed", str(seed),
           "--device", "cpu", *overrides]  # fmt: skip
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.perf_counter() - t0
    text = out.stdout + out.stderr
    steps = iters * STEPS_PER_ENV[library] * envs
    train_s = re.findall(r"Training time: ([\d.]+) seconds", text)
    rewards = re.findall(r"Mean reward:\s+([-\d.]+)", text) or re.findall(
        r"ep_rew_mean\s*\|\s*([-\d.e+]+)", text
    )
    return {
        "rc": out.returncode,
        "steps": steps,
        "steps_per_s": steps / float(train_s[-1]) if train_s else None,
        "reward": float(rewards[-1]) if rewards else None,
        "wall_s": wall,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "tail": text.strip().splitlines()[-3:] if out.returncode else [],
    }


def ours(library: str, envs: int, iters: int, seed: int, tmp: Path) -> dict:
    algo = "rsl_rl_ppo" if library == "rsl_rl" else "PPO"
    steps = iters * STEPS_PER_ENV[library] * envs
    m = {"rlcrate": 1, "name": f"parity-{library}", "env": {"backend": "isaaclab", "id": TASK},
         "parallel": {"envs": envs}, "algo": {"name": algo, "defaults": "task"},
         "train": {"timesteps": steps}, "eval": {"episodes": 1}, "seeds": [seed]}  # fmt: skip
    path = tmp / f"{library}.yaml"
    path.write_text(yaml.safe_dump(m))
    load = os.getloadavg()[0]
    out = subprocess.run(
        [str(Path(sys.executable).with_name("rlcrate")), "run", str(path), "--out", str(tmp)],
        capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    status_files = sorted((tmp / m["name"]).glob("*/units/*/seed-*/status.json"))
    status = json.loads(status_files[-1].read_text()) if status_files else {}
    return {
        "rc": out.returncode,
        "steps": status.get("timesteps_done"),
        "steps_per_s": status.get("train_steps_per_s"),
        "reward": _last_reward(status_files[-1].parent) if status_files else None,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "tail": out.stderr.strip().splitlines()[-3:] if out.returncode else [],
    }


def _last_reward(unit: Path) -> float | None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    best: tuple[int, float] | None = None
    for events in (unit / "tb").rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events.parent))
        acc.Reload()
        if "rollout/ep_rew_mean" in acc.Tags()["scalars"]:
            last = acc.Scalars("rollout/ep_rew_mean")[-1]
            best = max(best or (last.step, last.value), (last.step, last.value))
    return best[1] if best else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", choices=("rsl_rl", "sb3"), default="rsl_rl")
    ap.add_argument("--envs", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="isaaclab-parity.json")
    a = ap.parse_args()
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):  # interleaved, alternating which goes first
            runs = [("theirs", theirs), ("ours", ours)][:: 1 if i % 2 == 0 else -1]
            pair = {
                name: fn(a.library, a.envs, a.iterations, a.seed, Path(tmp)) for name, fn in runs
            }
            t, o = pair["theirs"]["steps_per_s"], pair["ours"]["steps_per_s"]
            pair["ratio"] = o / t if t and o else None
            pairs.append(pair)
            Path(a.out).write_text(json.dumps({"args": vars(a), "pairs": pairs}, indent=2))
    print(json.dumps([{"ratio": p["ratio"], "theirs": p["theirs"]["steps_per_s"],
                       "ours": p["ours"]["steps_per_s"]} for p in pairs], indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
