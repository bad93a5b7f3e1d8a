"""The plugin registries and contracts, tested over every plugin with the public checker
(`rlcrate plugin check`, runner/cli/plugin_check.py): rlcrate's own backends, trainers and
executors pass exactly what a plugin author's must."""

from __future__ import annotations

import inspect
import os

import pytest

from runner import plugins
from runner.backends import get_backend, names
from runner.backends.base import Backend
from runner.cli.plugin_check import (
    FAILED,
    SKIPPED,
    backend_rows,
    executor_rows,
    failures,
    trainer_rows,
)
from runner.errors import FieldError, UserInputError

HOOKS = [n for n, v in vars(Backend).items() if inspect.isfunction(v) and not n.startswith("_")]
# Making envs starts processes for these (seconds), so that part of the conformance is slow.
SLOW_TO_MAKE = {"godot"}


def _passes(rows: list[tuple[str, str, str]]) -> None:
    assert not failures(rows), failures(rows)


def test_unknown_backend_is_one_line_with_a_suggestion():
    with pytest.raises(UserInputError, match="no backend named 'envpol' is installed; did you"):
        get_backend("envpol")


def test_rlcrate_declares_its_own_plugins_as_entry_points():
    """pyproject.toml's entry points are the registry's own table (runner.plugins.OWN), which a
    source tree that pip has not installed reads instead."""
    import tomllib

    from tests.helpers import ROOT

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for kind, group in plugins.GROUPS.items():
        assert declared[group] == plugins.OWN[kind], kind


def _hooks(cls: type) -> set[str]:
    return {n for n, v in vars(cls).items() if inspect.isfunction(v) and not n.startswith("_")}


def test_the_contract_names_every_hook():
    """A core every backend has (four hooks it must write, the rest with working defaults), and
    the optional abilities a backend declares by deriving from them, each its own small class."""
    from runner.backends import abilities

    assert set(HOOKS) == {
        "available", "env_ids", "check_env", "make_env", "make_vec_env", "require_env", "spaces",
        "action_kind", "check_parallel", "versions", "processes", "nondeterminism", "env_files",
        "doctor_rows", "interpreter", "package_file", "episode_limit", "smallest_layout",
        "id_notes",
    }  # fmt: skip
    abstract = {n for n in HOOKS if getattr(getattr(Backend, n), "__isabstractmethod__", False)}
    assert abstract == {"available", "env_ids", "check_env", "make_vec_env"}
    assert {c.__name__: _hooks(c) for c in (abilities.Video, abilities.ZooIds,
            abilities.TaskConfigs, abilities.StepSplit, abilities.ExactResume)} == {
        "Video": {"check_video", "video_env", "video_blank_hint", "video_equivalent"},
        "ZooIds": {"gymnasium_id", "is_atari"},
        "TaskConfigs": {"agent_config"},
        "StepSplit": {"step_split"},
        "ExactResume": {"resume_approximate"},
    }  # fmt: skip


def test_each_backend_declares_what_it_can_do():
    """rlcrate's own backends' abilities, as the callers ask them (`isinstance`)."""
    from runner.backends import abilities

    kinds = (abilities.Video, abilities.ZooIds, abilities.TaskConfigs, abilities.StepSplit,
             abilities.ExactResume)  # fmt: skip
    own = plugins.OWN["backend"]
    declared = {n: {k.__name__ for k in kinds if isinstance(get_backend(n), k)} for n in own}
    assert declared == {
        "godot": {"Video", "StepSplit"},
        "envpool": {"Video", "ZooIds"},
        "gymnasium": {"Video", "ZooIds", "ExactResume"},
        "isaaclab": {"TaskConfigs"},
        "brax": {"Video", "ExactResume"},
        "playground": {"Video", "ExactResume", "TaskConfigs"},
    }


def test_a_backend_without_a_hook_it_must_have_cannot_be_made():
    class Half(Backend):
        name = "half"

        def available(self) -> str | None:
            return None

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow)
        if n in SLOW_TO_MAKE
        # in-process only in the GPU environment (make test-gpu-env); Warp compiles its kernels
        else pytest.param(n, marks=[pytest.mark.slow, pytest.mark.isaaclab])
        if n == "isaaclab"
        else n
        for n in names()
    ],
)
def test_backend_conforms(name):
    """Its class, options and traits, what doctor and provenance ask, its checks of a good and a
    bad env, and (where its envs are made in this Python) a VecEnv that resets and steps, whose
    arrays the caller owns (a view of an engine's buffer, JAX's or torch's, is read-only)."""
    rows = backend_rows(name)
    _passes(rows)
    assert rows[0][1] != SKIPPED and len(rows) == 5


# another package's trainer (toy_climb) through the kit a plugin's tests use: test_plugin_check
@pytest.mark.parametrize("name", list(plugins.OWN["trainer"]))
def test_trainer_conforms(name):
    _passes(trainer_rows(name))


@pytest.mark.parametrize("name", list(plugins.OWN["executor"]))
def test_executor_conforms(name):
    _passes(executor_rows(name))


def test_the_checker_finds_what_is_wrong(monkeypatch):
    """A backend whose check raises instead of returning its problems, and whose VecEnv returns
    a read-only view: both named, nothing raised."""
    from runner.backends.gymnasium import Gymnasium

    def raises(self, env):
        raise FieldError(("env", "id"), "raised, not returned")

    monkeypatch.setattr(Gymnasium, "check_env", raises)
    get_backend.cache_clear()
    try:
        rows = {what: (result, detail) for what, result, detail in backend_rows("gymnasium")}
    finally:
        get_backend.cache_clear()
    result, detail = rows["its ids, and its checks of a good and a bad env"]
    assert result == FAILED and "raised, not returned" in detail


@pytest.mark.parametrize(
    "backend,good,bad,suggest",
    [
        ("gymnasium", "CartPole-v1", "CartPole-v9", "CartPole-v1"),
        ("envpool", "Pong-v5", "Pong-v4", "Pong-v5"),
    ],
)
def test_env_id_check_suggests(backend, good, bad, suggest):
    module = get_backend(backend)
    if module.available():
        pytest.skip(module.available() or "")
    spec = module.Options.model_validate
    assert module.check_env(spec({"backend": backend, "id": good})) == []
    [problem] = module.check_env(spec({"backend": backend, "id": bad}))
    assert problem.path == ("env", "id") and f"Did you mean '{suggest}'" in problem.message


def _broken_backend(tmp_path) -> dict[str, str]:
    """The environment of a process with a package installed whose backend fails to import."""
    from tests.helpers import PLUGINS, ROOT

    dist = tmp_path / "rlcrate_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rlcrate-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[rlcrate.backends]\nbroken = rlcrate_broken:Sim\n")
    (tmp_path / "rlcrate_broken.py").write_text("import no_such_module_here\n")
    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(PLUGINS), str(tmp_path)])}


BROKEN = (
    "the backend 'broken' of the package rlcrate-broken (entry point rlcrate.backends) cannot be "
    "imported: rlcrate_broken:Sim: No module named 'no_such_module_here'"
)


def test_a_broken_plugin_is_one_line_naming_its_package(tmp_path):
    """An entry point whose module fails to import: one line naming the package, exit 2, and
    doctor lists it as broken."""
    from tests.helpers import rlcrate

    manifest = tmp_path / "m.yaml"
    manifest.write_text("rlcrate: 1\nname: b\nenv: {backend: broken, id: x}\n")
    res = rlcrate("validate", str(manifest), env_extra=_broken_backend(tmp_path))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines() == [f"error: {manifest}:3: env.backend: {BROKEN}"]


TYPOS = """\
rlcrate: 1
name: typos
env: {backend: gymnasium, id: CartPole-v1, kwarg: {}}
algo: {name: PPO, parms: {n_steps: 64}}
trian: {timesteps: 100}
"""


def test_a_broken_plugin_hides_no_problem_of_a_manifest_that_does_not_use_it(tmp_path):
    """A gymnasium manifest with three typos, a broken backend installed: its three problems at
    their lines, and one line more for the broken plugin, whose options the checks left out
    (before: the plugin's import error alone, with no file or line). The same manifest
    without its typos validates."""
    from tests.helpers import rlcrate

    env, manifest = _broken_backend(tmp_path), tmp_path / "typos.yaml"
    manifest.write_text(TYPOS)
    res = rlcrate("validate", str(manifest), env_extra=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert [line.split(" unknown key")[0] for line in lines[:3]] == [
        f"error: {manifest}:3: env.kwarg:",
        f"error: {manifest}:4: algo.parms:",
        f"error: {manifest}:5: trian:",
    ]
    assert lines[3:] == [f"error: {BROKEN}; the checks above left it out"]
    manifest.write_text(TYPOS.replace("kwarg", "kwargs").replace("parms", "params")
                        .replace("trian", "train"))  # fmt: skip
    res = rlcrate("validate", str(manifest), env_extra=env)
    assert res.returncode == 0 and res.stderr == "", res.stderr
