"""The few error types the runner raises; `cli_exit.exit_status` maps them to exit codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.manifest.problems import Problem


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
        from runner.manifest.problems import dotted

        self.path, self.message = tuple(path), message
        super().__init__(f"{dotted(self.path)}: {message}")


class ManifestError(UserInputError):
    """One or more problems in a manifest, as values (`Problem`: file, line, field path, message);
    each prints as one line `file:line: field: message`."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class BackendUnavailable(RunnerError):
    """A backend's package or binary is missing on this machine."""

    exit_code = 2


class EnvTimeout(RunnerError):
    """An environment process did not answer within its timeout."""


class UnitFailed(RunnerError):
    """A unit of work failed; the others still ran."""
