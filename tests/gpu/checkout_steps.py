"""The GPU check's steps that need what does not travel to a machine lent without a package
index (wheelhouse.json's `left_out` says why each stays behind): Brax (its pin and its 32 MB of
wheels), Isaac Lab and RSL-RL (the GPU environment, `make gpu-env`), EnvPool and Godot (the
checkout's `.venv`). Where those are missing each says so and is skipped; the others run here.

With `--dry` Brax trains its `fast` env at 16 and 32 envs on the CPU, and the Isaac Lab, RSL-RL
and scaling manifests go through `rlcrate validate --deep` (their tiny trainings are the GPU
environment's tests, minutes each on a CPU).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from steps import Ctx, last_line, run_unit, tail

ROOT = Path(__file__).resolve().parents[2]
# Isaac Lab's Python: the GPU environment (make gpu-env), where runner.backends.base finds it.
GPU_ENV_PY = Path(os.environ.get("RLCRATE_GPU_ENV") or ROOT / ".cache" / "gpu-env") / "bin/python"
NOT_TRAVELLED = "do not travel to a machine lent without a package index (wheelhouse.json)"

BRAX = """
import time, jax
from brax import envs
from brax.training.agents.ppo import train as ppo
env = envs.get_environment("{env}", backend="generalized")
t = time.perf_counter()
ppo.train(environment=env, num_timesteps={steps}, num_envs={n}, batch_size={n} // 2,
          num_minibatches=16, unroll_length=5, num_updates_per_batch=4, episode_length=1000,
          normalize_observations=True, num_evals=0, seed=0)
print("SPS", {steps} / (time.perf_counter() - t), jax.devices()[0])
"""
VERSIONS = """
import importlib.metadata as md, json, re
def v(n):
    try: return md.version(n)
    except md.PackageNotFoundError: return None
pins = dict(m.groups() for r in md.requires("rlcrate") or []
            if (m := re.match(r"(jax|brax)==([^ ;]+).*extra == .jax.", r)))
print(json.dumps({"pins": pins, "jax": v("jax"), "brax": v("brax")}))
"""


def brax(ctx: Ctx) -> dict[str, object]:
    """Brax's PPO training steps/s at 1,024 and 4,096 envs (ant; --dry: `fast`, 16 and 32), in
    the GPU environment's Python where there is one; or which pin does not fit this JAX."""
    py = str(GPU_ENV_PY) if GPU_ENV_PY.exists() and not ctx.wheels else ctx.python
    res = ctx.sh([py, "-c", VERSIONS], 60)
    seen = json.loads(last_line(res)) if res.returncode == 0 else {}
    pins, have = seen.get("pins", {}), seen.get("jax")
    if pins.get("jax") and have != pins["jax"]:
        return {"skipped": f"rlcrate pins brax=={pins.get('brax')} with jax=={pins['jax']} "
                f"(its jax extra); this machine has jax {have}: the jax pin does not fit it, "
                "so Brax's PPO was not trained", "versions": seen}  # fmt: skip
    if not seen.get("brax"):
        why = " (the wheelhouse leaves it out)" if ctx.wheels else ""
        return {"skipped": f"brax is not installed in {py}{why}", "versions": seen or tail(res)}
    out: dict[str, object] = {"versions": seen}
    env = "fast" if ctx.dry else "ant"
    for n in (16, 32) if ctx.dry else (1024, 4096):
        code = BRAX.format(env=env, n=n, steps=n * 5 * 16 * 8)
        res = ctx.sh([py, "-c", code], 150)
        line = [ln for ln in res.stdout.splitlines() if ln.startswith("SPS")]
        out[str(n)] = (
            {"steps_per_s": float(line[-1].split()[1]), "device": line[-1].split()[2]}
            if line
            else {"error": tail(res)}
        )
    return out


def _isaac_missing(ctx: Ctx) -> str:
    if ctx.wheels:
        return f"Isaac Lab and Isaac Sim {NOT_TRAVELLED}"
    if not GPU_ENV_PY.exists():
        return f"Isaac Lab runs in the GPU environment, which is not built here ({GPU_ENV_PY})"
    return ""


def _checked(ctx: Ctx, m: dict, limit: float, job: str) -> dict[str, object]:
    """`job` (run or bench) of manifest `m`; with --dry, `validate --deep` of it instead."""
    if not ctx.dry:
        if job == "run":
            return run_unit(ctx, m, limit)
        res = ctx.rlcrate(limit, "bench", str(ctx.manifest(m)), "--out", str(ctx.tmp))
        bench = list((ctx.tmp / m["name"]).glob("*/bench.json"))
        points = json.loads(bench[0].read_text())["points"] if bench else None
        return {"rc": res.returncode, "bench": points, "out": tail(res) if res.returncode else ""}
    res = ctx.rlcrate(limit, "validate", "--deep", str(ctx.manifest(m)))
    return {"dry": f"validate --deep (not {job})", "rc": res.returncode, "out": tail(res)}


def isaaclab(ctx: Ctx) -> dict[str, object]:
    """Isaac-Cartpole-Direct train + eval through `rlcrate run` on cuda:0 (task defaults)."""
    if why := _isaac_missing(ctx):
        return {"skipped": why}
    m = {"name": "gpu-isaac", "env": {"backend": "isaaclab", "id": "Isaac-Cartpole-Direct"},
         "parallel": {"envs": 1024},
         "algo": {"name": "PPO", "device": "cuda", "params": {"n_steps": 16, "batch_size": 4096}},
         "train": {"timesteps": 163840}, "eval": {"episodes": 3}}  # fmt: skip
    return _checked(ctx, m, 120, "run")


def rsl_rl(ctx: Ctx) -> dict[str, object]:
    """RSL-RL's PPO (`rsl_rl_ppo`, `algo.defaults: task`) on cuda:0, 4096 envs: Cartpole-Direct
    and the locomotion task Isaac-Velocity-Flat-AnymalD (whose USD comes from Isaac's asset root:
    the machine needs its network)."""
    if why := _isaac_missing(ctx):
        return {"skipped": why}
    out: dict[str, object] = {}
    for task, iters in (("Isaac-Cartpole-Direct", 20), ("Isaac-Velocity-Flat-AnymalD", 5)):
        m = {"name": f"gpu-rsl-{task.split('-')[-1].lower()}",
             "env": {"backend": "isaaclab", "id": task}, "parallel": {"envs": 4096},
             "algo": {"name": "rsl_rl_ppo", "defaults": "task",
                      "params": {"num_steps_per_env": 24}},
             "train": {"timesteps": 4096 * 24 * iters}, "eval": {"episodes": 2}}  # fmt: skip
        out[task] = _checked(ctx, m, 120, "run")
    return out


def scaling(ctx: Ctx) -> dict[str, object]:
    """`rlcrate bench` env-only steps/s over 1..16 workers: EnvPool Pong, Godot BallChase."""
    if ctx.wheels:
        return {"skipped": f"EnvPool and Godot {NOT_TRAVELLED}"}
    sweep = {"parallel.workers": [1, 2, 4, 8, 16]}
    envpool = {"name": "gpu-envpool", "env": {"backend": "envpool", "id": "Pong-v5"},
               "parallel": {"envs": 16, "workers": 1},
               "bench": {"steps": 20000, "repeats": 2, "train": False, "sweep": sweep}}  # fmt: skip
    godot = {"name": "gpu-godot", "env": {"backend": "godot", "id": "ballchase"},
             "parallel": {"envs": 16, "workers": 1},
             "bench": {"steps": 8000, "repeats": 1, "train": False, "sweep": sweep}}  # fmt: skip
    return {
        "envpool": _checked(ctx, envpool, 90, "bench"),
        "godot": _checked(ctx, godot, 90, "bench"),
    }
