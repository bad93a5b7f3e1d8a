"""Trainers own their `algo` options, as backends own `env`'s: `algo` is checked against the options
model of the trainer it names (or that declares its algorithm), a field of another trainer's is an
error at its line naming the trainer that has it, resolved.yaml records only the trainer's
options (and an older one reads as what ran), the JSON Schema shows each trainer's; and what a
plugin cannot do (an ability it does not declare) is refused in one line or done without, said
once. In process, but for one console-script run of `validate`."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
import yaml

from runner import trainers
from runner.errors import RunFileError, UserInputError
from runner.manifest import parse_resolved, resolved
from runner.manifest.load import read_manifest
from runner.manifest.schema import Manifest
from tests.helpers import ROOT, rlcrate, tiny_manifest

# a brax_ppo manifest (its checks need no Brax: only the options are looked at)
BRAX = {"env": {"backend": "brax", "id": "fast"}, "algo": {"name": "brax_ppo"}, "parallel": {}}
BRAX_WITH_SB3_FIELDS = """\
rlcrate: 1
name: x
env: {backend: brax, id: fast}
algo:
  name: brax_ppo
  policy: CnnPolicy
  normalize: true
  torch_threads: 2
  devise: cpu
"""


def _problems(write_manifest, text: str) -> list[str]:
    _, problems, _ = read_manifest(write_manifest(text))
    return [f"{p.line}: {'.'.join(map(str, p.path))}: {p.message}" for p in problems]


def test_another_trainers_field_is_an_error_at_its_line(write_manifest):
    """brax_ppo owns `device` only: SB3's policy and normalize and torch's threads are each one
    line at their own line, naming the trainer that has the field and what to write instead; a
    typo gets a suggestion. Every problem at once."""
    assert _problems(write_manifest, BRAX_WITH_SB3_FIELDS) == [
        "6: algo.policy: the brax_ppo trainer has no such option; sb3 has; Brax's PPO builds "
        "its own networks: size them with algo.params.network",
        "7: algo.normalize: the brax_ppo trainer has no such option; sb3 has; Brax's PPO "
        "normalizes observations itself: algo.params.normalize_observations: true",
        "8: algo.torch_threads: the brax_ppo trainer has no such option; rsl_rl_ppo, sb3 have; "
        "Brax's PPO runs on JAX, not torch",
        "9: algo.devise: unknown key; did you mean 'device'? (the brax_ppo trainer's options: "
        "name, trainer, params, device, defaults)",
    ]


def test_an_algorithm_no_trainer_declares_is_one_line_with_a_suggestion(write_manifest):
    text = "rlcrate: 1\nname: x\nenv: {backend: gymnasium, id: CartPole-v1}\n"
    found = _problems(write_manifest, text + "algo: {name: ppo, polcy: MlpPolicy}\n")
    assert len(found) == 2, found
    assert found[0].startswith("4: algo.name: unknown algorithm 'ppo'; did you mean 'PPO'?")
    assert found[1].startswith("4: algo.polcy: unknown key; did you mean 'policy'?")
    [wrong] = _problems(write_manifest, text + "algo: {trainer: rsl_rl_ppo, defaults: zoo}\n")
    assert wrong == "4: algo.defaults: Input should be 'task' (got 'zoo')"  # zoo is sb3's


def test_the_trainer_of_an_algorithm_is_the_one_that_declares_it():
    """Declared by the trainer plugins (ALGORITHMS), not guessed from the name: SB3's algorithms
    are sb3's, the own loops their own, a package's trainer its own algorithm's."""
    assert trainers.trainer_for("SAC") == "sb3"
    assert trainers.trainer_for("brax_ppo") == "brax_ppo"
    assert trainers.trainer_for("rsl_rl_ppo") == "rsl_rl_ppo"
    assert trainers.trainer_for("climb") == "toy_climb"  # tests/plugins declares it
    assert trainers.trainer_for("PPO", "toy_climb") == "toy_climb"  # named: that one
    with pytest.raises(UserInputError, match="unknown algorithm 'Sac'; did you mean 'SAC'"):
        trainers.trainer_for("Sac")


def _algo(data: dict) -> dict:
    return resolved(Manifest.model_validate(data)).dump()["variants"]["default"]["config"]["algo"]


def test_resolved_yaml_records_only_what_the_trainer_uses():
    """A brax_ppo variant records its own options; an SB3 variant keeps the keys SB3 runs have
    always had, where they were (so older runs' files read alike)."""
    brax = tiny_manifest(**BRAX)
    assert set(_algo(brax)) == {"name", "trainer", "params", "device", "defaults"}
    sb3 = _algo(tiny_manifest())
    assert set(sb3) == {
        "name", "trainer", "defaults", "policy", "params", "normalize", "device", "torch_threads"
    }  # fmt: skip
    assert (sb3["policy"], sb3["normalize"], sb3["torch_threads"]) == ("MlpPolicy", None, 1)


def test_a_matrix_may_change_the_trainer():
    """A variant that switches to another trainer takes none of the base trainer's defaults;
    what the manifest itself set for every variant still applies to each (and is checked)."""
    from runner.manifest.matrix import apply_overrides

    base = Manifest.model_validate(tiny_manifest(**{**BRAX, "algo": {"name": "PPO"}}))
    brax = apply_overrides(base, {"algo.name": "brax_ppo"})
    assert set(brax.algo.model_dump()) == {"name", "trainer", "params", "device", "defaults"}
    back = apply_overrides(brax, {"algo.name": "SAC"})
    assert (back.algo.model_dump()["policy"], back.algo.name) == ("MlpPolicy", "SAC")
    fixed = Manifest.model_validate(tiny_manifest(**{**BRAX, "algo": {"policy": "MlpPolicy"}}))
    with pytest.raises(ValueError, match="the brax_ppo trainer has no such option"):
        apply_overrides(fixed, {"algo.name": "brax_ppo"})


def _old(algo_fields: dict, fmt: int | None = None) -> dict:
    """The resolved.yaml data of a brax_ppo run, as an rlcrate before trainers owned their
    options wrote it: every SB3/torch field, filled in for every trainer, and no `format` (that
    rlcrate wrote none: format 0), or the format `fmt` said."""
    data = resolved(Manifest.model_validate(tiny_manifest(**BRAX))).dump()
    del data["format"], data["written_by"]
    if fmt is not None:
        data["format"] = fmt
    old = {"defaults": None, "policy": "MlpPolicy", "normalize": None, "torch_threads": 1}
    for config in [data, data["variants"]["default"]["config"]]:
        config["algo"].update({**old, **algo_fields})
    return data


def test_an_older_resolved_yaml_reads_as_what_ran_and_drops_nothing_unseen():
    """The fields every trainer was given are removed where they hold the resolver's own
    fill-in (brax_ppo never read them); a value someone set stays, and the file is refused in
    one line naming it."""
    run = parse_resolved(_old({}), "runs/x/resolved.yaml")
    assert run.variants["default"].config.algo.model_dump() == {
        "name": "brax_ppo", "trainer": None, "params": {}, "device": "cpu", "defaults": None
    }  # fmt: skip
    assert run.same_run(resolved(Manifest.model_validate(tiny_manifest(**BRAX))))  # as --resume
    with pytest.raises(RunFileError) as exc:
        parse_resolved(_old({"torch_threads": 4}), "runs/x/resolved.yaml")
    assert "runs/x/resolved.yaml: damaged at algo.torch_threads: the brax_ppo trainer has no" in (
        str(exc.value)
    )
    with pytest.raises(RunFileError, match="algo.torch_threads"):  # true is not the fill-in 1
        parse_resolved(_old({"torch_threads": True}), "runs/x/resolved.yaml")
    # format 1's configs hold their trainer's options only: the migration is format 0's alone
    with pytest.raises(RunFileError, match=r"damaged at algo\.(defaults|policy|normalize)"):
        parse_resolved(_old({}, fmt=1), "runs/x/resolved.yaml")


def test_the_schema_shows_each_trainers_options():
    """An editor's schema check agrees with validate: every bundled manifest passes; a field of
    another trainer, an unknown algorithm, fail."""
    import jsonschema

    from runner.manifest import json_schema
    from runner.plugins import OWN

    check = jsonschema.Draft202012Validator(json_schema(list(OWN["backend"]), list(OWN["trainer"])))
    for path in sorted(glob.glob(str(ROOT / "manifests" / "*.yaml"))):
        data = yaml.safe_load(Path(path).read_text())
        assert not list(check.iter_errors(data)), path
    env = {"backend": "gymnasium", "id": "CartPole-v1"}
    for algo, valid in [
        ({}, True),
        ({"name": "SAC", "policy": "MlpPolicy", "normalize": True}, True),
        ({"name": "brax_ppo", "device": "cuda"}, True),
        ({"name": "brax_ppo", "policy": "CnnPolicy"}, False),
        ({"trainer": "rsl_rl_ppo", "normalize": True}, False),
        ({"name": "ppo"}, False),
    ]:
        data = {"rlcrate": 1, "name": "x", "env": env, "algo": algo}
        assert check.is_valid(data) == valid, algo


def test_validate_refuses_another_trainers_field_through_the_console_script(write_manifest):
    out = rlcrate("validate", str(write_manifest(BRAX_WITH_SB3_FIELDS)))
    assert out.returncode == 2
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 4 and "m.yaml:6: algo.policy: the brax_ppo trainer has no" in errors[0]


# ---------------------------------------------------------------- abilities a plugin lacks


def test_a_backend_without_an_ability_is_refused_or_done_without(capsys):
    """The toy backend declares no ability: eval.video is refused naming what it would need,
    rl-zoo3's defaults refused, and the bench profile does without a split step, said once."""
    from runner.backends import get_backend
    from runner.backends.base import resume_approximate, video_problems
    from runner.trainers.sb3.profile import _split
    from runner.trainers.sb3.zoo import ZooError
    from runner.trainers.sb3.zoo import apply as zoo
    from tests.helpers import env_spec

    toy, env = get_backend("toy"), env_spec(backend="toy", id="line")
    [video] = video_problems(toy, env)
    assert (
        video.path == ("eval", "video") and "cannot record evaluation videos here" in video.message
    )
    assert resume_approximate(toy, env) == "the backend's env state is not saved with a checkpoint"
    data = {"env": {"backend": "toy", "id": "line"}, "algo": {"name": "PPO", "defaults": "zoo"}}
    with pytest.raises(ZooError, match="backends whose ids are Gymnasium's, not the toy"):
        zoo(data)
    cfg = Manifest.model_validate(tiny_manifest(env={"backend": "toy", "id": "line"}, parallel={}))
    assert _split(cfg, None) is None and _split(cfg, None) is None
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "warning: the toy backend cannot split its env step into parts: bench.profile shows the "
        "env step as one part"
    ]


def test_a_trainer_without_an_ability_is_refused_or_done_without(capsys):
    """toy_climb declares ColdStart and CountsSteps, nothing else: no warm start (one line), an
    approximate resume whatever the backend, no search space by name; brax_ppo no cold start,
    said once."""
    from runner.checks.lineage import problem
    from runner.provenance.determinism import resume_level
    from runner.run.bench.measure import _times_cold_start
    from tests.helpers import toy_manifest

    warm = Manifest.model_validate(toy_manifest(train__init_from={"run": "runs/x"}))
    found = problem(warm, [0])
    assert found is not None and found.message == (
        "the toy_climb trainer cannot start from another run's model"
    )
    assert resume_level("gymnasium") == "exact"
    assert resume_level("gymnasium", trainer="toy_climb").startswith(
        "approximate: the toy_climb trainer's checkpoints do not hold"
    )
    brax = Manifest.model_validate(tiny_manifest(**BRAX))
    assert not _times_cold_start(brax) and not _times_cold_start(brax)
    assert capsys.readouterr().err.count("the brax_ppo trainer cannot say when its first") == 1
    sb3 = Manifest.model_validate(tiny_manifest())
    assert _times_cold_start(sb3)


def test_results_keep_the_keys_the_records_have_always_had():
    """What a trainer returns is typed; what is written of it is the keys it set."""
    from runner.record.train import TrainRecord
    from runner.trainers.base import spread
    from runner.trainers.results import BenchResult, Rate
    from runner.trainers.resume import totals

    assert totals(100, 0, 0.0, 2.0).fields() == {
        "timesteps_done": 100, "train_wall_time_s": 2.0, "train_steps_per_s": 50.0,
        "resumed_from": None,
    }  # fmt: skip
    rate = Rate(steps_per_s=spread([1.0, 3.0]), steps=8, compile_s=0.5)  # a loop's own figure
    point = BenchResult(envs=2, vec_env="DummyVecEnv", env_only=rate, inference=None)
    assert point.fields() == {
        "envs": 2, "vec_env": "DummyVecEnv", "inference": None,
        "env_only": {"steps_per_s": {"median": 2.0, "min": 1.0, "max": 3.0, "runs": [1.0, 3.0]},
                     "steps": 8, "compile_s": 0.5},
    }  # fmt: skip
    record = {"timesteps_done": 5, "train_wall_time_s": None, "train_steps_per_s": None,
              "files": {"model.zip": "ab"}}  # fmt: skip
    assert TrainRecord.model_validate(record).result().fields() == {
        "timesteps_done": 5, "train_wall_time_s": None, "train_steps_per_s": None
    }  # fmt: skip
