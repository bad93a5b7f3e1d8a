"""The executor contract: what runs a run's units somewhere (here, on Ray, on Slurm).

An executor is a class derived from `Executor` below, found by name through the entry-point group
`rlcrate.executors` (`runner.plugins`; rlcrate's own are declared there too). Its `Settings`
(a pydantic model) is where everything it can be told lives: each field marked with `option()`
becomes a command-line option of `run`, `train`, `eval` and `reproduce`, and, when the model
names a `profile_option`, the fields not marked `cli_only` can come from a YAML profile file.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import UserInputError

if TYPE_CHECKING:
    from runner.executors.needs import Needs
    from runner.record.rundir import UnitRef

Tick = Callable[[], None]


def option(
    flag: str,
    help: str,
    default: Any = None,
    *,
    default_factory: Callable[[], Any] | None = None,
    cli_only: bool = False,
) -> Any:
    """A settings field that is also the command-line option `flag` (a mapping field takes
    repeated KEY=VALUE); `cli_only` keeps it out of the profile file (e.g. --detach, a choice
    for one invocation)."""
    extra: dict[str, Any] = {"flag": flag, "cli_only": cli_only}
    if default_factory is not None:
        return Field(default_factory=default_factory, description=help, json_schema_extra=extra)
    return Field(default, description=help, json_schema_extra=extra)


class ExecutorSettings(BaseModel):
    """Base of every executor's settings. Fields made with `option()` are command-line options;
    the others come only from the profile file (when the executor has one)."""

    model_config = ConfigDict(extra="forbid")

    # the option naming a YAML file of these settings (flags override it key by key); None: none
    profile_option: ClassVar[str | None] = None

    @property
    def detached(self) -> bool:
        """True when `launch` returns once the units are submitted (followed with `status`)."""
        return False

    def takes_image(self, image: str) -> bool:
        """True when this executor itself runs each unit in `image` (Slurm: a .sif under
        Apptainer; it records the image), so the runner stays here rather than moving into
        the image."""
        return False

    def unit_image(self) -> str | None:
        """The image this executor runs each unit in itself (`takes_image`, or its profile's:
        Slurm's .sif), which the run's provenance records; None when units run where the
        runner does."""
        return None

    @classmethod
    def flags(cls) -> dict[str, str]:
        """field name -> its command-line option."""
        return {
            name: str(extra["flag"])
            for name, f in cls.model_fields.items()
            if isinstance(extra := f.json_schema_extra, dict) and "flag" in extra
        }

    @classmethod
    def profile_keys(cls) -> list[str]:
        return [
            name
            for name, f in cls.model_fields.items()
            if not (isinstance(extra := f.json_schema_extra, dict) and extra.get("cli_only"))
        ]

    @classmethod
    def build(cls, profile: Path | None, given: Mapping[str, Any]) -> Self:
        """The profile's settings, then the options given (not None) on top; a mapping option
        adds to the profile's mapping. One line naming the option or the profile's field when
        a value is wrong."""
        data = load_profile(cls, profile) if profile else {}
        for key, value in given.items():
            if isinstance(value, dict):
                data[key] = {**(data.get(key) or {}), **value}
            elif value is not None:
                data[key] = value
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else ""
            where = cls.flags().get(name) or f"{profile}: {name}"
            raise UserInputError(f"{where}: {err['msg'].removeprefix('Value error, ')}") from None


def load_profile(settings: type[ExecutorSettings], path: Path) -> dict[str, Any]:
    """A profile file's settings as a dict; the first problem as one line naming the file,
    line and field."""
    from runner.manifest.load import parse_yaml, read_text
    from runner.manifest.problems import Problem, line_of

    source = str(path)
    data, lines = parse_yaml(read_text(path), source)

    def problem(loc: tuple[Any, ...], message: str) -> UserInputError:
        return UserInputError(str(Problem(source, line_of(loc, lines), loc, message)))

    if data is None:
        return {}
    if not isinstance(data, dict):
        raise problem((), "expected a mapping of settings")
    known = settings.profile_keys()
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise problem((key,), f"unknown key; {hint}expected one of {', '.join(known)}")
    try:
        settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise problem(tuple(err["loc"]), err["msg"].removeprefix("Value error, ")) from None
    return dict(data)


@dataclass(frozen=True)
class Plan:
    """The units to run and what each needs: the same whichever executor runs them."""

    run_dir: Path
    units: list[UnitRef]
    jobs: list[str]  # train, eval
    pythons: Mapping[str, str | None]  # variant -> the interpreter its units run with
    needs: Mapping[UnitRef, Needs]  # CPUs and GPUs per unit (schedulers ask for them)
    max_parallel: int  # units at once where the executor decides (here: the CPU count)


S = TypeVar("S", bound=ExecutorSettings)


class Executor(ABC, Generic[S]):
    """An executor: its `Settings` and `runs_here` as class attributes, `launch` and the rest as
    methods; every method but `launch` has a working default (an executor whose units never
    outlive the runner keeps nothing to report or cancel)."""

    Settings: ClassVar[type[ExecutorSettings]]  # everything it can be told (`ExecutorSettings`)
    # True when units run on this machine (their devices are checked before they start)
    runs_here: ClassVar[bool] = False
    # True when a running unit's files are in the run directory as it writes them (a shared
    # filesystem); False when they come back when it ends (what a study's pruner cannot wait on)
    live_files: ClassVar[bool] = True

    @abstractmethod
    def launch(self, plan: Plan, settings: S, on_tick: Tick) -> dict[UnitRef, int]:
        """Run the plan's units; {unit: exit status} of those that ended (none when detached).
        Calls `on_tick` about once a second. On KeyboardInterrupt: running units it started
        here are asked to checkpoint and stop, then the interrupt propagates (the runner then
        calls `cancel` for what is left)."""

    def check_reachable(self, settings: S) -> None:
        """Before a run directory is made: the executor's tools are installed and its cluster
        answers (UserInputError, BackendUnavailable, one line each). Default: nothing to check
        (units run here)."""

    def status(self, run_dir: Path, units: list[UnitRef]) -> Holdings:
        """What the executor holds for each of these units (Slurm: its job id and state), for
        `rlcrate status`. Only looks. Default: `Holdings()`, no record beyond the runner's."""
        return Holdings()

    def cancel(self, run_dir: Path, units: list[UnitRef]) -> None:
        """Stop whatever the executor still holds for these units (Slurm: scancel their jobs).
        Default: nothing, units never outlive the runner."""

    def started_any(self, run_dir: Path) -> bool:
        """Whether the executor took any unit of this run (Slurm: a job submitted), so that a
        run refused before its units leaves no directory behind only when nothing started.
        Default False: what it started has a state or a unit.log, which the runner reads."""
        return False


@dataclass(frozen=True)
class Held:
    """What an executor holds for one unit, as `rlcrate status` shows it."""

    text: str  # e.g. "1234 RUNNING" (a Slurm job and its state)
    # The executor runs it no more (its job ended): a unit not finished then has failed. None
    # while the executor is still on it or cannot say.
    ended: bool | None = None
    why: str = ""  # how it ended, when that failed the unit (one line)


@dataclass(frozen=True)
class Holdings:
    """An executor's answer to `status`: per unit key, what it holds."""

    units: dict[str, Held] = field(default_factory=dict)
    note: str | None = None  # e.g. "Slurm did not answer; unit states as last recorded"
    # Interrupted units come back on their own (Slurm requeues them): not yet ended.
    requeues: bool = False
