"""`rlcrate plugin check NAME`: the conformance checks a backend, trainer or executor must pass,
as Stable-Baselines3 ships `check_env` for envs. rlcrate's own plugins pass the same checks in
its tests (tests/test_registry.py), so a plugin author runs exactly what rlcrate runs on its own.

Each check is a (what, ok, detail) row; a check that cannot run here (the backend's packages are
missing, its units run in another Python) is skipped with the reason, not failed.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from runner import plugins
from runner.errors import FieldProblem, RunnerError, UserInputError

Row = tuple[str, str, str]  # (what, "ok" | "FAILED" | "skipped", detail)
OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"


class _Rows:
    def __init__(self) -> None:
        self.rows: list[Row] = []

    @contextlib.contextmanager
    def check(self, what: str) -> Iterator[None]:
        """A check: it passes unless its body raises (an AssertionError's text is the detail)."""
        try:
            yield
        except _Skip as skip:
            self.rows.append((what, SKIPPED, str(skip)))
        except Exception as exc:  # a plugin's own error is a finding, not a traceback
            text = str(exc).strip().splitlines()
            self.rows.append((what, FAILED, f"{type(exc).__name__}: {text[0] if text else ''}"))
        else:
            self.rows.append((what, OK, ""))


class _Skip(Exception):
    pass


def _one_line(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "\n" not in value


def _problems(found: Any, what: str) -> list[FieldProblem]:
    assert isinstance(found, list) and all(isinstance(p, FieldProblem) for p in found), (
        f"{what} must return a list of FieldProblem, not {found!r}"
    )
    return found


def backend_rows(name: str) -> list[Row]:
    """The backend `name`'s conformance: its class, options and traits; what doctor and
    provenance ask; its checks; and (where it runs here) a VecEnv that resets and steps."""
    from runner.backends import get_backend
    from runner.backends.base import BITWISE, SB3_VEC_ENV, STATISTICAL, Backend, Traits
    from runner.manifest.schema import EnvSpec, ParallelSpec

    out = _Rows()
    backend: Any = None
    with out.check("a Backend subclass that can be made"):
        backend = get_backend(name)
        assert isinstance(backend, Backend), f"{type(backend).__name__} is not a Backend"
    if backend is None:
        return out.rows
    with out.check("its name, options and traits"):
        assert backend.name == name, f"its name is {backend.name!r}, its entry point's {name!r}"
        assert issubclass(backend.Options, EnvSpec), "Options must derive from EnvSpec"
        backend.Options.model_validate({"backend": name, "id": "x"})  # every option has a default
        traits = backend.TRAITS
        assert isinstance(traits, Traits) and traits.module and traits.extra
        assert traits.determinism in (BITWISE, STATISTICAL)
        assert set(traits.images) <= {"cpu", "cuda"}
        assert SB3_VEC_ENV in backend.interfaces, "every backend makes SB3's VecEnv"
    with out.check("what doctor and provenance ask (available, versions, interpreter)"):
        reason = backend.available()
        assert reason is None or _one_line(reason), f"available() gave {reason!r}"
        for program, info in backend.versions().items():
            assert isinstance(program, str) and (
                "error" in info or {"path", "version"} <= set(info)
            )
        python = backend.interpreter()
        assert python is None or (os.path.isfile(python) and os.access(python, os.X_OK))
    env = None
    with out.check("its ids, and its checks of a good and a bad env"):
        reason = backend.available()
        if reason:
            raise _Skip(reason)
        ids = backend.env_ids()
        assert ids and all(isinstance(i, str) for i in ids), "env_ids() must list some ids"
        env = backend.Options.model_validate({"backend": name, "id": backend.example_id or ids[0]})
        assert _problems(backend.check_env(env), "check_env") == [], "its first id is refused"
        bad = backend.Options.model_validate({"backend": name, "id": "NoSuchEnv-v0"})
        found = _problems(backend.check_env(bad), "check_env")
        assert found and found[0].path == ("env", "id"), f"an unknown id gave {found!r}"
        assert _problems(backend.check_parallel(ParallelSpec()), "check_parallel") == []
        kind, spaces = backend.action_kind(env), backend.spaces(env)
        assert spaces is None or kind in (None, type(spaces[1]).__name__)
    with out.check("a VecEnv of 2 envs that resets and steps"):
        if env is None:
            raise _Skip("needs the check above")
        _steps(backend, env)
    return out.rows


def _steps(backend: Any, env: Any) -> None:
    import numpy as np

    from runner.manifest.schema import ParallelSpec

    own = backend.interpreter()
    if own is not None and os.path.abspath(own) != os.path.abspath(sys.executable):
        raise _Skip(f"its envs are made in its own Python ({own}); run the check there")
    with tempfile.TemporaryDirectory(prefix="rlcrate-plugin-check-") as logs:
        venv = backend.make_vec_env(env, ParallelSpec(envs=2), seed=3, log_dir=Path(logs))
        try:
            assert venv.num_envs == 2, f"num_envs is {venv.num_envs}"
            obs = venv.reset()
            assert obs.shape[0] == 2 and venv.observation_space.contains(obs[0].astype(obs.dtype))
            venv.action_space.seed(0)
            obs, rewards, dones, infos = venv.step(
                np.stack([venv.action_space.sample() for _ in range(2)])
            )
            assert obs.shape[0] == rewards.shape[0] == dones.shape[0] == len(infos) == 2
            # the caller owns what step returns, as with SB3's own VecEnvs
            arrays = (obs, rewards, dones)
            assert all(isinstance(a, np.ndarray) and a.flags.writeable for a in arrays), (
                "step must return writable NumPy arrays (copies, not views of an engine's buffer)"
            )
            spaces = backend.spaces(env)
            assert spaces is None or spaces[1] == venv.action_space
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

    out = _Rows()
    trainer: Any = None
    with out.check("it imports"):
        trainer = get_trainer(name)
    if trainer is None:
        return out.rows
    with out.check("the contract's hooks, with their parameters"):
        for hook in TRAINER_HOOKS:
            fn = getattr(trainer, hook, None)
            assert callable(fn), f"{hook} is missing"
            want = _params(getattr(Trainer, hook))[1:]  # self
            assert _params(fn) == want, f"{hook}{inspect.signature(fn)} differs from the contract"
    with out.check("the env interface it steps (ENV_INTERFACE)"):
        wants = getattr(trainer, "ENV_INTERFACE", None)
        assert _one_line(wants), "ENV_INTERFACE must name an env interface"
        makers = [b for b in _backends() if wants in b.interfaces]
        assert makers, f"no installed backend makes {wants} envs"
        assert all(isinstance(b, Backend) for b in makers)
    with out.check("its checks answer with lists of problems"):
        cfg = _a_manifest(name, makers=[b.name for b in _backends() if wants in b.interfaces])
        _problems(trainer.check_limits(cfg), "check_limits")
        _problems(trainer.check_params(cfg, None), "check_params")
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

    out = _Rows()
    executor: Any = None
    with out.check("it imports"):
        executor = get_executor(name)
    if executor is None:
        return out.rows
    with out.check("its Settings and options"):
        settings = executor.Settings
        assert isinstance(settings, type) and issubclass(settings, ExecutorSettings)
        settings()  # every setting has a default
        for other in registered():
            if other == name:
                continue
            with contextlib.suppress(UserInputError):
                theirs = get_executor(other).Settings.flags()
                for field, flag in settings.flags().items():
                    assert flag not in theirs.values() or theirs.get(field) == flag, (
                        f"{flag} is also {other}'s option, for another setting"
                    )
        assert isinstance(executor.runs_here, bool), "runs_here must be True or False"
        assert isinstance(executor.live_files, bool), "live_files must be True or False"
    with out.check("the protocol's members"):
        for member in EXECUTOR_MEMBERS:
            assert callable(getattr(executor, member, None)), f"{member} is missing"
    with (
        out.check("status and started_any of a run it never saw"),
        tempfile.TemporaryDirectory(prefix="rlcrate-plugin-check-") as run,
    ):
        held = executor.status(Path(run), [])
        assert isinstance(held, Holdings), f"status must return Holdings, not {held!r}"
        assert executor.started_any(Path(run)) is False
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
