"""The pieces every conformance check of `rlcrate plugin check` is made of
(`runner.cli.plugin_check`): a check is a row, (what, result, detail), whose body passes unless
it raises. A check raises `ContractBroken` with its message (`require`), never `assert`:
Python's -O (PYTHONOPTIMIZE) strips asserts, and a checker built on them passes every plugin
there."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from runner.errors import FieldProblem

Row = tuple[str, str, str]  # (what, "ok" | "FAILED" | "skipped", detail)
OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"


class Rows:
    def __init__(self) -> None:
        self.rows: list[Row] = []

    @contextlib.contextmanager
    def check(self, what: str) -> Iterator[None]:
        """A check: it passes unless its body raises (a ContractBroken's message is the
        detail; another exception, the plugin's own, is named with its type)."""
        try:
            yield
        except Skip as skip:
            self.rows.append((what, SKIPPED, str(skip)))
        except ContractBroken as broken:
            self.rows.append((what, FAILED, str(broken)))
        except Exception as exc:  # a plugin's own error is a finding, not a traceback
            text = str(exc).strip().splitlines()
            self.rows.append((what, FAILED, f"{type(exc).__name__}: {text[0] if text else ''}"))
        else:
            self.rows.append((what, OK, ""))


class Skip(Exception):
    """A check that cannot run here: skipped with the reason, not failed."""


class ContractBroken(Exception):
    """A plugin that does not do what its contract says: the message says what it did."""


def require(ok: object, message: str) -> None:
    """A check of the contract: ContractBroken(message) unless `ok` holds. Unlike `assert`, it
    checks under python -O too."""
    if not ok:
        raise ContractBroken(message)


def one_line(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "\n" not in value


def problems(found: Any, what: str) -> list[FieldProblem]:
    require(
        isinstance(found, list) and all(isinstance(p, FieldProblem) for p in found),
        f"{what} must return a list of FieldProblem, not {found!r}",
    )
    return list(found)


def failures(rows: list[Row]) -> list[str]:
    """`check: detail` for each failed row."""
    return [f"{what}: {detail}" for what, result, detail in rows if result == FAILED]
