"""The playground backend (MuJoCo Playground's MJX envs): its registry read without importing
Playground, env.kwargs checked against each env's own configuration at their lines, envs whose
assets need a download refused before any unit starts, and (slow) a tiny run trained both ways:
Brax's PPO with Playground's own training wrapper, and SB3 through the VecEnv adapter, drawn
by MuJoCo's renderer.

Playground is in both image locks and the runner's environment (the playground extra). Its
registry (every env's default configuration and published Brax PPO hyperparameters) is asked of
a subprocess once per install and kept in rlcrate's cache (`catalog.registry`): the first test to
need it pays 10-15 s.
"""

from __future__ import annotations

import json
import zipfile

import pytest
import yaml

from runner.backends import get_backend
from tests.helpers import one_error_line, rlcrate, run_dir_of

playground = get_backend("playground")

pytestmark = [
    pytest.mark.brax,  # JAX and Brax, in the runner's environment and the GPU one
    pytest.mark.skipif(
        playground.available() is not None, reason=f"playground: {playground.available()}"
    ),
]

# Brax's PPO at the tests' tiny budget (tests/backends/brax/test_brax.py's)
TINY_PPO = {
    "unroll_length": 8, "batch_size": 8, "num_minibatches": 2, "num_updates_per_batch": 1,
    "network": {"policy_hidden_layer_sizes": [16], "value_hidden_layer_sizes": [16]},
}  # fmt: skip


def pg_manifest(**over) -> dict:
    m = {
        "rlcrate": 1,
        "name": "pg-t",
        "env": {"backend": "playground", "id": "CartpoleBalance",
                "kwargs": {"episode_length": 50}},
        "parallel": {"envs": 8},
        "algo": {"name": "brax_ppo", "params": TINY_PPO},
        "train": {"timesteps": 1024},
        "eval": {"episodes": 3},
        "seeds": [0],
    }  # fmt: skip
    m.update(over)
    return m


def _menagerie_id() -> str:
    """A locomotion env, whose robot Playground downloads (MuJoCo Menagerie) on first load."""
    from runner.backends.playground import catalog

    return next(i for i, f in sorted(catalog.families().items()) if f == "locomotion")


def _menagerie_missing() -> bool:
    from runner.backends.playground import catalog

    return not catalog.menagerie().is_dir()


def _published(env_id: str) -> dict | None:
    """The Brax PPO config Playground publishes for `env_id` (the TaskConfigs ability)."""
    from runner.backends.abilities import TaskConfigs

    assert isinstance(playground, TaskConfigs)
    return playground.agent_config(env_id, "brax_ppo_cfg_entry_point")


def test_overrides_are_checked_against_the_envs_own_configuration():
    """env.kwargs against CartpoleBalance's real default configuration: each problem at its own
    line (nested or dotted), the near key named; a right one passes."""
    from runner.backends.playground import catalog
    from runner.backends.playground.overrides import problems

    config = catalog.registry()["envs"]["CartpoleBalance"]["config"]
    assert config["episode_length"][1] == "int" and config["ctrl_dt"][1] == "float"
    ok = {"episode_length": 60, "ctrl_dt": 1, "vision": False}
    assert problems("CartpoleBalance", ok, config) == []
    bad = {"episode_lenght": 60, "ctrl_dt": "fast", "vision": 1, "impl": "warp"}
    found = {p.path: p.message for p in problems("CartpoleBalance", bad, config)}
    assert "did you mean `episode_length`" in found[("env", "kwargs", "episode_lenght")]
    assert found[("env", "kwargs", "ctrl_dt")].startswith("expected a number")
    assert found[("env", "kwargs", "vision")].startswith("expected a boolean")
    assert "env.impl" in found[("env", "kwargs", "impl")]
    assert len(found) == 4


def test_menagerie_envs_are_marked_and_their_brax_configs_read():
    notes = playground.id_notes()
    assert "CartpoleBalance" in playground.env_ids() and "CartpoleBalance" not in notes
    if _menagerie_missing():
        assert notes[_menagerie_id()].startswith("needs a download")
    found = _published("CartpoleBalance")
    assert found is not None and found["entry"].endswith("dm_control_suite_params.brax_ppo_config")
    assert found["cfg"]["num_timesteps"] > 0 and found["cfg"]["unroll_length"] > 0


def test_task_defaults_take_playgrounds_published_brax_ppo_config():
    """`algo.defaults: task` with brax_ppo: Playground's hyperparameters for the env under the
    manifest (what it sets wins), each with its source; Brax's in-loop evaluations and seed
    stay rlcrate's."""
    from runner.trainers import task_defaults

    data = pg_manifest(algo={"name": "brax_ppo", "defaults": "task", "params": {"batch_size": 8}})
    cfg = _published("CartpoleBalance")
    assert cfg is not None
    out, sources = task_defaults.apply(data)
    params = out["algo"]["params"]
    assert params["batch_size"] == 8 and "algo.params.batch_size" not in sources
    assert params["unroll_length"] == cfg["cfg"]["unroll_length"]
    assert out["train"]["timesteps"] == 1024 and out["env"]["kwargs"]["episode_length"] == 50
    assert out["parallel"]["envs"] == 8
    assert "num_evals" not in params and "seed" not in params
    assert sources["algo.params.unroll_length"].startswith(
        "playground task CartpoleBalance (brax_ppo_cfg_entry_point: mujoco_playground.config."
    )


def test_envs_lists_playground_marking_downloads():
    res = rlcrate("envs", "playground", "--all")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "CartpoleBalance" in lines
    if _menagerie_missing():
        assert f"{_menagerie_id()} (needs a download: MuJoCo Menagerie)" in lines


def test_bad_playground_inputs_each_at_its_line(write_manifest):
    """An unknown id with "did you mean", an override of the wrong type at its line, workers."""
    m = pg_manifest(parallel={"envs": 8, "workers": 2})
    m["env"]["id"] = "CartpoleBalanse"
    res = rlcrate("validate", str(write_manifest(m)))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert "Did you mean 'CartpoleBalance'" in res.stderr and "parallel.workers: 1" in res.stderr
    m = pg_manifest(env={**pg_manifest()["env"], "kwargs": {"episode_length": "long"}})
    path = write_manifest(m)
    res = rlcrate("validate", str(path))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if "episode_length" in t)
    assert f"m.yaml:{line}: env.kwargs.episode_length: expected an integer" in res.stderr


@pytest.mark.skipif(not _menagerie_missing(), reason="MuJoCo Menagerie is installed here")
def test_an_env_needing_a_download_is_one_line_before_any_unit(write_manifest, tmp_path):
    m = pg_manifest(env={"backend": "playground", "id": _menagerie_id()})
    res = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"), timeout=120)
    one_error_line(res, _menagerie_id(), "MuJoCo Menagerie", "needs a download")
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_brax_ppo_and_sb3_adapter_on_a_playground_env(write_manifest, tmp_path):
    """Playground's recipe (Brax's PPO, Playground's training wrapper) and SB3's PPO through the
    VecEnv adapter, with its evaluation drawn by MuJoCo's renderer (software OpenGL), as two
    units of one run (one at a time: each compiles the env's MJX step on both cores)."""
    import imageio.v3 as iio

    m = pg_manifest(
        algo={"name": "PPO"},
        parallel={"envs": 8, "units": 1},
        matrix=[
            {"variant": "native", "algo.name": "brax_ppo", "algo.params": TINY_PPO},
            {"variant": "adapter", "algo.params": {"n_steps": 32, "batch_size": 64, "n_epochs": 1},
             "train.timesteps": 512,
             "eval.video": {"episodes": 1, "format": "gif", "size": [48, 36]}},
        ],
    )  # fmt: skip
    res = rlcrate(
        "run", str(write_manifest(m)), "--out", str(tmp_path / "r"),
        env_extra={"MUJOCO_GL": "osmesa"},
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "r", m["name"])
    for variant, steps in (("native", 1024), ("adapter", 512)):
        unit = run / "units" / variant / "seed-0"
        status = json.loads((unit / "status.json").read_text())
        assert status["state"] == "done" and status["timesteps_done"] >= steps, status
        ev = json.loads((unit / "eval.json").read_text())
        assert ev["n_episodes"] == 3 and all(0 < e["length"] <= 50 for e in ev["episodes"])
        assert list((unit / "tb").rglob("events.out.tfevents.*"))
    native = run / "units/native/seed-0"
    with zipfile.ZipFile(native / "model.zip") as z:
        assert set(z.namelist()) == {"params.npz", "config.json"}  # data, no pickle
    adapter = run / "units/adapter/seed-0"
    (clip,) = json.loads((adapter / "video/video.json").read_text())["clips"]
    frames = iio.imread(adapter / "video" / clip["file"])
    assert frames.shape[1:] == (36, 48, 3) and frames.std() > 5  # drawn, not blank
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["playground"]["packages"]["playground"] == "0.2.0", prov["playground"]
    resolved = yaml.safe_load((run / "resolved.yaml").read_text())
    env = resolved["variants"]["adapter"]["config"]["env"]
    assert env["id"] == "CartpoleBalance" and env["impl"] == "jax"  # MJX in JAX: the CPU's


@pytest.mark.slow  # two trainings, each compiling the MJX step: about a minute here
def test_check_determinism_on_the_cpu_is_bitwise_through_the_adapter(write_manifest):
    """`check-determinism` on a Playground env through SB3's adapter: two trainings of the same
    seed give the same observations, actions, rewards and parameters on this CPU."""
    m = pg_manifest(
        algo={"name": "PPO", "params": {"n_steps": 16, "batch_size": 64, "n_epochs": 1}},
    )
    out = rlcrate("check-determinism", str(write_manifest(m)), "--steps", "256")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "bitwise" in out.stdout, out.stdout


@pytest.mark.slow  # compiling CartpoleBalance's MJX step twice: about 30 s here
@pytest.mark.skipif(playground.interpreter() is not None, reason="Playground is in another Python")
def test_the_adapters_playground_state_round_trips_as_data_and_steps_on_the_same():
    """The env part of an SB3 unit's exact resume on Playground (its declared ExactResume): each
    env's slice of the Playground state (its MJX data, observation, info) and the adapter's key
    stream, as JSON data; put into a fresh adapter with another seed, it steps on exactly as the
    original does, past episode ends (where resets draw keys). MJX keeps zero-size arrays (no
    contacts), which JSON gives back as `[]`: they are put back in their shape."""
    import numpy as np

    from runner.backends.replay import REPLAY, REPLAY_STATE
    from runner.manifest.schema import ParallelSpec

    spec = {"backend": "playground", "id": "CartpoleBalance", "kwargs": {"episode_length": 20}}
    env, two = playground.Options.model_validate(spec), ParallelSpec(envs=2)
    a = playground.make_vec_env(env, two, seed=7, log_dir=None)
    rng = np.random.default_rng(0)

    def act() -> np.ndarray:
        return rng.uniform(-1, 1, (2, *(a.action_space.shape or ()))).astype(np.float32)

    a.reset()
    for _ in range(12):
        a.step(act())
    saved = [{**s, **json.loads(json.dumps({k: s[k] for k in ("start", "obs")}))}
             for s in a.env_method(REPLAY_STATE)]  # fmt: skip
    b = playground.make_vec_env(env, two, seed=0, log_dir=None)
    assert all(b.env_method(REPLAY, s, indices=[i])[0] for i, s in enumerate(saved))
    dones = 0
    for _ in range(16):  # 12 + 16 > episode_length 20: every env resets on the way
        action = act()
        stepped = a.step(action), b.step(action)
        for x, y in zip(stepped[0][:3], stepped[1][:3], strict=True):
            assert np.array_equal(np.asarray(x), np.asarray(y))
        dones += int(np.asarray(stepped[0][2]).sum())
    assert dones >= 2
