"""A run remembers the dry constructions that passed (runner/checks/dry_cache.py) and skips them
when nothing they depend on has changed; a change to what the units import makes the next run
build again, so a cached pass never hides a problem; `validate --deep` always builds.

Which processes start is seen from inside them: a `sitecustomize` module on PYTHONPATH (Python
imports it at start-up) appends each interpreter's command line to a log when it exits.
"""

from __future__ import annotations

import os

import pytest
import yaml

from tests.helpers import ROOT, rlcrate, tiny_manifest

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]

CONSTRUCT = "checks/construct.py"  # sys.argv[0] of `python -m runner.checks.construct`

SITECUSTOMIZE = """
import atexit, os, sys
def _log():
    with open(os.environ["RLCRATE_TEST_PROCS"], "a") as f:
        f.write(" ".join(sys.argv) + "\\n")
atexit.register(_log)
"""


@pytest.fixture
def watched(tmp_path):
    """(run: args -> CompletedProcess, constructions: () -> count since the last call, path)."""
    path = tmp_path / "path"
    path.mkdir()
    (path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "procs.log"
    env = {
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(path)]),
        "RLCRATE_CACHE_DIR": str(tmp_path / "cache"),
        "RLCRATE_TEST_PROCS": str(log),
    }
    seen = [0]

    def run(*args: str, python: str | None = None):
        extra = {"RLCRATE_PYTHON_GYMNASIUM": python} if python else {}
        return rlcrate(*args, env_extra={**env, **extra}, cwd=tmp_path)

    def constructions() -> int:
        lines = log.read_text().splitlines() if log.exists() else []
        count = sum(CONSTRUCT in line for line in lines)
        new, seen[0] = count - seen[0], count
        return new

    return run, constructions, path


def test_unchanged_rerun_skips_the_construction_and_a_change_rebuilds(watched, tmp_path):
    run, constructions, path = watched
    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump(tiny_manifest(train__timesteps=128, algo__params__n_steps=32)))
    out = str(tmp_path / "runs")

    first = run("run", str(m), "--out", out)
    assert first.returncode == 0, first.stderr
    assert constructions() == 1
    assert len(list((tmp_path / "cache" / "dry").iterdir())) == 1

    # Folders change without their modules changing: a run directory made in the working folder,
    # a data folder on PYTHONPATH. Neither means building again.
    (path / "data").mkdir()
    (tmp_path / "notes.txt").write_text("tried n_steps 32\n")
    second = run("run", str(m), "--out", out)
    assert second.returncode == 0, second.stderr
    assert constructions() == 0, "an unchanged rerun built its env and model again"

    changed = run("run", str(m), "--out", out, "--set", "algo.params.n_steps=16")
    assert changed.returncode == 0, changed.stderr
    assert constructions() == 1, "a changed value must mean building again"

    deep = run("validate", str(m), "--deep")
    assert deep.returncode == 0, deep.stderr
    assert constructions() == 1, "validate --deep must build every time"

    # A package installed on the units' path, one that the checks before the construction do
    # not look at (cloudpickle, which Stable-Baselines3 imports) and that cannot be imported: the
    # next run builds again and refuses before any unit, exit 2.
    broken = path / "cloudpickle"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('a broken install')\n")
    third = run("run", str(m), "--out", out)
    assert constructions() == 1
    assert third.returncode == 2, third.stdout + third.stderr
    assert "a broken install" in third.stderr and "Traceback" not in third.stderr
    runs = sorted((tmp_path / "runs" / "tiny").iterdir())
    assert len(runs) == 3, "the refused run left a run directory"


def test_a_module_edited_in_place_on_the_path_changes_the_key(tmp_path, monkeypatch):
    """A folder on PYTHONPATH counts by its modules, so an edit that keeps the folder's own
    modification time (written in place, not renamed over) still means building again."""
    from runner.checks import dry_cache
    from runner.manifest import resolved
    from runner.manifest.load import load_unchecked

    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump(tiny_manifest()))
    variant = resolved(load_unchecked(m)).variants["default"]
    lib = tmp_path / "lib"
    (lib / "myenvs").mkdir(parents=True)
    module = lib / "myenvs" / "__init__.py"
    module.write_text("SPEED = 1\n")
    monkeypatch.syspath_prepend(str(lib))
    before = dry_cache.key(variant, dry_cache.environment(), check_device=False)
    folder = os.stat(lib / "myenvs")
    module.write_text("SPEED = 22\n")
    os.utime(lib / "myenvs", ns=(folder.st_atime_ns, folder.st_mtime_ns))
    after = dry_cache.key(variant, dry_cache.environment(), check_device=False)
    assert before is not None and after is not None and before != after
    assert (
        dry_cache.key(variant, dry_cache.environment(), check_device=False) == after
    )  # and is stable


def test_sections_no_construction_reads_keep_the_key(tmp_path):
    """A renamed copy of a manifest, another eval protocol, a tracking section or another
    training budget keep the remembered pass; anything else of env, parallel, algo or train is a
    new key."""
    from runner.checks import dry_cache
    from runner.manifest import resolved
    from runner.manifest.load import load_unchecked

    env = dry_cache.environment()

    def key_of(**over) -> str | None:
        m = tmp_path / "m.yaml"
        m.write_text(yaml.safe_dump(tiny_manifest(**over)))
        variant = resolved(load_unchecked(m)).variants["default"]
        return dry_cache.key(variant, env, check_device=False)

    base = key_of()
    assert base is not None
    track = {"mlflow": {"uri": "http://127.0.0.1:5000"}}
    assert key_of(name="copy", eval__episodes=20, track=track) == base
    budget = {"train__timesteps": 4096, "train__checkpoint_every": 256, "train__log_interval": 4}
    assert key_of(**budget) == base
    changed_ones = (
        {"train__init_from": {"run": str(tmp_path)}},  # never remembered (None)
        {"parallel__envs": 3},
        {"algo__policy": "x"},
        {"env__kwargs": {"max_episode_steps": 50}},
    )
    for changed in changed_ones:
        assert key_of(**changed) != base, changed


def test_units_in_another_python_are_remembered_by_that_pythons_path(watched, tmp_path):
    """A backend's own Python (RLCRATE_PYTHON_<BACKEND>: Isaac Lab's, a GPU environment's) is
    asked for its import path: an unchanged rerun skips the construction there too, and a
    Python that cannot tell is never remembered."""
    import sys

    run, constructions, _ = watched
    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump(tiny_manifest(train__timesteps=128, algo__params__n_steps=32)))
    other = tmp_path / "other-python"  # another path to a Python: not the runner's own
    other.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    other.chmod(0o755)
    for expected in (1, 0):
        res = run("run", str(m), "--out", str(tmp_path / "runs"), python=str(other))
        assert res.returncode == 0, res.stdout + res.stderr
        assert constructions() == expected

    from runner.checks import dry_cache

    assert dry_cache.environment(str(other)) is not None
    mute = tmp_path / "mute-python"  # answers the probe, not the question
    mute.write_text(
        f'#!/bin/sh\n[ "$2" = runner.checks.dry_cache ] && exit 1\nexec {sys.executable} "$@"\n'
    )
    mute.chmod(0o755)
    assert dry_cache.environment(str(mute)) is None
