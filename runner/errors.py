"""The few error types the runner raises; `cli.py` maps them to exit codes."""

from __future__ import annotations

from typing import Any


class RunnerError(Exception):
    """Base class: a one-sentence message meant for the user. Exit status 1."""

    exit_code = 1


class UserInputError(RunnerError):
    """Bad input (manifest, arguments, files). Exit status 2."""

    exit_code = 2


class ManifestError(UserInputError):
    """One or more problems in a manifest, each a line `file:line: field: message` (a `Problem`
    from runner.manifest.problems, or its text)."""

    def __init__(self, problems: list[Any]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class BackendUnavailable(RunnerError):
    """A backend's package or binary is missing on this machine."""

    exit_code = 2


class EnvTimeout(RunnerError):
    """An environment process did not answer within its timeout."""


class UnitFailed(RunnerError):
    """A unit of work failed; the others still ran."""
