"""`rlcrate plugin check NAME`: the conformance checks a backend, trainer or executor must pass,
as Stable-Baselines3 ships `check_env` for envs. rlcrate's own plugins pass the same checks in its
tests (tests/registry/test_registry.py), so a plugin author runs exactly what rlcrate runs on its
own.

Each check is a (what, ok, detail) row; a check that cannot run here (the backend's packages are
missing, its units run in another Python) is skipped with the reason, not failed. A check raises
`ContractBroken` with its message (`require`), never `assert`: Python's -O (PYTHONOPTIMIZE) strips
asserts, and a checker built on them passes every plugin there. A plugin's own tests run the same
checks by subclassing `PluginConformance` (tests/registry/test_plugin_check.py shows how).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from runner import plugins
from runner.cli.conformance import (
    FAILED,
    OK,
    SKIPPED,
    ContractBroken,
    Row,
    Rows,
    Skip,
    failures,
    one_line,
    problems,
    require,
)
from runner.errors import RunnerError, UserInputError

__all__ = [
    "CHECKS", "FAILED", "OK", "SKIPPED", "ContractBroken", "PluginConformance", "backend_rows",
    "check", "executor_rows", "failures", "require", "trainer_rows",
]  # fmt: skip


def backend_rows(name: str) -> list[Row]:
    """The backend `name`'s conformance: its class, options and traits; what doctor and
    provenance ask; its checks; and (where it runs here) a VecEnv that resets and steps."""
    from runner.backends import get_backend
    from runner.backends.base import BITWISE, SB3_VEC_ENV, STATISTICAL, Backend, Traits
    from runner.manifest.schema import EnvSpec, ParallelSpec

    out = Rows()
    backend: Any = None
    with out.check("a Backend subclass that can be made"):
        backend = get_backend(name)
        require(isinstance(backend, Backend), f"{type(backend).__name__} is not a Backend")
    if backend is None:
        return out.rows
    with out.check("its name, options and traits"):
        require(backend.name == name, f"its name is {backend.name!r}, its entry point's {name!r}")
        options = backend.Options
        require(
            isinstance(options, type) and issubclass(options, EnvSpec),
            "Options must derive from EnvSpec",
        )
        options.model_validate({"backend": name, "id": "x"})  # every option has a default
        traits = backend.TRAITS
        require(isinstance(traits, Traits), f"TRAITS must be a Traits, not {traits!r}")
        require(traits.module and traits.extra, "TRAITS must name its module and its extra")
        require(
            traits.determinism in (BITWISE, STATISTICAL),
            f"TRAITS.determinism must be {BITWISE} or {STATISTICAL}, not {traits.determinism!r}",
        )
        require(
            set(traits.images) <= {"cpu", "cuda"},
            f"TRAITS.images must be among cpu and cuda, not {traits.images!r}",
        )
        require(SB3_VEC_ENV in backend.interfaces, "every backend makes SB3's VecEnv")
    with out.check("what doctor and provenance ask (available, versions, interpreter)"):
        reason = backend.available()
        require(reason is None or one_line(reason), f"available() gave {reason!r}")
        for program, info in backend.versions().items():
            require(
                isinstance(program, str) and ("error" in info or {"path", "version"} <= set(info)),
                f"versions() gave {program!r}: {info!r} (expected path and version, or error)",
            )
        python = backend.interpreter()
        require(
            python is None or (os.path.isfile(python) and os.access(python, os.X_OK)),
            f"interpreter() gave {python!r}, not a program that can be run",
        )
    env = None
    with out.check("its ids, and its checks of a good and a bad env"):
        reason = backend.available()
        if reason:
            raise Skip(reason)
        ids = backend.env_ids()
        require(ids and all(isinstance(i, str) for i in ids), "env_ids() must list some ids")
        env = backend.Options.model_validate({"backend": name, "id": backend.example_id or ids[0]})
        found = problems(backend.check_env(env), "check_env")
        require(found == [], f"its first id is refused: {found!r}")
        bad = backend.Options.model_validate({"backend": name, "id": "NoSuchEnv-v0"})
        found = problems(backend.check_env(bad), "check_env")
        require(found and found[0].path == ("env", "id"), f"an unknown id gave {found!r}")
        found = problems(backend.check_parallel(ParallelSpec()), "check_parallel")
        require(found == [], f"check_parallel refuses the default parallel: {found!r}")
        kind, spaces = backend.action_kind(env), backend.spaces(env)
        if spaces is not None:
            action = type(spaces[1]).__name__
            require(kind in (None, action), f"action_kind() gave {kind!r} for a {action} space")
    with out.check("a VecEnv of 2 envs that resets and steps"):
        if env is None:
            raise Skip("needs the check above")
        _steps(backend, env)
    return out.rows


def _steps(backend: Any, env: Any) -> None:
    import numpy as np

    from runner.manifest.schema import ParallelSpec

    own = backend.interpreter()
    if own is not None and os.path.abspath(own) != os.path.abspath(sys.executable):
        raise Skip(f"its envs are made in its own Python ({own}); run the check there")
    with tempfile.TemporaryDirectory(prefix="rlcrate-plugin-check-") as logs:
        venv = backend.make_vec_env(env, ParallelSpec(envs=2), seed=3, log_dir=Path(logs))
        try:
            require(venv.num_envs == 2, f"num_envs is {venv.num_envs}, asked for 2")
            obs = venv.reset()
            require(obs.shape[0] == 2, f"reset gave observations of shape {obs.shape} for 2 envs")
            require(
                venv.observation_space.contains(obs[0].astype(obs.dtype)),
                "reset gave an observation outside the observation space",
            )
            venv.action_space.seed(0)
            obs, rewards, dones, infos = venv.step(
                np.stack([venv.action_space.sample() for _ in range(2)])
            )
            sizes = (obs.shape[0], rewards.shape[0], dones.shape[0], len(infos))
            require(
                sizes == (2, 2, 2, 2),
                f"step gave {sizes} observations, rewards, dones and infos for 2 envs",
            )
            # the caller owns what step returns, as with SB3's own VecEnvs
            arrays = (obs, rewards, dones)
            require(
                all(isinstance(a, np.ndarray) and a.flags.writeable for a in arrays),
                "step must return writable NumPy arrays (copies, not views of an engine's buffer)",
            )
            spaces = backend.spaces(env)
            require(
                spaces is None or spaces[1] == venv.action_space,
                f"spaces() gave the action space {spaces[1] if spaces else None}, the VecEnv "
                f"{venv.action_space}",
            )
        finally:
            venv.close()


TRAINER_HOOKS = ("check_params", "check_limits", "dry_construct", "deep_only", "train", "evaluate",
                 "model_files", "determinism_attempt", "bench")  # fmt: skip


def trainer_rows(name: str) -> list[Row]:
    """The trainer `name`'s conformance: the contract's hooks with their parameters, the env
    interface it steps, and its checks' answers on the default manifest of its algorithm."""
    from runner.backends.base import Backend
    from runner.trainers import get_trainer
    from runner.trainers.base import Trainer

    out = Rows()
    trainer: Any = None
    with out.check("it imports"):
        trainer = get_trainer(name)
    if trainer is None:
        return out.rows
    with out.check("the contract's hooks, with their parameters"):
        for hook in TRAINER_HOOKS:
            fn = getattr(trainer, hook, None)
            if not callable(fn):
                raise ContractBroken(f"{hook} is missing")
            want = _params(getattr(Trainer, hook))[1:]  # self
            require(_params(fn) == want, f"{hook}{inspect.signature(fn)} differs from the contract")
    with out.check("the env interface it steps (ENV_INTERFACE)"):
        wants = getattr(trainer, "ENV_INTERFACE", None)
        require(one_line(wants), "ENV_INTERFACE must name an env interface")
        makers = [b for b in _backends() if wants in b.interfaces]
        require(makers, f"no installed backend makes {wants} envs")
        require(all(isinstance(b, Backend) for b in makers), "a backend is not a Backend")
    with out.check("its checks answer with lists of problems"):
        cfg = _a_manifest(name, makers=[b.name for b in _backends() if wants in b.interfaces])
        problems(trainer.check_limits(cfg), "check_limits")
        problems(trainer.check_params(cfg, None), "check_params")
    return out.rows


def _params(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


def _backends() -> list[Any]:
    from runner.backends import get_backend, names

    found = []
    for n in names():
        with contextlib.suppress(RunnerError):
            found.append(get_backend(n))
    return found


def _a_manifest(trainer: str, makers: list[str]) -> Any:
    from runner.manifest.schema import Manifest

    env = {"backend": makers[0], "id": "x"}
    return Manifest.model_validate(
        {"rlcrate": 1, "name": "check", "env": env, "algo": {"trainer": trainer}}
    )


EXECUTOR_MEMBERS = ("launch", "check_reachable", "status", "cancel", "started_any")


def executor_rows(name: str) -> list[Row]:
    """The executor `name`'s conformance: its settings (options that do not clash with another
    executor's of another meaning), the protocol's members, and `status` of an empty run."""
    from runner.executors import get_executor, registered
    from runner.executors.base import ExecutorSettings, Holdings

    out = Rows()
    executor: Any = None
    with out.check("it imports"):
        executor = get_executor(name)
    if executor is None:
        return out.rows
    with out.check("its Settings and options"):
        settings = executor.Settings
        require(
            isinstance(settings, type) and issubclass(settings, ExecutorSettings),
            f"Settings must be a subclass of ExecutorSettings, not {settings!r}",
        )
        settings()  # every setting has a default
        for other in registered():
            if other == name:
                continue
            with contextlib.suppress(UserInputError):
                theirs = get_executor(other).Settings.flags()
                for field, flag in settings.flags().items():
                    require(
                        flag not in theirs.values() or theirs.get(field) == flag,
                        f"{flag} is also {other}'s option, for another setting",
                    )
        for flag in ("runs_here", "live_files"):
            value = getattr(executor, flag, None)
            require(isinstance(value, bool), f"{flag} must be True or False, not {value!r}")
    with out.check("the protocol's members"):
        for member in EXECUTOR_MEMBERS:
            require(callable(getattr(executor, member, None)), f"{member} is missing")
    with (
        out.check("status and started_any of a run it never saw"),
        tempfile.TemporaryDirectory(prefix="rlcrate-plugin-check-") as run,
    ):
        held = executor.status(Path(run), [])
        require(isinstance(held, Holdings), f"status must return Holdings, not {held!r}")
        started = executor.started_any(Path(run))
        require(started is False, f"started_any of an empty run gave {started!r}, not False")
    return out.rows


CHECKS = {"backend": backend_rows, "trainer": trainer_rows, "executor": executor_rows}


def check(name: str, kind: str | None = None) -> dict[str, list[Row]]:
    """kind -> rows, for every kind of plugin named `name` (or the one `kind` says);
    UserInputError when no plugin has that name."""
    kinds = [kind] if kind else [k for k in CHECKS if plugins.find(k, name) is not None]
    if kind and plugins.find(kind, name) is None:
        raise UserInputError(plugins.unknown(kind, name))
    if not kinds:
        every = ", ".join(f"{k}s: {', '.join(plugins.names(k))}" for k in CHECKS)
        raise UserInputError(
            f"no backend, trainer or executor named {name!r} is installed ({every})"
        )
    return {k: CHECKS[k](name) for k in kinds}


class PluginConformance:
    """The conformance checks as a test class a plugin's own test suite subclasses (as Hydra's
    launchers subclass its `LauncherTestSuite`), naming its plugin:

        from runner.cli.plugin_check import PluginConformance

        class TestMySimConforms(PluginConformance):
            kind, name = "backend", "my_sim"

    pytest then runs `test_conforms`, which raises ContractBroken listing every failed check,
    one a line (under python -O as well); a check that cannot run here is skipped, not failed."""

    kind: ClassVar[str]  # backend, trainer or executor
    name: ClassVar[str]  # the plugin's entry-point name

    def test_conforms(self) -> None:
        broken = failures(CHECKS[self.kind](self.name))
        if broken:
            lines = "\n".join(broken)
            raise ContractBroken(f"the {self.kind} {self.name!r} breaks its contract:\n{lines}")
