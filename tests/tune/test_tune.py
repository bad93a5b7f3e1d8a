"""`rlcrate tune`: the `tune:` section's checks (one line, exit 2, before any trial), a real
study of PPO on CartPole (trials on paired seeds, tune.json, best.yaml, plots), and a study
stopped with Ctrl-C then resumed without running a finished trial again."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import (
    checkout_env,
    rlcrate,
    rlcrate_exe,
    run_dir_of,
    tiny_manifest,
    toy_manifest,
    wait_for,
)

SPACE = {
    "algo.params.learning_rate": {"log_uniform": [0.0001, 0.01]},
    "algo.params.gamma": {"choice": [0.9, 0.99]},
    "algo.params.n_epochs": {"int": [1, 3]},
}


def _study(**tune) -> dict:
    m = tiny_manifest(name="study", seeds=[0, 1], train__timesteps=256)
    m["tune"] = {"space": dict(SPACE), "trials": 3, "parallel": 2, **tune}
    return m


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _line_of(path: Path, text: str) -> int:
    """The line of `text` in the manifest's tune: section (or of `tune:` itself)."""
    lines = path.read_text().splitlines()
    start = lines.index("tune:")
    return next(
        n
        for n, line in enumerate(lines, 1)
        if n > start and text in line or n == start + 1 and text == "tune:"
    )


# (what is wrong, the tune: section's change, the text that marks its line, what the error says)
BAD = [
    ("unknown path", {"space": {"algo.parms.gamma": {"uniform": [0.9, 0.99]}}}, "algo.parms",
     "did you mean 'algo.params'"),
    ("fixed path", {"space": {"seeds": {"choice": [[0], [1]]}}}, "seeds:",
     "belongs to the run as a whole"),
    ("log bound", {"space": {"algo.params.learning_rate": {"log_uniform": [0.0, 0.1]}}},
     "learning_rate", "log_uniform: both bounds must be > 0"),
    ("empty choice", {"space": {"algo.params.gamma": {"choice": []}}}, "algo.params.gamma",
     "expected at least one value"),
    ("low > high", {"space": {"algo.params.n_epochs": {"int": [5, 2]}}}, "n_epochs",
     "low (5) is greater than high (2)"),
    ("two kinds", {"space": {"algo.params.gamma": {"uniform": [0.9, 0.99], "choice": [0.9]}}},
     "algo.params.gamma", "expected exactly one of choice, int, uniform, log_uniform"),
    ("sampler", {"sampler": "annealing"}, "sampler:", "'tpe', 'random', 'grid', 'qmc' or 'cmaes'"),
    ("grid of a range", {"sampler": "grid"}, "sampler:", "grid takes choice and int values only"),
    ("grid of a billion ints", {"sampler": "grid", "space": {"algo.params.n_epochs": {"int": [1,
     10**9]}}}, "sampler:", "the space's grid has 1e+09 points, more than the 100,000"),
    ("trials 0", {"trials": 0}, "trials:", "greater than or equal to 1"),
    ("trials 1001", {"trials": 1001}, "trials:", "less than or equal to 1000"),
    ("parallel 0", {"parallel": 0}, "parallel: 0", "greater than or equal to 1"),
    ("metric", {"objective": {"metric": "eval.iqm"}}, "metric:", "'eval.mean_reward'"),
    ("pruner without evaluations", {"pruner": "median"}, "pruner:",
     "median prunes on evaluations during training, and eval.every is 0"),
    ("pruner on another metric", {"pruner": "hyperband", "_eval": {"every": 128},
     "objective": {"metric": "train.steps_per_s"}}, "metric:", "must be eval.mean_reward"),
    ("unknown pruner", {"pruner": "successive"}, "pruner:", "'median', 'hyperband' or 'none'"),
    ("zoo without a sampler", {"space": "zoo", "_algo": {"name": "RecurrentPPO",
     "policy": "MlpLstmPolicy"}}, "space: zoo", "has no search space for RecurrentPPO"),
    ("zoo on a grid", {"space": "zoo", "sampler": "grid"}, "sampler:",
     "grid needs a written space"),
]  # fmt: skip


@pytest.mark.parametrize(("tune", "marker", "says"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_tune_section_is_one_line_before_any_trial(tmp_path, tune, marker, says):
    m = _study()
    tune = dict(tune)
    m["eval"].update(tune.pop("_eval", {}))
    m["algo"].update(tune.pop("_algo", {}))
    m["tune"].update(tune)
    path = _write(tmp_path, m)
    res = rlcrate("tune", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"error: {path}:{_line_of(path, marker)}: tune."), lines[0]
    assert says in lines[0], lines[0]
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists(), "a run directory was made for a refused study"


def test_tune_together_with_a_matrix_says_use_one(tmp_path):
    m = _study()
    m["matrix"] = {"algo.params.n_epochs": [1, 2]}
    path = _write(tmp_path, m)
    res = rlcrate("validate", str(path))
    assert res.returncode == 2
    assert f"{path}:{_line_of(path, 'tune:')}: tune: not together with matrix" in res.stderr
    assert "use one or the other" in res.stderr


def test_evaluations_during_training_are_checked(tmp_path):
    """eval.every past the budget, and on a trainer that evaluates only at the end."""
    path = _write(tmp_path, tiny_manifest(eval__every=1024))
    res = rlcrate("validate", str(path))
    assert res.returncode == 2
    assert "eval.every: every 1024 steps is more than train.timesteps (512)" in res.stderr
    path = _write(tmp_path, toy_manifest(eval__every=128))
    res = rlcrate("validate", str(path))
    assert res.returncode == 2
    assert "eval.every: the toy_climb trainer evaluates only at the end of training" in res.stderr


def test_a_pruner_is_refused_on_an_executor_that_returns_files_at_the_end(tmp_path):
    m = _study(pruner="median")
    m["eval"]["every"] = 128
    args = ["--out", str(tmp_path / "runs"), "-x", "ray", "--ray-address", "127.0.0.1:9"]
    res = rlcrate("tune", str(_write(tmp_path, m)), *args)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [
        "error: tune.pruner: median reads each unit's evaluations while it trains, and the ray "
        "executor brings a unit's files back when it ends; use pruner: none with it, or another "
        "executor"
    ]
    assert not (tmp_path / "runs").exists()


def test_tune_without_a_tune_section_is_refused(tmp_path):
    path = _write(tmp_path, tiny_manifest())
    res = rlcrate("tune", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2
    assert "has no tune: section" in res.stderr and "Traceback" not in res.stderr


def test_an_int_range_of_a_billion_values_is_counted_not_listed(tmp_path):
    """A huge int range is counted, never listed (every sampler once listed it: a MemoryError)."""
    import resource

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    m = _study(sampler="tpe")
    m["tune"]["space"] = {  # a billion values, and a bound past any C integer
        "algo.params.n_epochs": {"int": [1, 10**9]},
        "algo.params.n_steps": {"int": [64, 10**40]},
    }
    res = rlcrate("validate", str(_write(tmp_path, m)), preexec_fn=capped)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "a study of up to 3 trial(s)" in res.stdout


def test_a_good_tune_section_validates_as_a_study(tmp_path):
    m = _study(sampler="random", objective={"stat": "min", "direction": "minimize"})
    m["tune"]["space"]["algo.params.n_steps"] = {"int": [32, 128], "step": 32}
    path = _write(tmp_path, m)
    res = rlcrate("validate", str(path), "--set", "tune.trials=7")
    assert res.returncode == 0, res.stderr
    assert f"{path}: ok (a study of up to 7 trial(s) x 2 seed(s) = 14 units" in res.stdout


@pytest.mark.gymnasium
def test_a_study_with_no_complete_trial_exits_1(tmp_path):
    m = _study(sampler="grid", trials=3)
    m["tune"]["space"] = {"train.timesteps": {"choice": [-5]}}
    res = rlcrate("tune", str(_write(tmp_path, m)), "--out", str(tmp_path / "runs"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "no trial of the study completed" in res.stderr
    (trial,) = _trials(run_dir_of(tmp_path / "runs", "study"))  # the grid has one point
    assert trial["state"] == "failed" and trial["objective"] is None
    assert "its values make no valid manifest: train.timesteps:" in trial["error"]


def test_resume_of_a_folder_that_holds_no_study_is_refused(tmp_path):
    path = _write(tmp_path, _study())
    (tmp_path / "elsewhere").mkdir()
    res = rlcrate("tune", str(path), "--resume", str(tmp_path / "elsewhere"))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"error: --resume {tmp_path / 'elsewhere'}: not a study's run (no study.journal)"
    ]


def _trials(run: Path) -> list[dict]:
    return json.loads((run / "tune.json").read_text())["trials"]


def _unit_status(run: Path, variant: str, seed: int) -> dict:
    return json.loads((run / "units" / variant / f"seed-{seed}" / "status.json").read_text())


def _intermediate(run: Path, variant: str, seeds: tuple[int, ...]) -> dict[str, Any]:
    """The IQM over the seeds of each step every seed evaluated during training (evals.json),
    each as pytest.approx."""
    from scipy.stats import trim_mean

    means = [
        {
            e["step"]: sum(e["returns"]) / len(e["returns"])
            for e in json.loads(f.read_text())["evaluations"]
        }
        for f in (run / "units" / variant / f"seed-{s}" / "evals.json" for s in seeds)
    ]
    steps = sorted(set.intersection(*(set(m) for m in means)))
    return {str(k): pytest.approx(trim_mean([m[k] for m in means], 0.25)) for k in steps}


@pytest.mark.slow(reason="3 trials x 2 seeds of PPO on CartPole, one pruned; the best rerun")
@pytest.mark.gymnasium
def test_a_study_judges_every_trial_on_the_same_seeds_and_prunes(tmp_path):
    from scipy.stats import trim_mean

    m = _study(parallel=1, pruner={"name": "median", "startup_trials": 1})
    m["train"]["timesteps"] = 1024
    m["eval"].update(every=256, every_episodes=2)
    path = _write(tmp_path, m)
    # --seeds as `run` takes it: every trial on seeds 3 and 5, the sampler seeded with 3
    res = rlcrate("tune", str(path), "--out", str(tmp_path / "runs"), "--seeds", "3,5")
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "runs", "study")
    record = json.loads((run / "tune.json").read_text())
    assert record["study"]["sampler"] == "tpe" and record["study"]["sampler_seed"] == 3
    assert record["study"]["pruner"] == "median"
    assert record["study"]["replays"].startswith("exact: a seeded sampler")
    trials = record["trials"]
    assert [t["number"] for t in trials] == [0, 1, 2]
    # the median of trial-000 (the one trial that ran to its end before it) prunes trial-001
    # at its first evaluation (deterministic on this CPU: the same values every run)
    assert [t["state"] for t in trials] == ["complete", "pruned", "complete"], res.stdout
    summary = json.loads((run / "summary.json").read_text())
    for t in trials:
        assert t["variant"] == f"trial-{t['number']:03d}"
        assert set(t["params"]) == set(SPACE)
        assert 0.0001 <= t["params"]["algo.params.learning_rate"] <= 0.01
        assert t["params"]["algo.params.gamma"] in (0.9, 0.99)
        assert list(t["per_seed"]) == ["3", "5"]  # paired: every trial on the same seeds
        # what the pruner was told: the IQM over the seeds at each step both evaluated
        evaluated = _intermediate(run, t["variant"], (3, 5))
        assert t["intermediate"] == {k: evaluated[k] for k in t["intermediate"]}
        for seed in (3, 5):
            assert _unit_status(run, t["variant"], seed)["state"] == "done"
        assert t["objective"] == pytest.approx(trim_mean(list(t["per_seed"].values()), 0.25))
    for t in (trials[0], trials[2]):  # complete: every evaluation, judged on the final eval
        assert list(t["intermediate"]) == ["256", "512", "768", "1024"]
        assert t["per_seed"] == summary["variants"][t["variant"]]["eval"]["per_seed_mean"]
    pruned = trials[1]
    assert pruned["pruned_at"] == 256 and list(pruned["intermediate"]) == ["256"]
    assert pruned["objective"] == pruned["intermediate"]["256"]
    for seed in (3, 5):  # its units were asked to stop (a unit may end before it looks:
        # 1024 steps train in about a second here; test_a_unit_stops_at_a_prune_request)
        status = _unit_status(run, pruned["variant"], seed)
        assert status["timesteps_done"] == (status["pruned_at"] or 1024)
        assert (run / "units" / pruned["variant"] / f"seed-{seed}" / "prune.json").is_file()
    assert "trial-001: pruned at step 256" in res.stdout
    best = max((trials[0], trials[2]), key=lambda t: t["objective"])
    assert record["best"] == best["number"]
    resolved = yaml.safe_load((run / "resolved.yaml").read_text())
    assert resolved["tune"]["space"] == SPACE and resolved["tune"]["sampler"] == "tpe"
    assert sorted(resolved["variants"]) == ["trial-000", "trial-001", "trial-002"]
    assert (
        resolved["variants"]["trial-001"]["config"]["algo"]["params"]["n_epochs"]
        == (trials[1]["params"]["algo.params.n_epochs"])
    )
    assert (run / "study.journal").stat().st_size > 0
    text = (run / "best.yaml").read_text()
    assert text.startswith("# The best trial of the study") and best["variant"] in text
    data = yaml.safe_load(text)
    assert "tune" not in data and data["seeds"] == [3, 5]  # what the study ran
    assert data["algo"]["params"]["learning_rate"] == best["params"]["algo.params.learning_rate"]
    assert data["algo"]["params"]["gamma"] == best["params"]["algo.params.gamma"]
    checked = rlcrate("validate", str(run / "best.yaml"))
    assert checked.returncode == 0, checked.stderr
    for name in ("tune-history.png", "tune-parallel.png"):  # importances: 3 complete trials
        assert (run / "plots" / name).read_bytes()[:4] == b"\x89PNG", name
    report = (run / "report.md").read_text()
    assert "## Study" in report and f"| {best['variant']} (best) |" in report
    assert "| pruned at step 256 |" in report and "95% CI" in report
    assert "![optimisation history](plots/tune-history.png)" in report
    # the evaluations during training are in TensorBoard too, at the steps they were due
    from runner.report.tb import read_curve

    curve, problem = read_curve(
        run / "units" / best["variant"] / "seed-3" / "tb", None, "eval/mean_reward"
    )
    assert problem is None and curve is not None
    assert curve.steps.tolist() == [256, 512, 768, 1024]

    # archived and reproduced: the best trial rerun on the archived seeds, not the search
    archive = tmp_path / "study.tar.gz"
    assert rlcrate("archive", str(run), "-o", str(archive)).returncode == 0
    again = rlcrate("reproduce", str(archive), "--out", str(tmp_path / "again"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        f"study: rerunning {best['variant']}, the best of its 2 complete trial(s)" in again.stdout
    )
    assert "verdict: identical (2 unit(s) rerun" in again.stdout
    rerun = run_dir_of(tmp_path / "again", "study")
    assert sorted(p.name for p in (rerun / "units").iterdir()) == [best["variant"]]
    assert json.loads((rerun / "reproduce.json").read_text())["trials"] == [best["variant"]]


@pytest.mark.slow(reason="trains PPO on CartPole until a prune request stops it")
@pytest.mark.gymnasium
def test_a_unit_stops_at_a_prune_request(tmp_path):
    """What the study's pruner does to a unit, through the run directory: the unit evaluates
    every eval.every steps, and a prune request ends its training (done, `pruned_at`)."""
    from runner.record.evals import request_prune

    m = tiny_manifest(train__timesteps=1_000_000, eval__every=128, eval__every_episodes=1)
    path = _write(tmp_path, m)
    proc = subprocess.Popen(
        [rlcrate_exe(), "run", str(path), "--out", str(tmp_path / "runs"), "--no-report"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=checkout_env(),
    )
    evals = tmp_path / "runs" / "tiny"
    wait_for(lambda: any(evals.glob("*/units/default/seed-0/evals.json")), 60, "an evaluation")
    unit = next(evals.glob("*/units/default/seed-0"))
    request_prune(unit, 128, "asked by the test")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["eval_mean"] is not None
    assert 128 <= status["pruned_at"] == status["timesteps_done"] < 1_000_000
    steps = [e["step"] for e in json.loads((unit / "evals.json").read_text())["evaluations"]]
    assert steps == list(range(128, steps[-1] + 1, 128)) and steps[-1] <= status["pruned_at"]


ZOO_PPO = {  # rl-zoo3's PPO sampler: what it suggests, as manifest values
    "algo.params.n_steps": [2**k for k in range(5, 13)],
    "algo.params.batch_size": [2**k for k in range(2, 11)],
    "algo.params.clip_range": [0.1, 0.2, 0.3, 0.4],
    "algo.params.n_epochs": [1, 5, 10, 20],
    "algo.params.policy_kwargs.activation_fn": ["Tanh", "ReLU"],
    "algo.params.policy_kwargs.net_arch": [{"pi": [64], "vf": [64]},
                                           {"pi": [64, 64], "vf": [64, 64]},
                                           {"pi": [256, 256], "vf": [256, 256]}],
}  # fmt: skip


@pytest.mark.slow(reason="trains one trial of PPO on CartPole from rl-zoo3's search space")
@pytest.mark.gymnasium
def test_space_zoo_samples_rl_zoo3s_own_ppo_space(tmp_path):
    m = tiny_manifest(name="zoo", train__timesteps=256)
    m["tune"] = {"space": "zoo", "trials": 1}
    res = rlcrate("tune", str(_write(tmp_path, m)), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "runs", "zoo")
    (trial,) = _trials(run)
    assert trial["state"] == "complete", trial
    params = trial["params"]
    for path, values in ZOO_PPO.items():
        assert params[path] in values, path
    assert 0.97 <= params["algo.params.gamma"] <= 0.9999
    assert 0.9 <= params["algo.params.gae_lambda"] <= 0.9999
    assert 1e-5 <= params["algo.params.learning_rate"] <= 0.002
    assert 0.3 <= params["algo.params.max_grad_norm"] <= 2
    config = yaml.safe_load((run / "resolved.yaml").read_text())["variants"]["trial-000"]["config"]
    assert config["algo"]["params"]["n_steps"] == params["algo.params.n_steps"]
    kwargs = config["algo"]["params"]["policy_kwargs"]
    assert kwargs["activation_fn"] == params["algo.params.policy_kwargs.activation_fn"]
    # Optuna holds rl-zoo3's own parameters (the exponents, 1 - gamma): the search is its
    journal = (run / "study.journal").read_text()
    assert '"n_steps_pow"' in journal and '"one_minus_gamma"' in journal


@pytest.mark.slow(reason="trains one trial x 2 seeds of PPO (the other fails before training)")
@pytest.mark.gymnasium
def test_a_failed_trial_is_recorded_and_the_study_goes_on(tmp_path):
    m = _study(sampler="grid", trials=5, parallel=2)
    m["tune"]["space"] = {"train.timesteps": {"choice": [256, -5]}}
    res = rlcrate("tune", str(_write(tmp_path, m)), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "runs", "study")
    by_value = {t["params"]["train.timesteps"]: t for t in _trials(run)}
    assert sorted(by_value) == [-5, 256]  # trials capped at the grid's size
    failed, done = by_value[-5], by_value[256]
    assert failed["state"] == "failed" and "train.timesteps" in failed["error"]
    assert not (run / "units" / failed["variant"]).exists(), "a refused trial ran units"
    assert done["state"] == "complete" and list(done["per_seed"]) == ["0", "1"]
    assert yaml.safe_load((run / "best.yaml").read_text())["train"]["timesteps"] == 256


@pytest.mark.slow(reason="trains 3 trials x 2 seeds of PPO, stopped with Ctrl-C and resumed")
@pytest.mark.gymnasium
def test_a_stopped_study_resumes_without_running_a_finished_trial(tmp_path):
    path = _write(tmp_path, _study(parallel=1, trials=3))
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [rlcrate_exe(), "tune", str(path), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=checkout_env(),
    )

    def second_trial_running() -> bool:
        units = list(out.glob("study/*/units/trial-001/seed-*/status.json"))
        return any(json.loads(u.read_text() or "{}").get("state") == "running" for u in units)

    wait_for(second_trial_running, 120, "the second trial's units to start")
    run = run_dir_of(out, "study")
    proc.send_signal(signal.SIGINT)
    shown, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"rlcrate tune {run / 'manifest.yaml'} --resume {run}" in shown
    stopped = _trials(run)
    assert [(t["number"], t["state"]) for t in stopped] == [(0, "complete"), (1, "running")]
    first = {s: _unit_status(run, "trial-000", s) for s in (0, 1)}
    time.sleep(0.05)
    res = rlcrate("tune", str(run / "manifest.yaml"), "--resume", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "trial-001: cut mid-way before; it runs again" in res.stdout
    resumed = _trials(run)
    assert [(t["number"], t["state"]) for t in resumed] == [(n, "complete") for n in (0, 1, 2)]
    assert resumed[0] == stopped[0], "a finished trial changed"
    assert resumed[1]["params"] == stopped[1]["params"], "the cut trial ran other values"
    for seed in (0, 1):  # the finished trial's units were not run again
        assert _unit_status(run, "trial-000", seed) == first[seed]
        assert _unit_status(run, "trial-001", seed)["state"] == "done"
    assert not (run / "units" / "trial-003").exists()
    assert (run / "best.yaml").is_file()
