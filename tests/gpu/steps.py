"""The GPU check's steps (tests/gpu/check_gpu.py runs them): each returns what it measured, or
why it was skipped, as a dict. Standard library only; manifests are written as JSON (which YAML
reads), so the check needs nothing installed before its wheels are.

On the GPU every unit trains on `cuda`; with `--dry` on `cpu`, at the tiny sizes in `Ctx.size`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Ctx:
    """What every step needs: where rlcrate and the units' Python are, and the time left."""

    dry: bool
    exe: str  # the rlcrate console script
    python: str  # the Python rlcrate and its units run in
    env: dict[str, str]
    tmp: Path
    wheels: bool  # installed from the wheelhouse (a lent machine), not a checkout's environments
    deadline: float  # time.monotonic() by which every step has ended

    def left(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def device(self) -> str:
        return "cpu" if self.dry else "cuda"

    def size(self, real: int, dry: int) -> int:
        return dry if self.dry else real

    def sh(self, cmd: list[str], limit: float, **env: str) -> subprocess.CompletedProcess[str]:
        """Run `cmd` for at most `limit` seconds (and the time left); on timeout SIGTERM (rlcrate
        stops its units), then its process group killed, and TimeoutExpired raised (at once when
        the deadline has passed)."""
        timeout = min(limit, self.left())
        if timeout < 1:
            raise subprocess.TimeoutExpired(cmd[:3], 0)
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**self.env, **env}, start_new_session=True,
        ) as p:  # fmt: skip
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
                try:
                    p.communicate(timeout=20)
                finally:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(cmd[:3], timeout) from None
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)

    def manifest(self, m: dict) -> Path:
        path = self.tmp / f"{m['name']}.yaml"
        path.write_text(json.dumps({"rlcrate": 1, "seeds": [0], **m}))
        return path

    def rlcrate(self, limit: float, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return self.sh([self.exe, *args], limit, **env)


def tail(res: subprocess.CompletedProcess[str], n: int = 500) -> str:
    return (res.stdout + res.stderr).strip()[-n:]


def last_line(res: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_unit(ctx: Ctx, m: dict, limit: float, **env: str) -> dict[str, object]:
    """`rlcrate run` of manifest `m` (no report); its first unit's figures."""
    path = str(ctx.manifest(m))
    res = ctx.rlcrate(limit, "run", path, "--out", str(ctx.tmp), "--no-report", **env)
    units = sorted((ctx.tmp / m["name"]).glob("*/units/*/seed-*"))
    found = units[0] / "status.json" if units else None
    status = json.loads(found.read_text()) if found and found.exists() else {}
    return {
        "rc": res.returncode,
        "state": status.get("state"),
        "train_steps_per_s": status.get("train_steps_per_s"),
        "eval_mean": status.get("eval_mean"),
        "error": status.get("error"),
        "unit": str(units[0]) if units else None,
        "out": tail(res) if res.returncode else "",
    }


def host(ctx: Ctx) -> dict[str, object]:
    """The card and driver (nvidia-smi), torch's and JAX's view of it, the CPUs."""
    smi = shutil.which("nvidia-smi")
    q = "--query-gpu=name,memory.total,driver_version"
    gpus = ctx.sh([smi, q, "--format=csv,noheader"], 30).stdout.strip() if smi else None
    probe = (
        "import json, torch, jax\n"
        "cuda = torch.cuda.is_available()\n"
        "print(json.dumps({'python': __import__('sys').version.split()[0],"
        " 'torch': torch.__version__, 'torch_cuda': torch.version.cuda, 'cuda_available': cuda,"
        " 'torch_device': torch.cuda.get_device_name(0) if cuda else None,"
        " 'jax': jax.__version__, 'jax_devices': [str(d) for d in jax.devices()]}))"
    )
    res = ctx.sh([ctx.python, "-c", probe], 120)
    seen = json.loads(last_line(res)) if res.returncode == 0 else {"error": tail(res)}
    return {"gpus": gpus, "cpus": os.cpu_count(), "load": os.getloadavg(), **seen}


# algo: env id, envs, params, timesteps (real, dry); SB3's defaults otherwise, and torch on one
# thread (algo.torch_threads: 1, as a unit trains by default).
SB3 = {
    "PPO": ("CartPole-v1", 16, {"n_steps": 128}, (32768, 2048)),
    "SAC": ("Pendulum-v1", 1, {"learning_starts": 1000}, (5000, 400)),
}
SB3_DRY = {"SAC": {"learning_starts": 100}}


def sb3(ctx: Ctx) -> dict[str, object]:
    """SB3 PPO and SAC through `rlcrate run`, on cuda and on cpu: training steps/s."""
    out: dict[str, object] = {}
    for algo, (env_id, envs, params, steps) in SB3.items():
        per: dict[str, dict] = {}
        for device in ("cuda", "cpu"):
            if ctx.dry and device == "cuda":
                per[device] = {"skipped": "--dry: no GPU"}
                continue
            m = {"name": f"gpu-sb3-{algo.lower()}-{device}",
                 "env": {"backend": "gymnasium", "id": env_id},
                 "parallel": {"envs": envs, "mode": "dummy"},
                 "algo": {"name": algo, "device": device,
                          "params": {**params, **(SB3_DRY.get(algo, {}) if ctx.dry else {})}},
                 "train": {"timesteps": ctx.size(*steps)}, "eval": {"episodes": 2}}  # fmt: skip
            per[device] = run_unit(ctx, m, 120)
        cuda, cpu = (per[d].get("train_steps_per_s") for d in ("cuda", "cpu"))
        out[algo] = {**per, "cuda_over_cpu": round(cuda / cpu, 3) if cuda and cpu else None}
    return out


def _ppo_cartpole(ctx: Ctx, name: str, n_steps: int, steps: int, **more: object) -> dict:
    return {"name": name, "env": {"backend": "gymnasium", "id": "CartPole-v1"},
            "parallel": {"envs": 8, "mode": "dummy"},
            "algo": {"name": "PPO", "device": ctx.device, "params": {"n_steps": n_steps}},
            "train": {"timesteps": steps}, **more}  # fmt: skip


def determinism(ctx: Ctx) -> dict[str, object]:
    """`rlcrate check-determinism` of SB3 PPO on the device: bitwise, or the first divergence."""
    m = _ppo_cartpole(ctx, "gpu-determinism", ctx.size(128, 32), 2048)
    res = ctx.rlcrate(150, "check-determinism", str(ctx.manifest(m)))
    return {"rc": res.returncode, "verdict": last_line(res), "out": tail(res, 800)}


def reproduce(ctx: Ctx) -> dict[str, object]:
    """`rlcrate run` -> `archive` -> `reproduce` of SB3 PPO on the device: the verdict line."""
    m = _ppo_cartpole(ctx, "gpu-reproduce", ctx.size(128, 32), ctx.size(8192, 512),
                      eval={"episodes": ctx.size(3, 1)})  # fmt: skip
    ran = run_unit(ctx, m, 120)
    if ran["rc"] != 0 or not ran["unit"]:
        return {"run": ran}
    run_dir = Path(str(ran["unit"])).parents[2]
    archive = ctx.tmp / "gpu-reproduce.tar.gz"
    packed = ctx.rlcrate(60, "archive", str(run_dir), "-o", str(archive))
    if packed.returncode != 0:
        return {"run": ran, "archive": {"rc": packed.returncode, "out": tail(packed)}}
    res = ctx.rlcrate(150, "reproduce", str(archive), "--out", str(ctx.tmp / "again"))
    return {"run": ran, "rc": res.returncode, "verdict": last_line(res), "out": tail(res, 800)}


def resume(ctx: Ctx) -> dict[str, object]:
    """`rlcrate check-determinism --resume` of SB3 SAC on the device (its checkpoints carry the
    CUDA generators; GPU kernels need not repeat, so `approximate` is an answer)."""
    m = {"name": "gpu-resume", "env": {"backend": "gymnasium", "id": "Pendulum-v1"},
         "parallel": {"envs": 2, "mode": "dummy"},
         "algo": {"name": "SAC", "device": ctx.device,
                  "params": {"learning_starts": 100, "buffer_size": 5000}},
         "train": {"timesteps": 2000}, "eval": {"episodes": 1}}  # fmt: skip
    steps = str(ctx.size(2000, 300))
    res = ctx.rlcrate(180, "check-determinism", "--resume", "--steps", steps, str(ctx.manifest(m)))
    return {"rc": res.returncode, "verdict": last_line(res), "out": tail(res, 800)}


GL_PROBE = (
    "import mujoco\nfrom mujoco.egl import GLContext\nfrom OpenGL import GL\n"
    "c = GLContext(64, 64); c.make_current()\n"
    "print(GL.glGetString(GL.GL_VENDOR).decode(), '/', GL.glGetString(GL.GL_RENDERER).decode())"
)


def video(ctx: Ctx) -> dict[str, object]:
    """MuJoCo's `eval.video` through EGL (MUJOCO_GL=egl): which GL drew, and the clip."""
    gl = os.environ.get("MUJOCO_GL", "egl")
    probe = ctx.sh([ctx.python, "-c", GL_PROBE], 60, MUJOCO_GL=gl)
    m = {"name": "gpu-video", "env": {"backend": "gymnasium", "id": "InvertedPendulum-v5"},
         "parallel": {"envs": 4, "mode": "dummy"},
         "algo": {"name": "PPO", "device": ctx.device, "params": {"n_steps": 64}},
         "train": {"timesteps": ctx.size(4096, 256)},
         "eval": {"episodes": 1, "video": {"episodes": 1, "format": "gif"}}}  # fmt: skip
    ran = run_unit(ctx, m, 120, MUJOCO_GL=gl)
    found = Path(str(ran["unit"])) / "video" / "video.json" if ran["unit"] else None
    record = json.loads(found.read_text()) if found and found.exists() else None
    return {
        "mujoco_gl": gl,
        "gl": last_line(probe) if probe.returncode == 0 else {"error": tail(probe)},
        "run": ran,
        "clips": record["clips"] if record else None,
    }
