"""The few error types the runner raises; `runner.cli.exit.exit_status` maps them to exit codes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Loc = tuple[Any, ...]


def dotted(loc: Loc) -> str:
    """`("algo", "params", "n_steps")` -> `algo.params.n_steps`; list indices as `[i]`; a key's
    line break (or other character that is not printable) as its escape, so a problem stays one
    line."""
    out = ""
    for part in loc:
        if not isinstance(part, int):
            part = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(part))
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a manifest: where (file, line, field path) and what was expected.

    `line` is 0 when unknown (the whole file); `path` is the key path inside the manifest, empty
    for a problem with the file itself (unreadable, not YAML).
    """

    file: str
    line: int
    path: Loc
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = dotted(self.path)
        return f"{where}: {field}: {self.message}" if field else f"{where}: {self.message}"


def first_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`, at most `limit` characters: a library's error in one
    line of ours."""
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0]}" if text and text[0] else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass(frozen=True)
class FieldProblem:
    """One thing wrong at one manifest field, as a value: what a plugin's check returns (a list,
    every problem at once). `validate` places it at that field's line (a `Problem`); `error()`
    raises it where there is no list to add to."""

    path: Loc  # the field's key path from the manifest's top, e.g. ("env", "kwargs", "x")
    message: str

    def error(self) -> FieldError:
        return FieldError(self.path, self.message)


def first_error(problems: list[FieldProblem]) -> None:
    """Raise the first of `problems` as a FieldError; nothing when there are none."""
    if problems:
        raise problems[0].error()


class RunnerError(Exception):
    """Base class: a one-sentence message meant for the user. Exit status 1."""

    exit_code = 1


class UserInputError(RunnerError):
    """Bad input (manifest, arguments, files). Exit status 2."""

    exit_code = 2


class FieldError(UserInputError):
    """Bad input at one manifest field: its key path and what was expected, apart, so a check can
    place it (file and line of that field) without parsing text. str(): `env.kwargs.x: message`.
    """

    def __init__(self, path: tuple[str | int, ...], message: str):
        self.path, self.message = tuple(path), message
        super().__init__(f"{dotted(self.path)}: {message}")


class ManifestError(UserInputError):
    """One or more problems in a manifest, as values (`Problem`: file, line, field path, message);
    each prints as one line `file:line: field: message`."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class SettingError(UserInputError):
    """An environment variable rlcrate reads holds a value it cannot use: one line naming the
    variable and what was expected, never attributed to a manifest field. Exit status 2."""


class RunFileError(UserInputError):
    """A file of a run directory or archive (resolved.yaml, status.json, ...) is missing or
    damaged: one line naming the file and what was wrong. Exit status 2."""


class BackendUnavailable(RunnerError):
    """A backend's package or binary is missing on this machine."""

    exit_code = 2


class EnvTimeout(RunnerError):
    """An environment process did not answer within its timeout."""


class UnitFailed(RunnerError):
    """A unit of work failed; the others still ran."""


def did_you_mean(name: object, known: list[str]) -> str:
    """ "; did you mean 'X'?" for the known name closest to `name`, or "" when none is close.
    Case is no distance: `ppo` is PPO, `mlppolicy` MlpPolicy (difflib alone finds nothing close
    in `ppo` for PPO)."""
    import difflib

    text = str(name)
    lower: dict[str, str] = {}
    for k in known:
        lower.setdefault(k.lower(), k)
    close = difflib.get_close_matches(text.lower(), list(lower), n=1)
    return f"; did you mean '{lower[close[0]]}'?" if close else ""
