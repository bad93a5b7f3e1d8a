"""A backend and a trainer each added as one module and nothing in rlcrate told of it: the toy
backend (tests/plugins/rlcrate_toys/line.py, found by its entry point like any installed
package's) and a toy trainer (tests/toy_trainer.py, added in this process with the registry's
own hook) go through the checks, the scheduler's needs, the resource and determinism
declarations, doctor, real training (SB3's PPO on the toy backend) and the toy trainer's own
loop."""

from __future__ import annotations

import pytest

from runner import trainers
from runner.checks.manifest import check_manifest
from runner.manifest import resolved
from runner.manifest.schema import Manifest
from runner.record.seeding import derive


@pytest.fixture(autouse=True)
def toys():
    trainers.register("toy_loop", "tests.toy_trainer:ToyLoop")
    yield
    trainers.unregister("toy_loop")


def _cfg(algo: str = "PPO", env_id: str = "line", **over) -> Manifest:
    """A manifest on the toy backend."""
    data = {
        "rlcrate": 1,
        "name": "toy",
        "env": {"backend": "toy", "id": env_id},
        "parallel": {"envs": 1},
        "algo": {"name": algo, "params": over.pop("params", {"n_steps": 32, "batch_size": 32})},
        "train": {"timesteps": 64},
        "eval": {"episodes": 2},
        **over,
    }
    return Manifest.model_validate(data)


def test_the_toy_backend_passes_the_checks_and_says_what_is_wrong():
    assert check_manifest(_cfg(), "toy.yaml", {}) == []
    [bad_id] = check_manifest(_cfg(env_id="lien"), "toy.yaml", {})
    assert bad_id.path == ("env", "id") and "Did you mean 'line'" in bad_id.message
    wide = _cfg(parallel={"envs": 4})
    assert [p.message for p in check_manifest(wide, "toy.yaml", {})] == [
        "the toy backend steps one env; set parallel.envs: 1"
    ]


def test_everyone_asks_the_toy_backend_rather_than_its_name():
    from runner.checks import installed
    from runner.cli.doctor import _backend_row
    from runner.cli.doctor_accel import accelerator_rows
    from runner.executors.needs import gpus_of
    from runner.provenance.determinism import declared
    from runner.run.resources import processes_per_unit

    config = resolved(_cfg()).variants["default"].config
    assert gpus_of(config) == 0 and processes_per_unit(config) == 0
    assert declared(config) == ("bitwise", "toy on CPU with one torch thread")
    assert installed.missing_packages("toy") == [] and _backend_row("toy") == ("yes", "yes", "")
    assert ("toy line", "[green]ok[/]", "always here") in accelerator_rows()


def test_sb3_trains_and_evaluates_on_the_toy_backend(tmp_path):
    cfg, seeds = _cfg(), derive(0)
    sb3 = trainers.get_trainer(trainers.trainer_for("PPO"))
    assert (sb3.train(cfg, tmp_path, seeds).timesteps_done or 0) >= 64
    mean = sb3.evaluate(cfg, tmp_path, seeds).eval_mean
    assert (tmp_path / "eval.json").is_file() and mean is not None and 0.0 <= mean <= 20.0


def test_the_toy_trainer_is_checked_trained_and_evaluated_through_the_registry(tmp_path):
    assert trainers.trainer_for("toy_loop") == "toy_loop"
    assert check_manifest(_cfg("toy_loop", params={"right": 1.0}), "toy.yaml", {}) == []
    [limit] = check_manifest(_cfg("toy_loop", params={"right": 2.0}), "toy.yaml", {})
    assert limit.path == ("algo", "params", "right") and "between 0 and 1" in limit.message
    [name] = check_manifest(_cfg("toy_loop", params={"left": 1.0}), "toy.yaml", {})
    assert name.path == ("algo", "params", "left")
    cfg, seeds = _cfg("toy_loop", params={"right": 1.0}), derive(0)
    toy = trainers.get_trainer("toy_loop")
    toy.train(cfg, tmp_path, seeds)
    assert toy.evaluate(cfg, tmp_path, seeds).fields() == {"eval_mean": 20.0, "eval_std": 0.0}


def test_check_determinism_runs_the_toy_trainers_attempt():
    from runner.run.check_determinism import attempt, first_divergence

    config = _cfg("toy_loop", params={"right": 0.5}).model_dump(mode="json")
    a, b = attempt(config, 3, 20), attempt(config, 3, 20)
    assert a["compares"] == "one episode's return" and first_divergence(a, b) is None
