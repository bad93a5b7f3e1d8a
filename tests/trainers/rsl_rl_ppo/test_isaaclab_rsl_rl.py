"""RSL-RL's PPO (`algo.name: rsl_rl_ppo`) and `algo.defaults: task` on Isaac Lab tasks, through
the console script in the GPU environment (`make test-gpu-env`, marker `isaaclab`).

Budgets are tiny (8 envs, 16 steps per env per iteration, 2 iterations): Isaac Lab on this CPU
steps a few hundred env steps per second, and importing its tasks takes tens of seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from runner.backends import get_backend
from tests.helpers import ROOT, checkout_env, rlcrate, run_dir_of

pytestmark = [
    pytest.mark.isaaclab,
    pytest.mark.skipif(
        get_backend("isaaclab").available() is not None,
        reason=f"{get_backend('isaaclab').available()}",
    ),
]
TASK_SOURCE = "isaaclab task Isaac-Cartpole-Direct (rsl_rl_cfg_entry_point: "


def rsl(**over) -> dict:
    m = {
        "rlcrate": 1,
        "name": "il-rsl",
        # 0.25 s episodes (15 steps): training episodes end within the tiny budget
        "env": {
            "backend": "isaaclab",
            "id": "Isaac-Cartpole-Direct",
            "kwargs": {"episode_length_s": 0.25},
        },
        "parallel": {"envs": 8},
        "algo": {"name": "rsl_rl_ppo", "defaults": "task", "params": {"num_steps_per_env": 16}},
        "train": {"timesteps": 256, "checkpoint_every": 128},
        "eval": {"episodes": 2},
        "seeds": [0],
    }
    m.update(over)
    return m


def one_line_exit_2(out) -> str:
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    return out.stderr


def test_rsl_rl_ppo_on_another_backend_is_one_line(write_manifest):
    m = rsl(env={"backend": "gymnasium", "id": "CartPole-v1"})
    del m["algo"]["defaults"]
    err = one_line_exit_2(rlcrate("validate", str(write_manifest(m))))
    assert "algo.name: the rsl_rl_ppo trainer steps batched-torch-env envs, which the" in err
    assert "backends that do: isaaclab" in err


@pytest.mark.parametrize("key", ["seed", "max_iterations"])
def test_runner_supplied_keys_are_refused_by_plain_validate(write_manifest, key):
    m = rsl()
    m["algo"]["params"] = {key: 3}
    err = one_line_exit_2(rlcrate("validate", str(write_manifest(m))))
    assert f"algo.params.{key}: '{key}' is set by the runner" in err


def test_unknown_runner_config_key_stops_the_run_before_any_unit(write_manifest, tmp_path):
    m = rsl()
    m["algo"]["params"] = {"algorithm": {"learning_rat": 1.0e-3}}
    out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"), timeout=900)
    err = one_line_exit_2(out)
    assert "algo.params.algorithm.learning_rat: RSL-RL's runner configuration has no" in err
    assert not list((tmp_path / "runs").rglob("status.json"))


def test_defaults_task_without_a_config_for_the_library_is_one_line(write_manifest):
    m = rsl(algo={"name": "PPO", "defaults": "task"})
    m["env"]["id"] = "Isaac-Cartpole-Camera-Direct"  # registers RSL-RL's, not SB3's
    err = one_line_exit_2(rlcrate("validate", str(write_manifest(m))))
    assert "algo.defaults: Isaac-Cartpole-Camera-Direct registers no Stable-Baselines3" in err


def test_defaults_task_on_another_backend_is_one_line(write_manifest):
    m = rsl(env={"backend": "gymnasium", "id": "CartPole-v1"}, algo={"defaults": "task"})
    err = one_line_exit_2(rlcrate("validate", str(write_manifest(m))))
    assert "algo.defaults: 'task' reads the agent config a task registers; the gymnasium" in err


def rewards(unit) -> list[tuple[int, float]]:
    out = []
    for events in sorted((unit / "tb").rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events.parent))
        acc.Reload()
        if "rollout/ep_rew_mean" in acc.Tags()["scalars"]:
            out += [(e.step, e.value) for e in acc.Scalars("rollout/ep_rew_mean")]
    return sorted(out)


def resolved_sources(run) -> dict:
    return yaml.safe_load((run / "resolved.yaml").read_text())


@pytest.mark.slow
def test_rsl_rl_trains_resumes_and_evaluates(write_manifest, tmp_path):
    """A real tiny RSL-RL train + eval with the task's runner config, then the unit made to look
    interrupted after its first checkpoint (a damaged newer one beside it): --resume continues
    from the newest readable checkpoint to the same total."""
    path = write_manifest(rsl())
    res = rlcrate("run", str(path), "--out", str(tmp_path), timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path, "il-rsl")
    unit = run / "units" / "default" / "seed-0"
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] == 256, status
    assert status["python"]["version"].startswith("3.12")
    ev = json.loads((unit / "eval.json").read_text())
    assert ev["n_episodes"] == 2 and ev["seed"] == status["seeds"]["eval_env"]
    assert all(e["length"] > 0 for e in ev["episodes"])
    assert (unit / "model.zip").is_file() and (unit / "checkpoints" / "step-128.zip").is_file()
    assert [s for s, _ in rewards(unit)][-1] == 256  # against env steps, not iterations
    # RSL-RL's own TensorBoard file holds both iterations (256 steps of 16 x 8 envs), though the
    # unit's process ends without Python's finalization (its runner leaves the writer open); its
    # "…/time" tags count seconds of training instead (17 on a loaded CI machine)
    own = EventAccumulator(str(unit / "rsl_rl")).Reload()
    per_iteration = [tag for tag in own.Tags()["scalars"] if not tag.endswith("/time")]
    assert "Loss/learning_rate" in per_iteration
    assert {e.step for tag in per_iteration for e in own.Scalars(tag)} == {0, 1}
    res_yaml = resolved_sources(run)
    config = res_yaml["variants"]["default"]["config"]
    assert config["algo"]["params"]["algorithm"]["learning_rate"] == 1.0e-3  # the task's
    assert config["algo"]["params"]["num_steps_per_env"] == 16
    assert res_yaml["sources"]["algo.params.algorithm.learning_rate"].startswith(TASK_SOURCE)
    assert res_yaml["sources"]["algo.params.num_steps_per_env"] == "manifest"
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["isaaclab"]["packages"]["rsl-rl-lib"] == "5.5.1"

    # interrupted after its first checkpoint: the final model and record gone, a damaged
    # newer checkpoint left behind
    for name in ("model.zip", "train.json", "eval.json"):
        (unit / name).unlink()
    for extra in (unit / "checkpoints").glob("step-256.*"):
        extra.unlink()
    (unit / "checkpoints" / "step-192.zip").write_bytes(b"not a checkpoint")
    status["state"] = "interrupted"
    (unit / "status.json").write_text(json.dumps(status))
    res = rlcrate("run", str(path), "--resume", str(run), timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] == 256
    assert status["resumed_from"] == 128, status
    assert (unit / "tb" / "resumed-128").is_dir() and (unit / "eval.json").is_file()


@pytest.mark.slow
def test_bench_measures_rsl_rl(write_manifest, tmp_path):
    m = rsl(bench={"steps": 128, "warmup": 32, "repeats": 2, "sweep": {"parallel.envs": [8]}})
    res = rlcrate("bench", str(write_manifest(m)), "--out", str(tmp_path), timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    (point,) = json.loads((run_dir_of(tmp_path, "il-rsl") / "bench.json").read_text())["points"]
    assert point["error"] is None and point["trainer"] == "rsl_rl_ppo", point
    for key in ("env_only", "train"):
        s = point[key]["steps_per_s"]
        assert 0 < s["min"] <= s["median"] <= s["max"] and len(s["runs"]) == 2
    assert 0 < point["train"]["env_fraction"] < 1


def test_task_without_reachable_assets_names_the_files_it_needs(write_manifest):
    """No network here: Isaac-Ant-Direct's robot USD cannot be fetched and has no stand-in."""
    ppo = {"name": "PPO", "params": {"n_steps": 16, "batch_size": 64}}
    m = rsl(env={"backend": "isaaclab", "id": "Isaac-Ant-Direct"}, algo=ppo)
    err = one_line_exit_2(rlcrate("validate", "--deep", str(write_manifest(m)), timeout=900))
    assert "Isaac/Robots/IsaacSim/Ant/ant_instanceable.usd" in err, err
    assert "set env.kwargs.asset_root to a folder with" in err


@pytest.mark.slow
def test_sb3_defaults_task_trains_with_the_task_config_and_manifest_overrides(
    write_manifest, tmp_path
):
    """PPO with `defaults: task`: the task's sb3 config (n_steps 16, n_epochs 20, ...) under the
    manifest's train.timesteps and policy_kwargs, each value's source in resolved.yaml."""
    m = rsl(algo={"name": "PPO", "defaults": "task", "params": {
        "n_epochs": 2, "policy_kwargs": {"net_arch": [16, 16]}}})  # fmt: skip
    m["train"] = {"timesteps": 128}
    res = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path), timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path, "il-rsl")
    res_yaml = resolved_sources(run)
    algo, sources = res_yaml["variants"]["default"]["config"]["algo"], res_yaml["sources"]
    assert algo["params"]["n_steps"] == 16 and algo["params"]["ent_coef"] == 0.01
    assert algo["params"]["n_epochs"] == 2 and res_yaml["train"]["timesteps"] == 128
    assert sources["algo.params.n_steps"].startswith("isaaclab task Isaac-Cartpole-Direct (sb3")
    assert sources["algo.params.n_epochs"] == "manifest" and "train.timesteps" not in sources
    assert "algo.params.seed" not in sources and "algo.params.device" not in sources
    status = json.loads((run / "units" / "default" / "seed-0" / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] == 128


@pytest.mark.slow
def test_check_determinism_trains_twice_and_compares_the_final_parameters(write_manifest, tmp_path):
    """Slow: two fresh processes each start Isaac Lab and train 2 RSL-RL iterations from master
    seed 0. On the CPU (Newton's MuJoCo-Warp, one torch thread) they agree bit for bit; the
    verdict is recorded for this environment, where later runs' provenance reads it."""
    cache = tmp_path / "cache"
    out = rlcrate(
        "check-determinism",
        str(write_manifest(rsl())),
        "--steps",
        "256",
        timeout=1800,
        env_extra={"RLCRATE_CACHE_DIR": str(cache)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    said = " ".join(out.stdout.split())
    assert "bitwise: the final parameters after 256 env steps are identical" in said, said
    (entry,) = json.loads((cache / "determinism.json").read_text()).values()
    found = entry["isaaclab"]
    assert found["result"] == "bitwise" and found["algo"] == "rsl_rl_ppo", found
    assert found["env_steps"] == 256 and found["env"] == "Isaac-Cartpole-Direct"


@pytest.mark.slow
def test_gpu_script_dry_validates_the_rsl_rl_step(tmp_path):
    """Slow: two `validate --deep` in Isaac Lab's Python (~90 s). tests/gpu/check_gpu.py --dry
    (any machine, no GPU figure): the RSL-RL step's 4096-env manifests pass validation and the
    dry construction; AnymalD's only when its assets can be reached, else the error names them."""
    out = tmp_path / "gpu.json"
    script = ROOT / "tests" / "gpu" / "check_gpu.py"
    cmd = [sys.executable, str(script), str(out), "--dry", "--only", "rsl_rl"]
    res = subprocess.run(cmd, env=checkout_env(), capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads(out.read_text())
    assert result["dry"] is True and "brax" not in result and "sb3" not in result
    cart, anymal = (
        result["rsl_rl"][t] for t in ("Isaac-Cartpole-Direct", "Isaac-Velocity-Flat-AnymalD")
    )
    assert cart["rc"] == 0 and "ok (1 variant(s)" in cart["out"], cart
    assert anymal["rc"] == 0 or "set env.kwargs.asset_root" in anymal["out"], anymal
