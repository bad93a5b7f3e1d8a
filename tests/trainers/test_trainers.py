"""The trainer seam: which trainer a manifest's algorithm resolves to, and the contract."""

from __future__ import annotations

import pytest

from runner import plugins
from runner.backends import get_backend
from runner.checks.manifest import check_manifest
from runner.errors import BackendUnavailable, FieldProblem
from runner.manifest.schema import Manifest
from runner.trainers import get_trainer, trainer_for
from runner.trainers.sb3.algos import ALGOS

# brax_ppo's params are checked against `ppo.train` in Brax's Python (the runner's own here).
BRAX = get_backend("brax").available()
needs_brax = pytest.mark.skipif(BRAX is not None, reason=f"brax: {BRAX}")


def test_every_sb3_algorithm_is_trained_by_sb3():
    assert {trainer_for(a) for a in ALGOS} == {"sb3"}


def _cfg(algo: str, backend: str, params: dict | None = None, envs: int = 16) -> Manifest:
    env_id = "inverted_pendulum" if backend == "brax" else "CartPole-v1"
    return Manifest.model_validate(
        {
            "rlcrate": 1,
            "name": "t",
            "env": {"backend": backend, "id": env_id},
            "parallel": {"envs": envs},
            "algo": {"name": algo, "params": params or {}},
        }
    )


def _problems(cfg: Manifest) -> list[FieldProblem]:
    trainer = get_trainer(trainer_for(cfg.algo.name))
    return trainer.check_limits(cfg) + trainer.check_params(cfg, None)


@needs_brax
def test_own_loops_resolve_to_their_trainer_and_the_env_interface_it_steps():
    """brax_ppo steps Brax's own envs: a backend that does not make them is refused by the
    generic check (the trainer compares no backend's name)."""
    assert trainer_for("brax_ppo") == "brax_ppo"
    assert _problems(_cfg("brax_ppo", "brax")) == []
    [problem] = check_manifest(_cfg("brax_ppo", "gymnasium"), "m.yaml", {})
    assert problem.path == ("algo", "name"), problem
    assert "brax_ppo trainer steps functional-jax-env envs, which the gymnasium" in str(problem)
    assert "backends that do: brax" in str(problem)
    assert get_trainer("sb3").check_params(_cfg("PPO", "brax"), "Box") == []  # SB3 adapter
    assert set(plugins.OWN["trainer"]) - {"sb3"} & set(ALGOS) == set()


@needs_brax
def test_own_loop_params_are_checked_against_its_function():
    found = _problems(_cfg("brax_ppo", "brax", {"unroll_lenght": 5, "num_envs": 5}))
    assert [p.path for p in found] == [
        ("algo", "params", "unroll_lenght"), ("algo", "params", "num_envs")
    ]  # fmt: skip
    assert "did you mean 'unroll_length'" in found[0].message
    assert "set by the runner" in found[1].message
    assert _problems(_cfg("brax_ppo", "brax", {"network": {}, "entropy_cost": 0.01})) == []


def test_brax_batch_must_split_evenly_over_the_envs():
    """ppo.train asserts batch_size x num_minibatches % num_envs == 0; checked without Brax."""
    trainer = get_trainer("brax_ppo")
    params = {"batch_size": 16, "num_minibatches": 4}
    assert trainer.check_limits(_cfg("brax_ppo", "brax", params, envs=16)) == []
    [problem] = trainer.check_limits(_cfg("brax_ppo", "brax", params, envs=24))
    assert problem.path == ("parallel", "envs")
    assert "(16 x 4 = 64)" in problem.message and "(24)" in problem.message
    # Brax's own defaults (batch_size 32, num_minibatches 16) count when unset
    assert trainer.check_limits(_cfg("brax_ppo", "brax", envs=512)) == []
    assert trainer.check_limits(_cfg("brax_ppo", "brax", envs=24)) != []


def test_a_trainer_not_in_this_version_says_so():
    with pytest.raises(BackendUnavailable, match="no trainer named 'nope' is installed"):
        get_trainer("nope")


@needs_brax
def test_brax_resume_falls_back_past_a_damaged_checkpoint(tmp_path, capsys):
    """brax_ppo.train resumes from `newest_readable` (its checkpoints hold no step: the name
    gives it), falling back past damaged ones as SB3's trainer does; the parameters come back
    as arrays fitted into the tree the config builds."""
    import jax
    import numpy as np

    from runner.trainers.brax_ppo.model import _template, load_params, save_params
    from runner.trainers.resume import newest_readable, step_in_name

    config = {
        "env": "x", "observation_size": 4, "action_size": 1, "normalize_observations": False,
        "network": {"policy_hidden_layer_sizes": [8], "value_hidden_layer_sizes": [8]},
    }  # fmt: skip
    params = _template(config)  # a (normalizer, policy, value) tree of that network
    ckpts = tmp_path / "checkpoints"
    save_params(ckpts / "step-64.zip", params, config)
    (ckpts / "step-128.zip").write_bytes(b"not a zip")  # the newest, damaged
    start = newest_readable(
        tmp_path, lambda path: load_params(path, config), 1000, steps_of=step_in_name
    )
    assert start is not None and start.steps_done == 64
    saved, loaded = (jax.tree_util.tree_leaves(t) for t in (params, start.model))
    assert len(saved) == len(loaded) and all(
        np.array_equal(a, b) for a, b in zip(saved, loaded, strict=True)
    )
    assert "step-128.zip: the model is not a readable zip" in capsys.readouterr().err


@pytest.mark.gymnasium
def test_a_stop_request_ends_sb3_training_at_the_next_step(tmp_path):
    """The unit's SIGTERM handler sets STOP and raises; where that exception is swallowed, the
    SB3 loop's per-step check still stops training, with a checkpoint to resume from."""
    from runner.record.seeding import derive
    from runner.trainers import get_trainer
    from runner.trainers.base import STOP
    from tests.helpers import tiny_manifest

    cfg = Manifest.model_validate(tiny_manifest(train__timesteps=100_000))
    STOP.set()
    try:
        with pytest.raises(KeyboardInterrupt):
            get_trainer("sb3").train(cfg, tmp_path, derive(0))
    finally:
        STOP.clear()
    (checkpoint,) = (tmp_path / "checkpoints").glob("step-*.zip")
    assert int(checkpoint.stem.split("-")[1]) < 100_000
    assert not (tmp_path / "model.zip").exists()


QUICK = """
import atexit, sys
from runner.trainers import quick_exit
atexit.register(lambda: open(sys.argv[1], "w").write("atexit ran"))
print("buffered", end="")  # not a whole line: only a flush writes it to the pipe
for vote in sys.argv[2:]:
    quick_exit.allow(vote == "yes")
quick_exit.end(3)
"""


@pytest.mark.parametrize("votes", [["yes"], ["yes", "no"], []])
def test_quick_exit_keeps_the_exit_status_the_output_and_atexit(votes, tmp_path):
    """`quick_exit.end` (a unit's process when its trainer allows it): the same exit status,
    standard output and atexit handlers as a normal exit, whether or not every trainer allowed
    skipping Python's finalization."""
    import subprocess
    import sys

    from tests.helpers import checkout_env

    mark = tmp_path / "mark"
    res = subprocess.run(
        [sys.executable, "-c", QUICK, str(mark), *votes],
        capture_output=True, text=True, env=checkout_env(), timeout=60,
    )  # fmt: skip
    assert (res.returncode, res.stdout, res.stderr) == (3, "buffered", "")
    assert mark.read_text() == "atexit ran"
