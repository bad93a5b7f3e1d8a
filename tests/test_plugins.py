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
