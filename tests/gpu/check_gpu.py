"""Check the GPU path in one go on a machine with an NVIDIA GPU; write JSON as it goes.

    tests/gpu/check_gpu.sh [OUT.json] [--only STEP,...] [--dry]
                                        (about 7 minutes at most; each step has a timeout)

Steps (each records its figures, or why it was skipped or failed, and the time it took):
  host       nvidia-smi, CPU count, load
  brax       Brax PPO training steps/s, ant, 1024 and 4096 envs (the GPU environment's JAX)
  isaaclab   Isaac-Cartpole-Direct train + eval through `rlcrate run` on cuda:0 (task defaults)
  rsl_rl     RSL-RL's PPO (`rsl_rl_ppo`, `algo.defaults: task`) through `rlcrate run` on cuda:0:
             Isaac-Cartpole-Direct and the locomotion task Isaac-Velocity-Flat-AnymalD, 4096 envs
             (AnymalD's USD comes from Isaac's asset root: the machine needs its network)
  sb3        SB3 PPO on CartPole through `rlcrate run`, device cuda vs cpu (steps/s)
  resume     `rlcrate check-determinism --resume` of SB3 SAC on Pendulum on cuda:0 (its checkpoints
             carry the CUDA generators; GPU kernels need not repeat, so `approximate` is an answer)
  scaling    `rlcrate bench` env-only steps/s over 1..16 workers: EnvPool Pong, Godot BallChase
The whole run stops starting new steps at DEADLINE_S (420 s) so it ends well inside 8 minutes.

`--dry` (for a machine without a GPU: it claims no GPU figure) gives every manifest the steps
would run to `rlcrate validate --deep` instead (plain validation, then the dry construction in the
backend's own Python: the task's agent config taking algo.params, the env's checks), and runs the
host step; brax is skipped. A `cuda` manifest is then refused here, as it should be on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).with_name("rlcrate")
# The GPU environment (make gpu-env) has JAX's CUDA plugin; the runner's own JAX is the CPU one.
GPU_PY = ROOT / ".cache/gpu-env/bin/python"
BRAX_PY = os.environ.get("RLCRATE_PYTHON_BRAX") or (
    str(GPU_PY) if GPU_PY.exists() else sys.executable
)
DEADLINE_S = 420
T0 = time.monotonic()
DRY = False  # --dry: validate --deep every manifest instead of running it

BRAX = """
import time, functools, jax
from brax import envs
from brax.training.agents.ppo import networks, train as ppo
env = envs.get_environment("ant", backend="generalized")
t = time.perf_counter()
ppo.train(environment=env, num_timesteps={steps}, num_envs={n}, batch_size={n} // 2,
          num_minibatches=16, unroll_length=5, num_updates_per_batch=4, episode_length=1000,
          normalize_observations=True, num_evals=0, seed=0)
print("SPS", {steps} / (time.perf_counter() - t), jax.devices()[0])
"""


def _left() -> float:
    return DEADLINE_S - (time.monotonic() - T0)


def _sh(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 1))


def host() -> dict[str, object]:
    smi = shutil.which("nvidia-smi")
    q = "--query-gpu=name,memory.total,driver_version"
    gpus = _sh([smi, q, "--format=csv,noheader"], 30).stdout.strip() if smi else None
    return {"gpus": gpus, "cpus": os.cpu_count(), "load": os.getloadavg()}


def brax() -> dict[str, object]:
    out = {}
    for n in (1024, 4096):
        res = _sh([BRAX_PY, "-c", BRAX.format(n=n, steps=n * 5 * 16 * 8)], min(90, _left()))
        line = [ln for ln in res.stdout.splitlines() if ln.startswith("SPS")]
        out[str(n)] = (
            {"steps_per_s": float(line[-1].split()[1]), "device": line[-1].split()[2]}
            if line
            else {"error": res.stderr[-500:]}
        )
    return out


def _run(m: dict, tmp: Path, timeout: float, *args: str) -> dict[str, object]:
    path = tmp / f"{m['name']}.yaml"
    path.write_text(yaml.safe_dump(m))
    if DRY:
        res = _sh([str(EXE), "validate", "--deep", str(path)], timeout)
        return {"dry": f"validate --deep (not {args[0]})", "rc": res.returncode,
                "out": (res.stdout + res.stderr).strip()[-500:]}  # fmt: skip
    res = _sh([str(EXE), *args, str(path), "--out", str(tmp)], timeout)
    found = list((tmp / m["name"]).glob("*/units/*/seed-*/status.json"))
    status = json.loads(found[0].read_text()) if found else {}
    bench = list((tmp / m["name"]).glob("*/bench.json"))
    return {
        "rc": res.returncode,
        "state": status.get("state"),
        "train_steps_per_s": status.get("train_steps_per_s"),
        "eval_mean": status.get("eval_mean"),
        "bench": json.loads(bench[0].read_text())["points"] if bench else None,
        "stderr": res.stderr[-500:] if res.returncode else "",
    }


def isaaclab(tmp: Path) -> dict[str, object]:
    m = {"rlcrate": 1, "name": "gpu-isaac", "env": {"backend": "isaaclab",
         "id": "Isaac-Cartpole-Direct"}, "parallel": {"envs": 1024},
         "algo": {"name": "PPO", "device": "cuda", "params": {"n_steps": 16, "batch_size": 4096}},
         "train": {"timesteps": 163840}, "eval": {"episodes": 3}, "seeds": [0]}  # fmt: skip
    return _run(m, tmp, min(120, _left()), "run")


def rsl_rl(tmp: Path) -> dict[str, object]:
    out = {}
    for task, iters in (("Isaac-Cartpole-Direct", 20), ("Isaac-Velocity-Flat-AnymalD", 5)):
        short = task.split("-")[-1].lower()
        m = {"rlcrate": 1, "name": f"gpu-rsl-{short}", "env": {"backend": "isaaclab", "id": task},
             "parallel": {"envs": 4096}, "algo": {"name": "rsl_rl_ppo", "defaults": "task",
             "params": {"num_steps_per_env": 24}}, "train": {"timesteps": 4096 * 24 * iters},
             "eval": {"episodes": 2}, "seeds": [0]}  # fmt: skip
        out[task] = _run(m, tmp, min(120, _left()), "run")
    return out


def sb3(tmp: Path) -> dict[str, object]:
    out = {}
    for device in ("cuda", "cpu"):
        m = {"rlcrate": 1, "name": f"gpu-sb3-{device}", "env": {"backend": "envpool",
             "id": "CartPole-v1"}, "parallel": {"envs": 16},
             "algo": {"name": "PPO", "device": device, "params": {"n_steps": 128}},
             "train": {"timesteps": 40960}, "eval": {"episodes": 3}, "seeds": [0]}  # fmt: skip
        out[device] = _run(m, tmp, min(90, _left()), "run")
    return out


def resume(tmp: Path) -> dict[str, object]:
    m = {"rlcrate": 1, "name": "gpu-resume", "env": {"backend": "gymnasium",
         "id": "Pendulum-v1"}, "parallel": {"envs": 2, "mode": "dummy"},
         "algo": {"name": "SAC", "device": "cuda", "params": {"learning_starts": 100,
         "buffer_size": 5000}}, "train": {"timesteps": 2000}, "eval": {"episodes": 1},
         "seeds": [0]}  # fmt: skip
    path = tmp / "gpu-resume.yaml"
    path.write_text(yaml.safe_dump(m))
    args = ["validate", "--deep"] if DRY else ["check-determinism", "--resume", "--steps", "2000"]
    res = _sh([str(EXE), args[0], *args[1:], str(path)], min(180, _left()))
    return {"rc": res.returncode, "out": (res.stdout + res.stderr).strip()[-800:]}


def scaling(tmp: Path) -> dict[str, object]:
    sweep = {"parallel.workers": [1, 2, 4, 8, 16]}
    envpool = {"rlcrate": 1, "name": "gpu-envpool", "env": {"backend": "envpool",
               "id": "Pong-v5"}, "parallel": {"envs": 16, "workers": 1},
               "bench": {"steps": 20000, "repeats": 2, "train": False, "sweep": sweep}}  # fmt: skip
    godot = {"rlcrate": 1, "name": "gpu-godot", "env": {"backend": "godot", "id": "ballchase"},
             "parallel": {"envs": 16, "workers": 1},
             "bench": {"steps": 8000, "repeats": 1, "train": False, "sweep": sweep}}  # fmt: skip
    return {
        "envpool": _run(envpool, tmp, min(90, _left()), "bench"),
        "godot": _run(godot, tmp, min(90, _left()), "bench"),
    }


def main() -> None:
    global DRY
    ap = argparse.ArgumentParser(description="Check rlcrate's GPU path; JSON to OUT.")
    ap.add_argument("out", nargs="?", default="gpu-check.json")
    ap.add_argument("--only", default="", help="comma-separated steps (default: all)")
    ap.add_argument("--dry", action="store_true", help="validate --deep instead of running")
    a = ap.parse_args()
    DRY, out_path, only = a.dry, Path(a.out), {s for s in a.only.split(",") if s}
    result: dict[str, object] = {"started": time.time(), "dry": DRY}
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        steps = [
            ("host", host),
            ("brax", brax),
            ("isaaclab", lambda: isaaclab(where)),
            ("rsl_rl", lambda: rsl_rl(where)),
            ("sb3", lambda: sb3(where)),
            ("resume", lambda: resume(where)),
            ("scaling", lambda: scaling(where)),
        ]
        unknown = only - {name for name, _ in steps}
        if unknown:
            sys.exit(f"--only: no step {', '.join(sorted(unknown))}")
        for name, step in steps:
            t = time.monotonic()
            if only and name not in only:
                continue
            if DRY and name == "brax":
                result[name] = {"skipped": "--dry: the Brax step only trains"}
                continue
            if _left() < 20:
                result[name] = {"skipped": "out of time (DEADLINE_S)"}
                continue
            try:
                result[name] = step()
            except Exception as exc:  # a failed step is recorded; the others still run
                result[name] = {"error": f"{type(exc).__name__}: {exc}"}
            result[f"{name}_s"] = round(time.monotonic() - t, 1)
            out_path.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
