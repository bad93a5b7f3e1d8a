"""The isaaclab backend through the console script, in the GPU environment (Python 3.12 from
images/cuda/requirements.lock, `make gpu-env`); run by `make test-gpu-env` (marker `isaaclab`),
skipped otherwise.

On this CPU-only machine without network a manifest naming only the task id runs on the CPU
with Newton (MuJoCo-Warp) and a local cartpole USD; the unit records those picks.
"""

from __future__ import annotations

import json

import pytest
import yaml

from runner.backends import get_backend, isaaclab
from tests.helpers import ROOT, rlcrate, run_dir_of

pytestmark = [
    pytest.mark.isaaclab,
    pytest.mark.skipif(
        get_backend("isaaclab").available() is not None,
        reason=f"{get_backend('isaaclab').available()}",
    ),
]
NO_GPU = not isaaclab.gpu_present()


def cartpole(**over) -> dict:
    m = {
        "rlcrate": 1,
        "name": "il-t",
        # 0.5 s episodes (30 steps; the task's own are 5 s): each step of Newton on this CPU costs
        # tens of milliseconds whatever the env count, and the two eval episodes run in one env
        "env": {
            "backend": "isaaclab",
            "id": "Isaac-Cartpole-Direct",
            "kwargs": {"episode_length_s": 0.5},
        },
        "parallel": {"envs": 8},
        "algo": {"name": "PPO", "params": {"n_steps": 16, "batch_size": 64, "n_epochs": 2}},
        "train": {"timesteps": 256},
        "eval": {"episodes": 2},
        "seeds": [0],
    }
    m.update(over)
    return m


def test_unknown_task_suggests(write_manifest):
    out = rlcrate("validate", str(write_manifest(cartpole(env={
        "backend": "isaaclab", "id": "Isaac-Cartpol-Direct"}))))  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Did you mean 'Isaac-Cartpole-Direct'" in out.stderr


@pytest.mark.skipif(not NO_GPU, reason="checks the CPU-only machine's errors")
def test_gpu_only_settings_on_a_cpu_machine(write_manifest):
    env = {"backend": "isaaclab", "id": "Isaac-Cartpole-Direct", "kwargs": {"device": "cuda"}}
    out = rlcrate("run", str(write_manifest(cartpole(env=env))), "--out", "/nonexistent/x")
    assert out.returncode == 2
    assert "env.kwargs.device: 'cuda' needs an NVIDIA GPU" in out.stderr
    env["kwargs"] = {"cuda_graph": True}
    out = rlcrate("validate", str(write_manifest(cartpole(env=env))))
    assert out.returncode == 2 and "env.kwargs.cuda_graph: CUDA graphs needs an NVIDIA GPU" in (
        out.stderr
    )


def test_missing_environment_is_one_line(write_manifest, monkeypatch):
    monkeypatch.setenv("RLCRATE_PYTHON_ISAACLAB", str(ROOT / "no-such-env" / "bin" / "python"))
    out = rlcrate("run", str(write_manifest(cartpole())))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "no-such-env" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("task", ["Isaac-Cartpole-Direct", "Isaac-Cartpole"])
def test_cartpole_trains_and_evaluates_on_this_cpu(write_manifest, tmp_path, task):
    """Both cartpole tasks take the local stand-in: the direct task's articulation is
    `scene.cartpole`, the manager-based one's `scene.robot`."""
    m = cartpole(env={**cartpole()["env"], "id": task})
    res = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path), timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path, "il-t")
    unit = run / "units" / "default" / "seed-0"
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] == 256
    assert status["python"]["version"].startswith("3.12")
    ev = json.loads((unit / "eval.json").read_text())
    assert ev["n_episodes"] == 2 and ev["seed"] == status["seeds"]["eval_env"]
    assert (unit / "model.zip").is_file() and list((unit / "tb").rglob("events.out.tfevents.*"))
    picks = json.loads((unit / "isaaclab.json").read_text())
    if NO_GPU:
        assert picks["device"] == "cpu" and picks["physics"] == "newton_mjwarp"
        assert picks["cuda_graph"] is False
    prov = json.loads((run / "provenance.json").read_text())
    assert "Isaac Lab 3.0.0" in json.dumps(prov)


@pytest.mark.slow
def test_bench_measures_cartpole_in_isaaclab_python(write_manifest, tmp_path):
    """`rlcrate bench` on an Isaac Lab task: the point is measured in Isaac Lab's Python 3.12 (the
    runner's own Python cannot import it), env-only through Isaac Lab's SB3 wrapper, training
    with SB3 PPO, and written to bench.json like any other point."""
    # no cold start: it would start Isaac Sim's app once more (test_bench measures one)
    m = cartpole(bench={"steps": 256, "warmup": 64, "repeats": 2, "cold_start": False,
                        "sweep": {"parallel.envs": [8]}})  # fmt: skip
    res = rlcrate("bench", str(write_manifest(m)), "--out", str(tmp_path), timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    (point,) = json.loads((run_dir_of(tmp_path, "il-t") / "bench.json").read_text())["points"]
    assert point["error"] is None and point["envs"] == 8 and point["trainer"] == "sb3"
    assert point["python"] == get_backend("isaaclab").interpreter()
    for key in ("env_only", "train"):
        s = point[key]["steps_per_s"]
        assert 0 < s["min"] <= s["median"] <= s["max"] and len(s["runs"]) == 2
    assert 0 < point["train"]["env_fraction"] < 1


def test_cross_framework_manifest_validates():
    """manifests/cross-framework.yaml has an Isaac Lab variant, so `make test` (run before Isaac
    Lab's environment exists) skips it; here every one of its variants and sweep points checks."""
    path = ROOT / "manifests" / "cross-framework.yaml"
    out = rlcrate("validate", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    variants = len(yaml.safe_load(path.read_text())["matrix"])  # one per framework and path
    assert f"{variants} variant(s)" in out.stdout
