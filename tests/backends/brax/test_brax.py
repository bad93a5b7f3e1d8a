"""The brax backend through the console script: bad input before any work, and (slow) real
training of tiny budgets with Brax's own PPO and with SB3 through the VecEnv adapter, and the bench.

Brax and the JAX its PPO runs on are in both image locks, so these runs run in the runner's own
environment (and, under `make test-gpu-env`, in the GPU one). Most of a tiny run's time is tracing
and XLA compilation, which grow with the physics: Brax's PPO runs on `fast`, Brax's own env for
testing its trainers (no physics to trace: about 17 s a unit here against 47 s for
inverted_pendulum), and one unit per stage, SB3 through the adapter, steps a physics pipeline
(inverted_pendulum on `generalized`). The runs share JAX's persistent compilation cache (conftest
puts it in .cache/jax, kept between test runs), which holds the env's programs but not PPO's
training epoch: with `log_training_metrics` (the episode returns TensorBoard shows) it calls back
to the host, and JAX does not cache such programs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import cast

import pytest
import yaml

from runner.backends import get_backend
from tests.helpers import rlcrate, run_dir_of

brax = get_backend("brax")

pytestmark = [
    pytest.mark.brax,
    pytest.mark.skipif(brax.available() is not None, reason=f"brax: {brax.available()}"),
]


def brax_manifest(**over) -> dict:
    m = {
        "rlcrate": 1,
        "name": "brax-t",
        "env": {"backend": "brax", "id": "inverted_pendulum",
                "kwargs": {"backend": "generalized", "episode_length": 50}},
        "parallel": {"envs": 8},
        "algo": {"name": "brax_ppo", "params": {
            "unroll_length": 8, "batch_size": 8, "num_minibatches": 2, "num_updates_per_batch": 1,
            "network": {"policy_hidden_layer_sizes": [16], "value_hidden_layer_sizes": [16]}}},
        "train": {"timesteps": 1024},
        "eval": {"episodes": 3},
        "seeds": [0],
    }  # fmt: skip
    m.update(over)
    return m


# Brax's test env for the PPO runs, and the physics pipeline the adapter's unit steps
FAST = {"backend": "brax", "id": "fast", "kwargs": {"episode_length": 50}}
PHYSICS = {"env.id": "inverted_pendulum", "env.kwargs.backend": "generalized"}


def _validate(write_manifest, m: dict):
    return rlcrate("validate", str(write_manifest(m)))


def test_unknown_env_id_suggests(write_manifest):
    m = brax_manifest()
    m["env"]["id"] = "inverted_pendulm"
    out = _validate(write_manifest, m)
    assert out.returncode == 2, out.stderr
    assert "Did you mean 'inverted_pendulum'" in out.stderr and "Traceback" not in out.stderr


def test_bad_pipeline_and_ppo_param_and_workers(write_manifest):
    m = brax_manifest(parallel={"envs": 8, "workers": 2})
    m["env"]["kwargs"]["backend"] = "mjxx"
    m["algo"]["params"]["unroll_lenght"] = 4
    err = _validate(write_manifest, m).stderr
    assert "env.kwargs.backend: 'mjxx' is not a Brax pipeline" in err
    assert "params.unroll_lenght: brax_ppo has no argument 'unroll_lenght'; did you mean" in err
    assert "set parallel.workers: 1" in err


def test_missing_brax_environment_is_one_line(write_manifest, tmp_path):
    """RLCRATE_PYTHON_BRAX naming a Python that is not there: one line naming it, exit 2, no run."""
    out = rlcrate(
        "run",
        str(write_manifest(brax_manifest())),
        "--out",
        str(tmp_path / "runs"),
        env_extra={"RLCRATE_PYTHON_BRAX": str(tmp_path / "nowhere" / "bin" / "python")},
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "RLCRATE_PYTHON_BRAX" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_brax_ppo_only_on_brax(write_manifest):
    m = brax_manifest(env={"backend": "gymnasium", "id": "CartPole-v1"})
    out = _validate(write_manifest, m)
    assert out.returncode == 2
    assert "brax_ppo trainer steps functional-jax-env envs, which the gymnasium" in out.stderr


@pytest.mark.skipif(brax.interpreter() is not None, reason="Brax is in another Python here")
def test_the_adapters_state_round_trips_as_data_and_steps_on_the_same():
    """The env part of an exact resume for SB3 on Brax: each env's slice of the Brax state and
    the key stream the adapter resets envs from, as JSON data; put into a fresh adapter, it steps
    on exactly as the original does, past episode ends (where resets draw keys). A state that
    does not fit is refused, not put half. (SB3's whole kill-and-resume on Brax, through
    `check-determinism --resume`, costs minutes of compiling here: see the run-directory guide.)"""
    import numpy as np

    from runner.backends.replay import REPLAY, REPLAY_STATE
    from runner.manifest.schema import ParallelSpec

    env, three = brax.Options.model_validate(FAST), ParallelSpec(envs=3)
    a = brax.make_vec_env(env, three, seed=7, log_dir=None)
    rng = np.random.default_rng(0)

    def act() -> np.ndarray:
        return rng.uniform(-1, 1, (3, *(a.action_space.shape or ()))).astype(np.float32)

    a.reset()
    for _ in range(30):
        a.step(act())
    # what a checkpoint keeps: start and obs as JSON, the (empty) actions as an array
    saved = [{**s, **json.loads(json.dumps({k: s[k] for k in ("start", "obs")}))}
             for s in a.env_method(REPLAY_STATE)]  # fmt: skip
    assert all(len(s["actions"]) == 0 for s in saved)
    b = brax.make_vec_env(env, three, seed=0, log_dir=None)  # another seed: all comes from saved
    assert all(b.env_method(REPLAY, s, indices=[i])[0] for i, s in enumerate(saved))
    for _ in range(40):  # 30 + 40 > episode_length 50: every env resets on the way
        action = act()
        for x, y in zip(a.step(action)[:3], b.step(action)[:3], strict=True):
            assert np.array_equal(cast(np.ndarray, x), cast(np.ndarray, y))
    bad = {**saved[0], "start": json.loads(json.dumps(saved[0]["start"]))}
    bad["start"]["leaves"][0] = [1.0, 2.0]  # another shape
    assert b.env_method(REPLAY, bad, indices=[0]) == [False]
    action = act()  # the refused state changed nothing
    for x, y in zip(a.step(action)[:3], b.step(action)[:3], strict=True):
        assert np.array_equal(cast(np.ndarray, x), cast(np.ndarray, y))


@pytest.mark.slow
def test_brax_ppo_twice_and_sb3_adapter_in_one_run(write_manifest, tmp_path):
    """Brax's own PPO as two variants of the same seed (same result, bit for bit) and SB3's PPO
    through the VecEnv adapter, as three units of one run. One unit at a time: the second
    compile of the same PPO then reads the first's from the compilation cache rather than racing
    it on the other core."""
    from runner.report.tb import read_curve

    native = {"variant": "native", "algo.name": "brax_ppo", **_native()}
    # The same seed twice: the determinism claim (CI runs this test in the GPU environment's
    # stage only, make test-gpu-env)
    again = [{**native, "variant": "again"}]
    m = brax_manifest(
        env=FAST,
        algo={"name": "PPO"},
        parallel={"envs": 8, "units": 1},
        matrix=[
            native,
            *again,
            {"variant": "adapter", "algo.params": {"n_steps": 32, "batch_size": 64, "n_epochs": 1},
             "train.timesteps": 512, **PHYSICS,
             # recorded through the VecEnv's get_images: Brax's drawing, software OpenGL
             "eval.video": {"episodes": 1, "format": "gif", "size": [48, 36]}},
        ],
    )  # fmt: skip
    res = rlcrate(
        "run", str(write_manifest(m)), "--out", str(tmp_path / "r"),
        env_extra={"MUJOCO_GL": "osmesa"},
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "r", m["name"])
    units = [run / "units" / v["variant"] / "seed-0" for v in (native, *again)]
    status = json.loads((units[0] / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] >= 1024
    assert status["python"]["executable"] == brax.interpreter() or brax.interpreter() is None
    curve, problem = read_curve(units[0] / "tb", status["train_started"])
    assert problem is None and curve is not None and len(curve.steps) > 0
    assert curve.steps[-1] <= status["timesteps_done"]
    with zipfile.ZipFile(units[0] / "model.zip") as z:
        assert set(z.namelist()) == {"params.npz", "config.json"}  # data, no pickle
    evals = [json.loads((u / "eval.json").read_text()) for u in units]
    assert evals[0]["n_episodes"] == 3 and evals[0]["seed"] == status["seeds"]["eval_env"]
    assert all(0 < e["length"] <= 50 for e in evals[0]["episodes"])
    params = [zipfile.ZipFile(u / "model.zip").read("params.npz") for u in units]
    if again:  # same seed, same result
        assert evals[0]["episodes"] == evals[1]["episodes"] and params[0] == params[1]
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["brax"]["packages"]["brax"] and prov["brax"]["packages"]["jax"], prov["brax"]
    if brax.interpreter() is not None:  # Brax's own venv: recorded where the units ran
        where = dict.fromkeys((v["variant"] for v in m["matrix"]), brax.interpreter())
        assert prov["unit_interpreters"] == where
        resolved = yaml.safe_load((run / "resolved.yaml").read_text())
        assert resolved["variants"]["native"]["interpreter"] == brax.interpreter()
    # SB3 through the adapter: the same run directory contract
    unit = run / "units/adapter/seed-0"
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] == 512
    ev = json.loads((unit / "eval.json").read_text())
    assert ev["n_episodes"] == 3 and all(0 < e["length"] <= 50 for e in ev["episodes"])
    assert (unit / "model.zip").is_file() and list((unit / "tb").rglob("events.out.tfevents.*"))
    (clip,) = json.loads((unit / "video/video.json").read_text())["clips"]
    assert clip["frames"] == ev["episodes"][0]["length"]
    assert (unit / "video/episode-0.gif").is_file()


def _in_gpu_env() -> bool:
    """Whether this Python is the GPU environment's (`make test-gpu-env`)."""
    from runner.backends.base import gpu_env_python

    return Path(sys.prefix).resolve() == gpu_env_python().parent.parent.resolve()


def _native() -> dict:
    return {"algo.params": brax_manifest()["algo"]["params"]}


@pytest.mark.slow
def test_bench_measures_brax_points_in_brax_python(write_manifest, tmp_path):
    """Brax's own PPO and the SB3 adapter benched side by side through `rlcrate bench`: each point
    is measured in the Python Brax's units run in; Brax's env-only rate is its jitted loop, with
    the compile time apart; the adapter's is the VecEnv SB3 steps."""
    m = brax_manifest(
        env=FAST,
        algo={"name": "PPO"},
        bench={"steps": 512, "warmup": 0, "repeats": 2, "sweep": {"parallel.envs": [8]}},
        matrix=[
            {"variant": "native", "algo.name": "brax_ppo", **_native()},
            {"variant": "adapter", "algo.params": {"n_steps": 32, "batch_size": 64, "n_epochs": 1}},
        ],
    )
    res = rlcrate("bench", str(write_manifest(m)), "--out", str(tmp_path / "b"))
    assert res.returncode == 0, res.stdout + res.stderr
    bench = json.loads((run_dir_of(tmp_path / "b", "brax-t") / "bench.json").read_text())
    points = {p["variant"]: p for p in bench["points"]}
    assert set(points) == {"native", "adapter"}
    for p in points.values():
        assert p["error"] is None and p["envs"] == 8
        assert p["python"] == (brax.interpreter() or sys.executable)
        for key in ("env_only", "train"):
            s = p[key]["steps_per_s"]
            assert 0 < s["min"] <= s["median"] <= s["max"] and len(s["runs"]) == 2
    assert points["native"]["trainer"] == "brax_ppo" and points["adapter"]["trainer"] == "sb3"
    assert (
        points["native"]["vec_env"].startswith("jit(")
        and points["native"]["env_only"]["compile_s"] > 0
    )
    assert points["native"]["train"]["env_fraction"] is None
    assert points["adapter"]["vec_env"] == "BraxVecEnv"
    assert 0 < points["adapter"]["train"]["env_fraction"] < 1


# Brax's PPO evaluation with eval.video, in a fresh process (MuJoCo reads MUJOCO_GL when first
# imported): the policy as initialised, saved as a trained one is (compiling PPO's training
# epoch for a physics env costs about a minute here; the evaluation is what is tested)
EVAL_DRAWN = """
import json, sys
from pathlib import Path
from runner.manifest.schema import Manifest
from runner.record.seeding import derive
from runner.trainers import brax_ppo, get_trainer
from runner.trainers.brax_ppo import model
cfg, unit, seeds = Manifest.model_validate(json.loads(sys.argv[1])), Path(sys.argv[2]), derive(0)
config = model.model_config(cfg, brax_ppo.jax_env(cfg))
import jax
initial = jax.jit(lambda: model._template(config))()  # one program, not each op on its own
model.save_params(unit / "model.zip", initial, config)
headless = cfg.model_copy(update={"eval": cfg.eval.model_copy(update={"video": None})})
get_trainer("brax_ppo").evaluate(headless, unit, seeds)
(unit / "headless.json").write_bytes((unit / "eval.json").read_bytes())
get_trainer("brax_ppo").evaluate(cfg, unit, seeds)
"""


@pytest.mark.slow
def test_brax_ppo_evaluation_drawn_by_brax_scores_what_it_scores_headless(tmp_path):
    """Brax's PPO plays every evaluation episode in one jitted scan; eval.video draws the first
    ones afterwards from the states that scan kept, with Brax's own drawing (MuJoCo's renderer,
    software OpenGL): one frame per agent step, the very episodes eval.json scores, whose
    returns are the same as without a video."""
    import imageio.v3 as iio
    import numpy as np

    from tests.helpers import checkout_env

    video = {"episodes": 2, "fps": 10, "format": "gif", "size": [64, 48]}
    m = brax_manifest(eval={"episodes": 3, "video": video})
    unit = tmp_path / "unit"
    unit.mkdir()
    res = subprocess.run(
        [sys.executable, "-c", EVAL_DRAWN, json.dumps(m), str(unit)],
        capture_output=True,
        text=True,
        env=checkout_env(MUJOCO_GL="osmesa", JAX_PLATFORMS="cpu"),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    headless, drawn = (json.loads((unit / f).read_text()) for f in ("headless.json", "eval.json"))
    assert drawn["episodes"] == headless["episodes"]  # bit for bit
    record = json.loads((unit / "video/video.json").read_text())
    assert [c["episode"] for c in record["clips"]] == [0, 1]
    for clip, episode in zip(record["clips"], drawn["episodes"], strict=False):
        frames = iio.imread(unit / "video" / clip["file"])
        # a GIF merges a frame identical to the one before it: the running time is one frame
        # (100 ms at 10 fps) per agent step
        ms = [iio.immeta(unit / "video" / clip["file"], index=k)["duration"]
              for k in range(len(frames))]  # fmt: skip
        assert clip["frames"] == episode["length"] and sum(ms) == 100 * episode["length"]
        assert frames.shape[1:] == (48, 64, 3) and frames.std() > 5  # drawn, not blank
        assert len(frames) > 1 and np.abs(np.diff(frames.astype(int), axis=0)).mean() > 0


def test_brax_video_needs_an_opengl_context_and_a_physics_system(write_manifest, monkeypatch):
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    m = brax_manifest(eval={"episodes": 2, "video": {}})
    res = _validate(write_manifest, m)
    assert res.returncode == 2 and "set MUJOCO_GL=osmesa" in res.stderr, res.stderr
    m = brax_manifest(env=FAST, eval={"episodes": 2, "video": {}})
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    res = _validate(write_manifest, m)
    assert res.returncode == 2 and "`fast` has no physics system to draw" in res.stderr, res.stderr
