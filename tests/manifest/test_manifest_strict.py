"""Strict manifests: bounded parsing, one meaning per value, matrix overrides that say what runs;
and the run-directory lock. Fast: no training."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.checks.load import load_manifest
from runner.errors import ManifestError, UserInputError
from runner.manifest import expand, resolved
from runner.manifest.matrix import MAX_NAME, apply_overrides
from runner.manifest.parse import MAX_NODES, parse_yaml
from runner.record.lock import locked, runner_holds
from runner.record.process import start_ticks
from tests.helpers import tiny_manifest


def _problems(text: str) -> list[str]:
    with pytest.raises(ManifestError) as exc:
        parse_yaml(text, "m.yaml")
    return [str(p) for p in exc.value.problems]


def test_alias_chain_is_refused_before_it_expands():
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)
    )
    (line,) = _problems(text)
    assert f"{MAX_NODES:,} values" in line


def test_aliases_nested_into_depth_are_refused():
    text = "a0: &a0 " + "[" * 40 + "]" * 40 + "\n" + "a1: " + "[" * 40 + "*a0" + "]" * 40 + "\n"
    (line,) = _problems(text)
    assert "levels" in line


def test_small_aliases_and_merge_keys_still_work():
    data, lines = parse_yaml("base: &b {gamma: 0.9}\nalgo: {<<: *b, n_steps: 8}\n", "m.yaml")
    assert data["algo"] == {"gamma": 0.9, "n_steps": 8} and lines[("algo", "n_steps")] == 2


def test_duplicate_keys_at_any_depth_name_both_lines():
    (line,) = _problems("algo:\n  params:\n    gamma: 0.9\n    gamma: 0.99\n")
    assert line.startswith("m.yaml:4: algo.params.gamma: duplicate key (first on line 3)")


@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf", ".NaN"])
def test_no_nan_or_infinity_even_in_free_form_params(value):
    (line,) = _problems(f"algo:\n  params: {{learning_rate: {value}}}\n")
    assert "algo.params.learning_rate: expected a finite number" in line


def test_mapping_override_merges_and_says_so(write_manifest):
    m = tiny_manifest(matrix={"algo.params": [{"gamma": 0.9}, {"gamma": 0.99}]})
    manifest = load_manifest(write_manifest(m))
    variants = expand(manifest)
    assert [v.name for v in variants] == ["params-gamma-0.9", "params-gamma-0.99"]
    for v in variants:
        assert v.config is not None and v.config.algo.params["n_steps"] == 64  # kept
    res = resolved(manifest)
    assert all(v.override_modes == {"algo.params": "merge"} for v in res.variants.values())


def test_scalar_override_replaces():
    base = load_manifest_from(tiny_manifest())
    assert apply_overrides(base, {"parallel.envs": 4}).parallel.envs == 4


def load_manifest_from(data):
    from runner.manifest.schema import Manifest

    return Manifest.model_validate(data)


def test_a_path_and_its_parent_are_refused():
    base = load_manifest_from(tiny_manifest())
    with pytest.raises(ValueError, match="'parallel' and 'parallel.envs'"):
        apply_overrides(base, {"parallel": {"envs": 4}, "parallel.envs": 8})


def test_long_variant_names_stay_within_file_name_limits():
    words = ["a" * 80 + str(i) for i in range(3)]
    manifest = load_manifest_from(tiny_manifest(matrix={"env.kwargs.tag": words}))
    names = [v.name for v in expand(manifest)]
    assert len(set(names)) == 3 and all(len(n) <= MAX_NAME for n in names)


def test_variants_that_move_many_values_are_named_by_what_tells_them_apart():
    """Automatic names past 40 characters keep only what differs between the variants: the
    `.name` values alone when they tell them apart (the PPO-vs-SAC lists), else the leaves whose
    values differ; short names are left as they were."""
    from runner.manifest.matrix import SHORT_NAME, variant_names

    ppo = {"algo.name": "PPO", "algo.params": {"n_steps": 256, "batch_size": 64, "gamma": 0.9}}
    sac = {"algo.name": "SAC", "algo.params": {"learning_starts": 200, "batch_size": 256}}
    assert variant_names([ppo, sac]) == ["PPO", "SAC"]
    same_algo = [
        {"algo.params": {"n_steps": 128, "batch_size": 256, "n_epochs": 10, "gamma": 0.99}},
        {"algo.params": {"n_steps": 256, "batch_size": 256, "n_epochs": 10, "gamma": 0.99}},
    ]
    assert variant_names(same_algo) == ["n_steps-128", "n_steps-256"]
    short = [{"parallel.envs": 8, "algo.params.batch_size": 128},
             {"parallel.envs": 16, "algo.params.batch_size": 128}]  # fmt: skip
    assert variant_names(short) == ["envs-8_batch_size-128", "envs-16_batch_size-128"]
    assert all(
        len(n) <= SHORT_NAME for sets in ([ppo, sac], same_algo) for n in variant_names(sets)
    )


def test_a_run_named_by_an_older_rlcrate_is_the_same_run():
    """Resume and reproduce compare what ran; a variant's name (which this version may choose
    otherwise than the rlcrate that made the run) is not part of it, its order and values are."""
    m = load_manifest_from(tiny_manifest(matrix={"parallel.envs": [2, 4]}))
    here = resolved(m)
    old = here.model_copy(update={"variants": {f"old-{n}": v for n, v in here.variants.items()}})
    assert old.same_run(here) and here.same_run(old)
    swapped = dict(zip(here.variants, reversed(here.variants.values()), strict=True))
    assert not here.same_run(here.model_copy(update={"variants": swapped}))


@pytest.mark.parametrize("over", [{"seeds": [True]}, {"seeds": ["1"]}, {"train__timesteps": "9"}])
def test_one_type_per_value(over, write_manifest):
    with pytest.raises(ManifestError):
        load_manifest(write_manifest(tiny_manifest(**over)))


def test_run_directory_lock_is_exclusive_and_never_stale(tmp_path):
    code = (
        "import sys, time; from pathlib import Path; from runner.record.lock import locked\n"
        "with locked(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert runner_holds(tmp_path) is None  # no lock file: a run made elsewhere, cannot tell
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert runner_holds(tmp_path) is True  # what `status` asks, taking nothing
        with pytest.raises(UserInputError, match=f"pid {holder.pid}"), locked(tmp_path):
            pass
    finally:
        holder.kill()
        holder.wait()
    assert runner_holds(tmp_path) is False
    with locked(tmp_path), locked(tmp_path):  # free again after a kill; re-entrant in-process
        assert runner_holds(tmp_path) is True


def test_a_recorded_process_runs_only_while_that_process_does():
    """pid and start time name one process: after it ends, neither its pid (free or reused) nor
    another process's start time passes for it; another host's or namespace's cannot be told."""
    from runner.record.process import ProcessRef, still_running, this_process

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)  # fmt: skip
    here = this_process()
    ref = ProcessRef.model_validate(
        {**here.model_dump(), "pid": child.pid, "started": start_ticks(child.pid)}
    )
    assert still_running(ref) is True and still_running(here) is True
    assert ref.started is not None
    assert still_running(ref.model_copy(update={"started": ref.started + 1})) is False
    child.communicate(b"")  # it ends and is reaped
    assert still_running(ref) is False
    assert still_running(ref.model_copy(update={"host": here.host + "-elsewhere"})) is None
    assert still_running(ref.model_copy(update={"pid_ns": "pid:[1]"})) is None


def test_resource_and_budget_warnings_through_validate(write_manifest):
    from tests.helpers import rlcrate

    m = tiny_manifest(parallel={"envs": 64, "workers": 64, "mode": "subproc"}, train__timesteps=256)
    res = rlcrate("validate", str(write_manifest(m)))
    assert res.returncode == 0, res.stderr
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert any("64 env processes on" in w for w in warnings), res.stderr
    assert any("trains 4096 steps for train.timesteps = 256" in w for w in warnings), res.stderr
