"""Brax and Isaac Lab through rlcrate vs each framework's own script, on this machine.

    .venv/bin/python tests/benchmarks/bench_frameworks.py [--repeats 2] [--only brax,isaaclab,envs]
        [--out bench-frameworks.json]

Pairs run interleaved (own, rlcrate, own, rlcrate ...) so machine noise hits both alike; each
run is a fresh process with the same configuration. Training steps/s is timed around the same
call on both sides: Brax's `ppo.train` (rlcrate's status.json `train_steps_per_s` times exactly
that call, XLA compilation included on both sides) and SB3's `learn` on Isaac Lab's own SB3
wrapper (the plain script builds the task the way Isaac Lab's train_sb3 entrypoint does, with
the CPU picks rlcrate makes on a CPU-only machine). Also: Brax's PPO vs SB3 PPO through the
VecEnv adapter, and env-only steps/s (random actions) at a few env counts for both frameworks.
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
EXE = Path(sys.executable).with_name("rlcrate")
BRAX_PY = os.environ.get("RLCRATE_PYTHON_BRAX") or sys.executable  # both locks carry Brax
ISAAC_PY = os.environ.get("RLCRATE_PYTHON_ISAACLAB") or str(ROOT / ".cache/gpu-env/bin/python")
BRAX_ENV = {"backend": "brax", "id": "inverted_pendulum",
            "kwargs": {"backend": "generalized", "episode_length": 200}}  # fmt: skip
BRAX_PPO = {"unroll_length": 16, "batch_size": 32, "num_minibatches": 4,
            "num_updates_per_batch": 2, "learning_rate": 0.001, "discounting": 0.97,
            "network": {"policy_hidden_layer_sizes": [32, 32],
                        "value_hidden_layer_sizes": [32, 32]}}  # fmt: skip
BRAX_ENVS, BRAX_STEPS = 64, 16384
IL_ENVS, IL_STEPS = 64, 8192
SB3_PPO = {"n_steps": 32, "batch_size": 512, "n_epochs": 4, "learning_rate": 0.0003}

BRAX_OWN = """
import functools, time
from brax import envs
from brax.training.agents.ppo import networks, train as ppo
p = {params}
net = p.pop("network")
env = envs.get_environment("inverted_pendulum", backend="generalized")
t = time.perf_counter()
ppo.train(environment=env, num_timesteps={steps}, num_envs={envs}, seed=0, episode_length=200,
          num_evals=0, log_training_metrics=True, progress_fn=lambda *a: None,
          network_factory=functools.partial(networks.make_ppo_networks,
                                            **{{k: tuple(v) for k, v in net.items()}}), **p)
print({steps} / (time.perf_counter() - t))
"""

ISAAC_OWN = """
import time, gymnasium as gym, torch
import isaaclab_tasks
from isaaclab.app import launch_simulation
from isaaclab_rl.sb3 import Sb3VecEnvWrapper
from isaaclab_tasks.utils import parse_env_cfg
from stable_baselines3 import PPO
from runner.backends.isaaclab.env import local_cartpole
from pathlib import Path
torch.set_num_threads(1)
task = "Isaac-Cartpole-Direct"
cfg = parse_env_cfg(task, device="cpu", num_envs={envs}, overrides=["physics=newton_mjwarp"])
cfg.sim.physics.use_cuda_graph = False
cfg.scene.ground = None
cfg.scene.cartpole.spawn.usd_path = str(local_cartpole(Path("{cache}")))
cfg.seed = 0
with launch_simulation(cfg, {{"device": "cpu", "headless": True}}):
    env = Sb3VecEnvWrapper(gym.make(task, cfg=cfg))
    model = PPO("MlpPolicy", env, seed=0, device="cpu", verbose=0, **{params})
    t = time.perf_counter()
    model.learn(total_timesteps={steps})
    print("SPS", model.num_timesteps / (time.perf_counter() - t))
    env.close()
"""

BRAX_ENV_ONLY = """
import time, jax, jax.numpy as jnp
from brax import envs
env = envs.get_environment("inverted_pendulum", backend="generalized")
for n in {counts}:
    step = jax.jit(jax.vmap(env.step))
    s = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    a = jnp.zeros((n, env.action_size))
    s = step(s, a); jax.block_until_ready(s.obs)
    t = time.perf_counter()
    for _ in range(200):
        s = step(s, a)
    jax.block_until_ready(s.obs)
    print("ENV", n, 200 * n / (time.perf_counter() - t), flush=True)
"""

ISAAC_ENV_ONLY = """
import time, numpy as np, gymnasium as gym
import isaaclab_tasks
from isaaclab.app import launch_simulation
from isaaclab_rl.sb3 import Sb3VecEnvWrapper
from isaaclab_tasks.utils import parse_env_cfg
from runner.backends.isaaclab.env import local_cartpole
from pathlib import Path
n = {n}
task = "Isaac-Cartpole-Direct"
cfg = parse_env_cfg(task, device="cpu", num_envs=n, overrides=["physics=newton_mjwarp"])
cfg.sim.physics.use_cuda_graph = False
cfg.scene.ground = None
cfg.scene.cartpole.spawn.usd_path = str(local_cartpole(Path("{cache}")))
with launch_simulation(cfg, {{"device": "cpu", "headless": True}}):
    env = Sb3VecEnvWrapper(gym.make(task, cfg=cfg))
    env.reset()
    act = np.random.default_rng(0).uniform(-1, 1, (n, 1)).astype(np.float32)
    for _ in range(20):
        env.step(act)
    t = time.perf_counter()
    for _ in range(200):
        env.step(act)
    print("ENV", n, 200 * n / (time.perf_counter() - t), flush=True)
    env.close()
"""


def _py(python: str, code: str, marker: str = "") -> list[str]:
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(marker)] if marker else [
        out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""]  # fmt: skip
    if out.returncode != 0 or not lines or not lines[-1]:
        raise RuntimeError(f"{python} failed: {out.stderr[-2000:]}")
    return lines


def _rlcrate(m: dict, tmp: Path) -> float:
    path = tmp / f"{m['name']}.yaml"
    path.write_text(yaml.safe_dump(m))
    subprocess.run([str(EXE), "run", str(path), "--out", str(tmp)], check=True,
                   capture_output=True)  # fmt: skip
    status = next((tmp / m["name"]).glob("*/units/default/seed-0/status.json"))
    return float(json.loads(status.read_text())["train_steps_per_s"])


def brax_pair(tmp: Path, i: int, algo: dict) -> dict[str, float]:
    own = float(_py(BRAX_PY, BRAX_OWN.format(params=BRAX_PPO, steps=BRAX_STEPS,
                                             envs=BRAX_ENVS))[-1])  # fmt: skip
    m = {"rlcrate": 1, "name": f"bx{i}", "env": BRAX_ENV, "parallel": {"envs": BRAX_ENVS},
         "algo": {"name": "brax_ppo", "params": BRAX_PPO}, "train": {"timesteps": BRAX_STEPS},
         "eval": {"episodes": 2}, "seeds": [0]}  # fmt: skip
    via = _rlcrate(m, tmp)
    m.update(name=f"bxsb3{i}", algo=algo, train={"timesteps": BRAX_STEPS // 4})
    return {"own": own, "rlcrate": via, "sb3_adapter": _rlcrate(m, tmp)}


def isaac_pair(tmp: Path, i: int) -> dict[str, float]:
    code = ISAAC_OWN.format(envs=IL_ENVS, steps=IL_STEPS, params=SB3_PPO, cache=tmp)
    own = float(_py(ISAAC_PY, code, "SPS")[-1].split()[1])
    m = {"rlcrate": 1, "name": f"il{i}", "env": {"backend": "isaaclab",
         "id": "Isaac-Cartpole-Direct"}, "parallel": {"envs": IL_ENVS},
         "algo": {"name": "PPO", "params": SB3_PPO}, "train": {"timesteps": IL_STEPS},
         "eval": {"episodes": 1}, "seeds": [0]}  # fmt: skip
    return {"own": own, "rlcrate": _rlcrate(m, tmp)}


def env_only(tmp: Path) -> dict[str, dict[str, float]]:
    counts = [64, 256, 1024]
    brax = {ln.split()[1]: float(ln.split()[2])
            for ln in _py(BRAX_PY, BRAX_ENV_ONLY.format(counts=counts), "ENV")}  # fmt: skip
    isaac = {}
    for n in (16, 64, 256):
        line = _py(ISAAC_PY, ISAAC_ENV_ONLY.format(n=n, cache=tmp), "ENV")[-1]
        isaac[str(n)] = float(line.split()[2])
    return {"brax_inverted_pendulum": brax, "isaaclab_cartpole_direct": isaac}


def _ratio(pairs: list[dict[str, float]], a: str, b: str) -> dict[str, float]:
    ratios = [p[a] / p[b] for p in pairs]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", default="brax,isaaclab,envs")
    ap.add_argument("--out", default="bench-frameworks.json")
    args = ap.parse_args()
    only = set(args.only.split(","))
    result: dict[str, object] = {"load_before": os.getloadavg(), "started": time.time()}
    sb3 = {"name": "PPO", "params": {"n_steps": 64, "batch_size": 256, "n_epochs": 4}}
    with tempfile.TemporaryDirectory() as tmp:
        if "brax" in only:
            pairs = [brax_pair(Path(tmp), i, sb3) for i in range(args.repeats)]
            result["brax"] = {
                "pairs": pairs,
                "rlcrate_over_own": _ratio(pairs, "rlcrate", "own"),
                "native_over_adapter": _ratio(pairs, "rlcrate", "sb3_adapter"),
            }
        if "isaaclab" in only:
            pairs = [isaac_pair(Path(tmp), i) for i in range(args.repeats)]
            result["isaaclab"] = {
                "pairs": pairs,
                "rlcrate_over_own": _ratio(pairs, "rlcrate", "own"),
            }
        if "envs" in only:
            result["env_only"] = env_only(Path(tmp))
    result["load_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
