"""Check rlcrate's GPU path in one go on a machine with an NVIDIA GPU; write one JSON as it goes.

    tests/gpu/check_gpu.sh [--wheels DIR] [OUT.json] [--only STEP,...] [--dry]
                                        (under 8 minutes; each step has its own timeout)

--wheels DIR: a machine lent without a package index (one H100 or H200, Python 3.12 with its
own torch and JAX): DIR is `make gpu-wheels`' wheelhouse, carried beside the working tree; the
`wheels` step installs it with `pip install --no-index --no-deps --target` into a temporary
folder, and everything runs in this Python (`python3`) with that folder first on its path.
Without it: the checkout's environments (.venv, and the GPU environment for Isaac Lab).

Steps (each records its figures, or why it was skipped or failed, and the time it took):
  wheels       the wheelhouse installed (--wheels only): what went in, what the machine had
  host         nvidia-smi's card and driver, torch's and JAX's devices, CPUs, load
  sb3          SB3 PPO (CartPole) and SAC (Pendulum) through `rlcrate run`, cuda vs cpu: steps/s
  determinism  `rlcrate check-determinism` of SB3 PPO on cuda
  reproduce    `rlcrate run` -> `archive` -> `reproduce` of SB3 PPO on cuda: the verdict line
  video        MuJoCo's eval.video through EGL (MUJOCO_GL=egl): the GL that drew, the clip
  brax         Brax's PPO steps/s at 1,024 and 4,096 envs, or which pin does not fit this JAX
  resume       `rlcrate check-determinism --resume` of SB3 SAC on cuda
  isaaclab     Isaac-Cartpole-Direct train + eval on cuda:0 (the GPU environment only)
  rsl_rl       RSL-RL's PPO on Cartpole-Direct and AnymalD, 4096 envs (the GPU environment only)
  scaling      `rlcrate bench` env-only steps/s over 1..16 workers: EnvPool Pong, Godot BallChase
No step starts after DEADLINE_S (420 s), and each ends by it, so the run ends inside 8 minutes.

--dry (a machine without a GPU; it claims no GPU figure): every step on the CPU at tiny sizes,
`cuda` legs skipped; the Isaac Lab, RSL-RL and scaling manifests through `validate --deep`
(checkout_steps.py). tests/gpu/test_gpu_check.py runs it from the wheelhouse in a fresh Python with
only torch and JAX (make test-gpu-env).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import checkout_steps
import steps
import wheelhouse

DEADLINE_S = 420
STEPS: dict[str, Callable[[steps.Ctx], dict[str, object]]] = {
    "host": steps.host,
    "sb3": steps.sb3,
    "determinism": steps.determinism,
    "reproduce": steps.reproduce,
    "video": steps.video,
    "brax": checkout_steps.brax,
    "resume": steps.resume,
    "isaaclab": checkout_steps.isaaclab,
    "rsl_rl": checkout_steps.rsl_rl,
    "scaling": checkout_steps.scaling,
}


def _installed(ctx: steps.Ctx, wheels: Path) -> dict[str, object]:
    """The `wheels` step: the wheelhouse into ctx.tmp/site, first on every process's path."""
    got = wheelhouse.install(wheels, ctx.tmp / "site")
    site = str(ctx.tmp / "site")
    ctx.env["PYTHONPATH"] = os.pathsep.join(p for p in (site, ctx.env.get("PYTHONPATH")) if p)
    ctx.env["PATH"] = os.pathsep.join((f"{site}/bin", ctx.env.get("PATH", "")))
    ctx.exe = f"{site}/bin/rlcrate"
    return got


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Check rlcrate's GPU path; JSON to OUT.")
    ap.add_argument("out", nargs="?", default="gpu-check.json")
    ap.add_argument("--only", default="", help="comma-separated steps (default: all)")
    ap.add_argument("--dry", action="store_true", help="on the CPU at tiny sizes (no GPU)")
    ap.add_argument("--wheels", type=Path, help="install this wheelhouse (make gpu-wheels)")
    a = ap.parse_args()
    a.only = {s for s in a.only.split(",") if s}
    if unknown := a.only - set(STEPS):
        ap.error(f"--only: no step {', '.join(sorted(unknown))} (steps: {', '.join(STEPS)})")
    return a


def main() -> None:
    a = _args()
    t0 = time.monotonic()
    out_path = Path(a.out)
    where = f"wheelhouse {a.wheels}" if a.wheels else "checkout environments"
    result: dict[str, object] = {"started": time.time(), "dry": a.dry, "from": where}

    def save(name: str, value: object, since: float) -> None:
        result[name] = value
        result[f"{name}_s"] = round(time.monotonic() - since, 1)
        out_path.write_text(json.dumps(result, indent=2, default=str))

    with tempfile.TemporaryDirectory(prefix="rlcrate-gpu-") as tmp:
        ctx = steps.Ctx(
            dry=a.dry, exe=str(Path(sys.executable).with_name("rlcrate")),
            python=sys.executable, env=dict(os.environ), tmp=Path(tmp),
            wheels=bool(a.wheels), deadline=t0 + DEADLINE_S,
        )  # fmt: skip
        if a.wheels:
            try:
                save("wheels", _installed(ctx, a.wheels), t0)
            except Exception as exc:  # nothing else can run: said in the JSON, exit 1
                save("wheels", {"error": f"{type(exc).__name__}: {exc}"}, t0)
                sys.exit(f"check_gpu: the wheelhouse did not install: {exc}")
        for name, step in STEPS.items():
            t = time.monotonic()
            if a.only and name not in a.only:
                continue
            if ctx.left() < 20:
                save(name, {"skipped": f"out of time (DEADLINE_S, {DEADLINE_S} s)"}, t)
                continue
            try:
                save(name, step(ctx), t)
            except Exception as exc:  # a failed step is recorded; the others still run
                save(name, {"error": f"{type(exc).__name__}: {exc}"}, t)
    result["total_s"] = round(time.monotonic() - t0, 1)
    out_path.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
