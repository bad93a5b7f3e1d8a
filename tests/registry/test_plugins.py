"""runner/plugins.py: a trainer from another package, found by its entry point in every process
of a real run (tests/plugins/rlcrate_toys, the toy_climb trainer: no torch anywhere), and the
bad inputs around it: a trainer that is not installed, a plugin that cannot be imported."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from tests.helpers import PLUGINS, ROOT, rlcrate, run_dir_of, toy_manifest

pytestmark = pytest.mark.gymnasium

# Every Python process of the run reports, when it exits, whether it imported torch or SB3
SITE = """
import atexit, os, sys
def _report():
    with open({log!r}, "a") as f:
        f.write(" ".join([str(os.getpid()), "torch" if "torch" in sys.modules else "-",
                          "sb3" if "stable_baselines3" in sys.modules else "-", *sys.argv]) + "\\n")
atexit.register(_report)
"""


def test_a_trainer_from_an_entry_point_runs_without_torch(write_manifest, tmp_path):
    site, log = tmp_path / "site", tmp_path / "procs.log"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE.format(log=str(log)))
    m = toy_manifest(seeds=[0, 1], train__timesteps=1024, train__checkpoint_every=256)
    res = rlcrate(
        "run", str(write_manifest(m)), "--out", str(tmp_path / "runs"),
        env_extra={"PYTHONPATH": f"{site}:{ROOT}:{PLUGINS}",
                   "RLCRATE_CACHE_DIR": str(tmp_path / "cache")},  # a dry construction too
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "runs", "toy")
    for seed in (0, 1):
        unit = run / f"units/default/seed-{seed}"
        status = json.loads((unit / "status.json").read_text())
        assert status["state"] == "done" and status["timesteps_done"] == 1024
        assert sorted(p.name for p in (unit / "checkpoints").glob("*.zip")) == [
            "step-256.zip", "step-512.zip", "step-768.zip"]  # fmt: skip
        assert json.loads((unit / "eval.json").read_text())["n_episodes"] == 3
        assert list((unit / "tb").glob("events.out.tfevents.*"))
    resolved = yaml.safe_load((run / "resolved.yaml").read_text())
    assert resolved["variants"]["default"]["config"]["algo"]["trainer"] == "toy_climb"
    procs = [line.split() for line in log.read_text().splitlines()]
    kinds = {"construct": 0, "unit": 0}
    for _pid, torch, sb3, *argv in procs:
        assert (torch, sb3) == ("-", "-"), argv
        for kind in kinds:
            kinds[kind] += any(f".{kind}" in a or a.endswith(f"/{kind}.py") for a in argv)
    assert kinds == {"construct": 1, "unit": 2}, procs  # the dry construction and both units


def test_a_trainer_that_is_not_installed_is_one_line(write_manifest):
    path = write_manifest(toy_manifest(algo={"trainer": "toy_clim", "name": "climb"}))
    res = rlcrate("validate", str(path))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip()
    assert "\n" not in line and f"{path}:" in line and "algo.trainer" in line, line
    assert "did you mean 'toy_climb'?" in line and "sb3" in line, line


def _broken_package(tmp_path):
    """A package as pip installs it whose trainer module imports what nobody installed."""
    broken = tmp_path / "broken"
    (broken / "rlcrate_broken-1.0.dist-info").mkdir(parents=True)
    (broken / "rlcrate_broken-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rlcrate-broken\nVersion: 1.0\n"
    )
    (broken / "rlcrate_broken-1.0.dist-info" / "entry_points.txt").write_text(
        "[rlcrate.trainers]\nbroken_loop = rlcrate_broken.loop\n"
    )
    (broken / "rlcrate_broken").mkdir()
    (broken / "rlcrate_broken" / "__init__.py").write_text("")
    (broken / "rlcrate_broken" / "loop.py").write_text(
        textwrap.dedent("import a_module_nobody_installed  # noqa\n")
    )
    return broken


def test_a_plugin_that_cannot_be_imported_is_one_line_naming_its_package(write_manifest, tmp_path):
    broken = _broken_package(tmp_path)
    path = write_manifest(toy_manifest(algo={"trainer": "broken_loop", "name": "climb"}))
    res = rlcrate(
        "run", str(path), "--out", str(tmp_path / "runs"),
        env_extra={"PYTHONPATH": f"{ROOT}:{PLUGINS}:{broken}"},
    )  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip()
    assert "\n" not in line and "rlcrate-broken" in line and "broken_loop" in line, line
    assert "a_module_nobody_installed" in line, line
    assert not (tmp_path / "runs").exists()


def test_doctor_lists_installed_plugins_and_a_broken_one(tmp_path):
    broken = _broken_package(tmp_path)
    res = rlcrate("doctor", env_extra={"PYTHONPATH": f"{ROOT}:{PLUGINS}:{broken}"})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = {line.split("│")[1].strip(): line for line in res.stdout.splitlines() if "│" in line}
    good = rows["trainer toy_climb (rlcrate-toys)"]
    assert [c.strip() for c in good.split("│")][2:4] == ["yes", "yes"], good
    bad = next(v for k, v in rows.items() if k.startswith("trainer broken_loop"))
    assert [c.strip() for c in bad.split("│")][2:4] == ["yes", "no"] and "broken" in bad, bad


def test_a_backend_trainer_and_executor_from_packages_run_a_run_together(write_manifest, tmp_path):
    """The toy backend (an option of its own, `length`), toy_climb and the toy executor, each
    found by its package's entry point, nothing in runner/ told of any: a real run, its record
    of what ran, and `status` asking the executor that ran it."""
    executor = ROOT / "tests" / "plugins_executor"
    env = {"PYTHONPATH": f"{ROOT}:{PLUGINS}:{executor}"}
    m = toy_manifest(name="all-toys", seeds=[0, 1], parallel={"envs": 1},
                     env={"backend": "toy", "id": "line", "length": 30})  # fmt: skip
    res = rlcrate(
        "run", str(write_manifest(m)), "--out", str(tmp_path), "-x", "toy", "--toy-note", "mine",
        env_extra=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path, "all-toys")
    for seed in (0, 1):
        unit = run / f"units/default/seed-{seed}"
        assert (unit / "toy.txt").read_text() == "mine"  # the toy executor ran it
        episodes = json.loads((unit / "eval.json").read_text())["episodes"]
        assert {e["length"] for e in episodes} == {30}  # the backend's own option took effect
    config = yaml.safe_load((run / "resolved.yaml").read_text())["variants"]["default"]["config"]
    assert config["env"] == {"backend": "toy", "id": "line", "kwargs": {}, "length": 30}
    assert config["parallel"]["mode"] is None  # the toy backend has no modes
    assert json.loads((run / "provenance.json").read_text())["executor"]["name"] == "toy"
    status = rlcrate("status", str(run), env_extra=env)
    assert status.returncode == 0 and "still running" not in status.stdout, status.stdout


def test_every_backend_refuses_every_other_backends_options():
    """Each of rlcrate's own backends, with each option only another backend has: an error at
    that field naming the backends that have it, never a silent value in resolved.yaml."""
    from pydantic import ValidationError

    from runner.manifest.schema import Manifest, env_models
    from runner.plugins import OWN

    models = env_models()
    checked = 0
    for name in OWN["backend"]:
        own = set(models[name].model_fields)
        for other, model in models.items():
            for field, info in model.model_fields.items():
                if field in own:
                    continue
                value = info.get_default(call_default_factory=True)
                env = {"backend": name, "id": "x", field: value if value is not None else {}}
                with pytest.raises(ValidationError) as err:
                    Manifest.model_validate({"rlcrate": 1, "name": "m", "env": env})
                (error,) = [e for e in err.value.errors() if e["loc"] == ("env", field)]
                assert error["msg"].startswith(f"the {name} backend has no such option;")
                assert other in error["msg"]
                checked += 1
    assert checked >= 20  # pacing, speedup, timeout, atari, action_repeat, length, ...


@pytest.mark.parametrize(
    ("env", "parallel", "words"),
    [
        ({"backend": "envpool", "id": "CartPole-v1"}, {"mode": "subproc"},
         "parallel.mode: the envpool backend has no mode 'subproc' (it has none: leave it unset)"),
        ({"backend": "gymnasium", "id": "CartPole-v1"}, {"mode": "threads"},
         "parallel.mode: the gymnasium backend has no mode 'threads' (its modes: dummy, subproc)"),
        ({"backend": "envpool", "id": "CartPole-v1", "pacing": "paced"}, {},
         "env.pacing: the envpool backend has no such option; godot has"),
        ({"backend": "godot", "id": "ballchase", "pacng": "paced"}, {},
         "env.pacng: unknown key; did you mean 'pacing'?"),
    ],
)  # fmt: skip
def test_an_option_of_another_backend_is_one_line_at_its_field(
    write_manifest, env, parallel, words
):
    path = write_manifest({"rlcrate": 1, "name": "m", "env": env, "parallel": parallel})
    res = rlcrate("validate", str(path))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert words in line and line.startswith(f"error: {path}:"), line
