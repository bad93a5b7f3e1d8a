"""The manifest: golden error messages, defaults, matrix expansion, seed derivation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from runner.checks.load import load_manifest
from runner.errors import ManifestError
from runner.manifest import expand, parse_resolved, resolved
from runner.manifest.matrix import Variant, apply_overrides, path_problem
from runner.manifest.schema import Manifest
from runner.record.seeding import derive
from tests.helpers import TESTS, rlcrate, tiny_manifest

GOLDEN = TESTS / "golden"
BAD = sorted(GOLDEN.glob("*.yaml"))


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_golden_error_messages(path, monkeypatch):
    """Each bad manifest gives exactly the reviewed lines in golden/<name>.txt."""
    monkeypatch.chdir(GOLDEN)
    with pytest.raises(ManifestError) as exc:
        load_manifest(path.name)
    expected = path.with_suffix(".txt").read_text().splitlines()
    assert [f"error: {p}" for p in exc.value.problems] == expected


@pytest.mark.parametrize(
    "name", ["godot_bad_kwarg", "unknown_env", "broken_yaml", "algo_lowercase"]
)
def test_golden_through_the_console_script(name):
    """What a user sees: the same lines on stderr, exit status 2. (godot_bad_kwarg once printed
    `:5: env.id: env.kwargs: ...`: the env.id line and a doubled field path.)"""
    res = rlcrate("validate", f"{name}.yaml", cwd=GOLDEN)
    assert res.returncode == 2
    assert res.stderr.splitlines() == (GOLDEN / f"{name}.txt").read_text().splitlines()


def test_a_name_in_the_wrong_case_gets_its_suggestion():
    """difflib finds nothing close to `ppo` in PPO; case is no distance here."""
    from runner.errors import did_you_mean

    assert did_you_mean("ppo", ["PPO", "A2C", "SAC"]) == "; did you mean 'PPO'?"
    assert did_you_mean("mlppolicy", ["MlpPolicy", "CnnPolicy"]) == "; did you mean 'MlpPolicy'?"
    assert did_you_mean("Gymnasium", ["godot", "gymnasium"]) == "; did you mean 'gymnasium'?"
    assert did_you_mean("PPOO", ["PPO", "A2C"]) == "; did you mean 'PPO'?"
    assert did_you_mean("zzz", ["PPO", "A2C"]) == ""


def test_every_problem_at_once(write_manifest):
    m = tiny_manifest(parallel__envs=0, algo__name="PPOO", seeds=[1, 1], train__timesteps=-1)
    m["env"]["id"] = "CartPol-v1"
    with pytest.raises(ManifestError) as exc:
        load_manifest(write_manifest(m))
    text = "\n".join(map(str, exc.value.problems))
    for field in ("parallel.envs", "algo.name", "seeds", "train.timesteps", "env.id"):
        assert f": {field}:" in text
    assert "did you mean 'PPO'" in text
    lines = [p.line for p in exc.value.problems]
    assert lines == sorted(lines) and all(n > 0 for n in lines)


def test_defaults_are_filled_and_written(write_manifest):
    m = load_manifest(write_manifest(tiny_manifest()))
    res = resolved(m)
    data = res.dump()
    assert data["eval"]["deterministic"] is True
    # the gymnasium backend's own options, filled; no other backend's (godot's pacing)
    assert data["env"] == {
        "backend": "gymnasium", "id": "CartPole-v1", "kwargs": {}, "atari": None,
        "action_repeat": 1,
    }  # fmt: skip
    assert data["algo"]["device"] == "cpu"
    assert list(data["variants"]) == ["default"]
    # resolved.yaml round-trips into the same manifest, and the same run model
    again = yaml.safe_load(yaml.safe_dump(data))
    assert again == data
    assert parse_resolved(again, "resolved.yaml") == res


def _config(variant: Variant) -> Manifest:
    """An expanded variant's config (`expand` validates every one)."""
    assert variant.config is not None
    return variant.config


def test_matrix_cross_product_is_paired(write_manifest):
    m = load_manifest(
        write_manifest(
            tiny_manifest(
                algo__params={"n_steps": 16},
                seeds=[0, 1],
                matrix={"algo.name": ["PPO", "A2C"], "parallel.envs": [1, 2, 4]},
            )
        )
    )
    variants = expand(m)
    assert [v.name for v in variants] == [
        "PPO_envs-1",
        "PPO_envs-2",
        "PPO_envs-4",
        "A2C_envs-1",
        "A2C_envs-2",
        "A2C_envs-4",
    ]
    assert {_config(v).algo.name for v in variants} == {"PPO", "A2C"}
    assert _config(variants[4]).parallel.envs == 2
    assert all(_config(v).seeds == [0, 1] for v in variants)


def test_matrix_explicit_list(write_manifest):
    m = load_manifest(
        write_manifest(
            tiny_manifest(
                matrix=[
                    {"parallel.envs": 1, "parallel.workers": 1},
                    {"parallel.envs": 4, "parallel.workers": 4, "parallel.mode": "subproc"},
                ]
            )
        )
    )
    variants = expand(m)
    assert [v.name for v in variants] == ["envs-1_workers-1", "envs-4_workers-4_mode-subproc"]
    assert _config(variants[1]).parallel.mode == "subproc"


def test_list_entries_name_their_variants_and_sweep_their_own_values(write_manifest):
    """`variant:` names a list entry's variant (not a path); an entry may set its own
    bench.sweep, which the bench job's points follow."""
    from runner.checks.sweep import points

    m = load_manifest(
        write_manifest(
            tiny_manifest(
                bench={"steps": 64, "sweep": {"parallel.envs": [2, 4]}},
                matrix=[
                    {"variant": "plain"},
                    {"variant": "sub.8", "parallel.mode": "subproc", "parallel.workers": 2,
                     "bench.sweep": {"parallel.envs": [2]}},
                    {"algo.params.n_epochs": 1},
                ],
            )
        )
    )  # fmt: skip
    variants = expand(m)
    assert [v.name for v in variants] == ["plain", "sub.8", "n_epochs-1"]
    assert (
        _config(variants[1]).parallel.mode == "subproc"
        and variants[1].overrides.get("variant") is None
    )
    sweeps = [(p.variant, p.x) for p in points(m)]
    assert sweeps == [
        ("plain", 2),
        ("plain", 4),
        ("sub.8", 2),
        ("n_epochs-1", 2),
        ("n_epochs-1", 4),
    ]


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["a/b", "c"], "matrix[0].variant: expected a folder-safe name"),
        (["same", "same"], "matrix[1].variant: 'same' names more than one variant"),
        ([7, "c"], "matrix[0].variant: expected a folder-safe name"),
    ],
)
def test_bad_variant_labels_are_one_line_each(write_manifest, labels, message):
    m = tiny_manifest(
        matrix=[{"variant": lab, "parallel.envs": i + 1} for i, lab in enumerate(labels)]
    )
    out = rlcrate("validate", str(write_manifest(m)))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert message in out.stderr


def test_overrides_validate_again():
    from runner.manifest.schema import Manifest

    base = Manifest.model_validate(tiny_manifest())
    assert apply_overrides(base, {"algo.params.n_steps": 32}).algo.params["n_steps"] == 32
    with pytest.raises(ValueError):
        apply_overrides(base, {"parallel.envs": 0})
    assert "did you mean 'parallel.envs'" in (path_problem("parallel.env") or "")
    assert path_problem("seeds") is not None  # the run as a whole cannot vary
    assert path_problem("env.kwargs.anything") is None


def test_seed_derivation_is_stable_and_distinct():
    a, b = derive(0), derive(1)
    assert a == derive(0)
    assert set(a) == {"python", "numpy", "torch", "model", "env", "eval_env"}
    assert a != b
    assert len(set(a.values())) == len(a)  # streams differ from each other
    assert all(0 <= v < 2**31 for v in a.values())


def test_safe_loader_never_runs_code(write_manifest, tmp_path):
    marker = tmp_path / "pwned"
    path = write_manifest(
        f'rlcrate: 1\nname: !!python/object/apply:os.system ["touch {marker}"]\n'
        "env: {backend: gymnasium, id: CartPole-v1}\n"
    )
    with pytest.raises(ManifestError, match="tag not allowed"):
        load_manifest(path)
    assert not marker.exists()


def test_relative_game_path_is_relative_to_the_manifest(tmp_path, monkeypatch):
    import shutil

    from tests.helpers import ROOT

    game = tmp_path / "exp" / "my game"
    shutil.copytree(ROOT / "runner/games/ballchase", game)
    path = tmp_path / "exp" / "m.yaml"
    path.write_text('rlcrate: 1\nname: g\nenv: {backend: godot, id: "./my game"}\n')
    monkeypatch.chdir(tmp_path)  # elsewhere: the path must not depend on the shell's folder
    m = load_manifest(path)
    assert Path(m.env.id) == game.resolve()


def test_expect_names_are_the_metrics_the_summary_computes():
    from runner.record.summary import VariantSummary
    from runner.report.summary import EXPECT_METRICS, metric_values

    variant = {
        "eval": {"mean": 1.0, "std": 0.0, "iqm": 1.0, "iqm_ci95": [1, 1], "per_seed_mean": {}},
        "train_steps_per_s": {"mean": 2.0},
        "wall_time_s": {"mean": 3.0},
    }
    values = metric_values(VariantSummary.model_validate(variant))
    assert list(values) == list(EXPECT_METRICS)
