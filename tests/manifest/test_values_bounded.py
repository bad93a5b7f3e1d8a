"""Manifest values from every source (the file, `--set`, `--seeds`, `--num-seeds`, the installed
rl-zoo3's files) go through the same bounded loader and the same checks: alias bombs, deep
nesting and absurd seed counts are one short line within seconds, schedules stay in their
parameter's range, a `--set` the matrix would override is refused. Through the console script."""

from __future__ import annotations

import importlib.util
import json
import re
import resource
import time
from typing import Any

import pytest
import yaml

from tests.helpers import ROOT, rlcrate, run_dir_of, tiny_manifest, toy_manifest

MEMORY = 4 << 30  # address space each refusal may use: the unbounded ones grew past this
LONGEST = 300  # characters in an error line (the unbounded 6-level bomb printed 1.9 MB)


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _one_line(out, *words: str) -> str:
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    echoed = re.sub(
        r"/tmp/pytest-of-[^/]+/pytest-\d+/(popen-gw\d+/)?[^/]+/", "", lines[0]
    )  # the test's own folders do not count
    assert len(echoed) <= LONGEST, lines[0][:LONGEST]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _line_of(path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def _alias_bomb(levels: int) -> str:
    """A flow mapping of `levels` anchors, each a list of nine aliases of the last: 9**levels."""
    parts = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    parts += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "{" + ", ".join(parts) + "}"


# ---------------------------------------------------------------- schedules and rates

RANGE_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "lr_schedule_negative_end": (
        {"learning_rate": {"schedule": "linear", "start": 0.001, "end": -1.0}},
        "'learning_rate' must stay 0 or more; the schedule reaches -1.0",
    ),
    "lr_negative": ({"learning_rate": -0.001}, "'learning_rate' must stay 0 or more; got -0.001"),
    "clip_lin_negative": ({"clip_range": "lin_-0.2"}, "'clip_range' must stay 0 or more"),
    "clip_vf_schedule": (
        {"clip_range_vf": {"schedule": "linear", "start": -0.1, "end": 0.1}},
        "the schedule reaches -0.1",
    ),
    "gamma_above_one": ({"gamma": 1.5}, "'gamma' must stay from 0 to 1; got 1.5"),
    "gae_lambda_negative": ({"gae_lambda": -0.5}, "'gae_lambda' must stay from 0 to 1"),
}


@pytest.mark.parametrize("case", RANGE_CASES)
def test_schedule_or_rate_outside_its_range_refused_at_its_line(write_manifest, case):
    params, words = RANGE_CASES[case]
    m = tiny_manifest()
    m["algo"]["params"].update(params)
    path = write_manifest(m)
    (key,) = params
    line = _one_line(rlcrate("validate", str(path)), words)
    assert line.startswith(f"error: {path}:{_line_of(path, key + ':')}: algo.params.{key}: "), line


def test_exploration_rates_of_dqn_stay_in_zero_one(write_manifest):
    m = tiny_manifest(algo={"name": "DQN", "params": {"exploration_final_eps": 1.2}})
    _one_line(
        rlcrate("validate", str(write_manifest(m))),
        "algo.params.exploration_final_eps: 'exploration_final_eps' must stay from 0 to 1",
    )


def test_schedules_within_range_still_validate(write_manifest):
    m = tiny_manifest()
    m["algo"]["params"].update(
        learning_rate="lin_0.001",
        clip_range={"schedule": "linear", "start": 0.2, "end": 0.0},
        gamma=1.0,
    )
    out = rlcrate("validate", str(write_manifest(m)))
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------- --set as the file


FILE = """\
rlcrate: 1
name: tiny
env:
  backend: gymnasium
  id: CartPole-v1
  kwargs: {kwargs}
algo:
  params: {params}
"""


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("algo.params.gamma", ".inf", "expected a finite number, got '.inf'"),
        ("algo.params.gamma", ".nan", "expected a finite number, got '.nan'"),
        ("env.kwargs", "{a: 1, a: 2}", "duplicate key (first on line"),
    ],
)
def test_set_value_refused_exactly_as_the_same_value_in_the_file(write_manifest, key, value, words):
    if key == "env.kwargs":
        path = write_manifest(FILE.format(kwargs=value, params="{}"))
        where = f"error: {path}:6: env.kwargs.a: "
    else:
        path = write_manifest(FILE.format(kwargs="{}", params=f"{{gamma: {value}}}"))
        where = f"error: {path}:8: algo.params.gamma: "
    _one_line(rlcrate("validate", str(path)), where, words)
    plain = write_manifest(FILE.format(kwargs="{}", params="{}"), "plain.yaml")
    assert rlcrate("validate", str(plain)).returncode == 0
    by_set = _one_line(rlcrate("validate", str(plain), "-s", f"{key}={value}"), words)
    assert by_set.startswith(f"error: --set {key}={value}: "), by_set


# ---------------------------------------------------------------- --set under the matrix


@pytest.mark.parametrize(
    ("matrix", "sets", "entry"),
    [
        (
            {"algo.params.learning_rate": [0.001, 0.0003]},
            "algo.params.learning_rate=0.1",
            "matrix.algo.params.learning_rate",
        ),
        (
            {"algo.params.learning_rate": [0.001]},
            "algo.params={learning_rate: 0.1}",
            "matrix.algo.params.learning_rate",
        ),
        (
            {"env.kwargs": [{"max_episode_steps": 50}]},
            "env.kwargs.max_episode_steps=9",
            "matrix.env.kwargs",
        ),
        ([{"parallel.envs": 4}, {"algo.params.n_epochs": 1}], "parallel.envs=2", "matrix[0]"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_set_of_a_value_the_matrix_varies_refused_naming_the_entry(
    write_manifest, tmp_path, command, matrix, sets, entry
):
    path = write_manifest(tiny_manifest(matrix=matrix))
    out_dir = tmp_path / "runs"
    extra = ["--out", str(out_dir)] if command == "run" else []
    out = rlcrate(command, str(path), "-s", sets, *extra)
    _one_line(out, f"error: --set {sets}: the matrix varies", f"change {entry} instead")
    assert not out_dir.exists()


def test_set_beside_the_matrix_and_of_the_matrix_itself_still_apply(write_manifest):
    path = write_manifest(tiny_manifest(matrix={"algo.params.learning_rate": [0.001, 0.0003]}))
    sets = ["-s", "algo.params.n_epochs=1", "-s", "matrix.algo.params.learning_rate=[0.1]"]
    sets += ["-s", "algo.params={n_steps: 64, batch_size: 64}"]
    out = rlcrate("validate", str(path), *sets)
    assert out.returncode == 0, out.stderr
    assert "1 variant(s) x 1 seed(s)" in out.stdout


def test_set_of_a_key_a_merged_matrix_mapping_keeps_applies_to_every_variant():
    """A matrix mapping merges into the mapping there (`algo.params: {n_steps: ...}` keeps the
    other params), so a --set of a key none of its entries holds reaches every variant (the
    PPO-vs-SAC manifests with `-s algo.params.ent_coef=1e-3`); one an entry holds is refused."""
    from runner.manifest.overrides import build, matrix_problems

    data = tiny_manifest(matrix=[{"algo.params": {"n_steps": 64}}, {"algo.params": {"gamma": 0.9}}])
    assert matrix_problems(data, build(["algo.params.ent_coef=1e-3"])) == []
    (problem,) = matrix_problems(data, build(["algo.params.gamma=0.5"]))
    assert "the matrix varies algo.params (matrix[1])" in problem.message
    crossed = tiny_manifest(matrix={"algo.params": [{"gamma": 0.9}, {"gamma": 0.99}]})
    assert matrix_problems(crossed, build(["algo.params.n_epochs=1"])) == []
    assert matrix_problems(crossed, build(["algo.params.gamma=0.5"]))


# ---------------------------------------------------------------- bounded, one line

BOMBS = {
    "alias_bomb_6_levels": ["-s", f"env.kwargs={_alias_bomb(6)}"],
    "alias_bomb_9_levels": ["-s", f"env.kwargs={_alias_bomb(9)}"],
    "nested_20000_deep": ["-s", "env.kwargs=" + "[" * 20_000 + "]" * 20_000],
    "num_seeds_1e8": ["--num-seeds", "100000000"],
    "num_seeds_1e12": ["--num-seeds", "999999999999"],
    "seed_range_1e8": ["--seeds", "0-99999999"],
    "seed_1e12": ["--seeds", "999999999999"],
}
BOMB_WORDS = {
    "alias_bomb_6_levels": "expands to more than 100,000 values",
    "alias_bomb_9_levels": "expands to more than 100,000 values",
    "nested_20000_deep": "nested more than 50 levels deep",
    "num_seeds_1e8": "--num-seeds: expected a count of seeds from 1 to 10,000",
    "num_seeds_1e12": "--num-seeds: expected a count of seeds from 1 to 10,000",
    "seed_range_1e8": "--seeds: more than 10,000 seeds",
    "seed_1e12": "--seeds: seed 999999999999 is above the largest seed",
}


@pytest.mark.parametrize("case", BOMBS)
def test_bombs_refused_in_one_short_line_within_seconds(write_manifest, case):
    path = write_manifest(tiny_manifest())
    start = time.monotonic()
    out = rlcrate("validate", str(path), *BOMBS[case], timeout=120, preexec_fn=_capped)
    _one_line(out, BOMB_WORDS[case])
    assert time.monotonic() - start < 30  # unbounded: over a minute (or a MemoryError)


def test_seed_bound_of_the_file_is_the_bound_of_the_command_line(write_manifest):
    m = tiny_manifest(seeds=list(range(10_001)))
    _one_line(rlcrate("validate", str(write_manifest(m))), "seeds: at most 10,000 seeds")
    m = tiny_manifest(seeds=[2**32])
    _one_line(rlcrate("validate", str(write_manifest(m))), "seeds: a seed is at most 4,294,967,295")


# ---------------------------------------------------------------- algo.defaults


def test_defaults_as_a_list_is_one_line_at_its_field(write_manifest):
    path = write_manifest(tiny_manifest(algo__defaults=["zoo"]))
    line = _one_line(
        rlcrate("validate", str(path)), "algo.defaults: Input should be 'zoo' or 'task'"
    )
    assert "TypeError" not in line


TAMPERED = {
    "python_tag": (
        "CartPole-v1:\n  n_envs: !!python/object/apply:os.system ['touch {flag}']\n",
        "tag not allowed",
    ),
    "alias_bomb": (f"CartPole-v1: {_alias_bomb(9)}\n", "expands to more than 100,000 values"),
}


@pytest.mark.skipif(importlib.util.find_spec("rl_zoo3") is None, reason="rl-zoo3 not installed")
@pytest.mark.parametrize("case", TAMPERED)
def test_tampered_zoo_file_is_one_line_naming_it(write_manifest, tmp_path, case):
    text, words = TAMPERED[case]
    flag = tmp_path / "ran"
    zoo = tmp_path / "site" / "rl_zoo3"  # found before the installed one
    (zoo / "hyperparams").mkdir(parents=True)
    (zoo / "__init__.py").write_text("")
    (zoo / "hyperparams" / "ppo.yml").write_text(text.replace("{flag}", str(flag)))
    m = tiny_manifest(algo={"name": "PPO", "defaults": "zoo"})
    start = time.monotonic()
    out = rlcrate(
        "validate",
        str(write_manifest(m)),
        env_extra={"PYTHONPATH": f"{ROOT}:{tmp_path / 'site'}"},
        preexec_fn=_capped,
    )
    _one_line(
        out, "algo.defaults: the installed rl-zoo3's file", f"{zoo}/hyperparams/ppo.yml", words
    )
    assert time.monotonic() - start < 30 and not flag.exists()


@pytest.mark.skipif(importlib.util.find_spec("rl_zoo3") is None, reason="rl-zoo3 not installed")
@pytest.mark.parametrize(
    ("chain", "says"),
    [(9_000, "is nested too deeply for a value rlcrate reads"),
     (20_000, "is 20,001 characters, more than an rl-zoo3 value has")],
    ids=["unary chain", "long text"],
)  # fmt: skip
def test_a_zoo_expression_past_the_parser_is_one_line(write_manifest, tmp_path, chain, says):
    """A long unary chain (or a long text) in a zoo table's policy_kwargs, which ast.parse would
    meet with a MemoryError, is one line naming the zoo file and its entry."""
    zoo = tmp_path / "site" / "rl_zoo3"  # found before the installed one
    (zoo / "hyperparams").mkdir(parents=True)
    (zoo / "__init__.py").write_text("")
    entry = f'CartPole-v1:\n  policy_kwargs: "{"-" * chain}1"\n'
    (zoo / "hyperparams" / "ppo.yml").write_text(entry)
    m = tiny_manifest(algo={"name": "PPO", "defaults": "zoo"})
    out = rlcrate(
        "validate",
        str(write_manifest(m)),
        env_extra={"PYTHONPATH": f"{ROOT}:{tmp_path / 'site'}"},
        preexec_fn=_capped,
    )
    _one_line(out, "algo.defaults: rl-zoo3", "ppo.yml CartPole-v1", says)


# ------------------------------------------------------------ --seeds names seeds

NOT_SEEDS = {
    "-1": "'-1' is not a seed; write seeds as 0, 0,2 or 0-4, or --num-seeds N",
    "2-1": "'2-1' counts down; write 1-2",
    "a": "'a' is not a seed; write seeds as 0, 0,2 or 0-4",
    "": "expected at least one seed, got ''",
    ",": "expected at least one seed, got ','",
    "0-": "'0-' is not a seed",
}


@pytest.mark.parametrize("text", NOT_SEEDS)
@pytest.mark.parametrize("command", ["validate", "run", "train", "bench"])
def test_not_seeds_one_line_exit_2_nothing_made(write_manifest, tmp_path, command, text):
    out_dir = tmp_path / "runs"
    extra = [] if command == "validate" else ["--out", str(out_dir)]
    out = rlcrate(command, str(write_manifest(tiny_manifest())), "--seeds", text, *extra)
    _one_line(out, f"--seeds: {NOT_SEEDS[text]}")
    assert not out_dir.exists()


@pytest.mark.parametrize(
    ("args", "units"),
    [
        (["--seeds", "5"], 1),  # seed 5, no longer a count
        (["--seeds", "0,2"], 2),
        (["--seeds", "0-4"], 5),
        (["--seeds", "0-2,7,"], 4),
        (["--num-seeds", "3"], 3),
    ],
)
def test_seeds_forms_validate(write_manifest, args, units):
    out = rlcrate("validate", str(write_manifest(tiny_manifest())), *args)
    assert out.returncode == 0, out.stderr
    assert f"1 variant(s) x {units} seed(s) = {units} units" in out.stdout


def test_seeds_and_num_seeds_together_refused(write_manifest):
    path = write_manifest(tiny_manifest())
    out = rlcrate("validate", str(path), "--seeds", "1", "--num-seeds", "2")
    _one_line(out, "--seeds and --num-seeds: give one of them, not both")


@pytest.mark.gymnasium
def test_a_bare_seed_runs_that_seed_and_is_recorded_as_a_list(write_manifest, tmp_path):
    path = write_manifest(toy_manifest(name="tiny", train__timesteps=128))  # seeds, not training
    out = rlcrate(
        "run", str(path), "--jobs", "train", "--out", str(tmp_path / "runs"), "--seeds", "3"
    )
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    res = yaml.safe_load((run / "resolved.yaml").read_text())
    assert res["seeds"] == [3] and res["command_line"]["seeds"] == [3]
    assert [p.name for p in (run / "units").glob("*/seed-*")] == ["seed-3"]


@pytest.mark.gymnasium
def test_a_run_recorded_with_the_old_count_form_resumes_as_it_was_made(write_manifest, tmp_path):
    path = write_manifest(toy_manifest(name="tiny", train__timesteps=128))  # seeds, not training
    out = rlcrate("run", str(path), "-j", "train", "-o", str(tmp_path / "runs"), "--num-seeds", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    res = yaml.safe_load((run / "resolved.yaml").read_text())
    assert res["seeds"] == [0, 1] and res["command_line"]["seeds"] == [0, 1]
    res["command_line"]["seeds"] = "2"  # as the old `--seeds 2` (a count) recorded it
    (run / "resolved.yaml").write_text(yaml.safe_dump(res, sort_keys=False))
    prov = json.loads((run / "provenance.json").read_text())
    del prov["started_with"]  # that rlcrate recorded no hashes of what a run started with
    (run / "provenance.json").write_text(json.dumps(prov))
    again = rlcrate("run", str(run / "manifest.yaml"), "-j", "train", "--resume", str(run))
    assert again.returncode == 0, again.stdout + again.stderr
