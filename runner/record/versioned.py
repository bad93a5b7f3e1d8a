"""Record formats: every JSON record of a run and its resolved.yaml carry a top-level integer
`format` and `written_by` (`rlcrate X.Y.Z`), so a reader knows what it holds.

Each record's model declares its `Format`: the number it writes and one migration per older
number, an explicit function from format n to n + 1 (tested one by one). A file written before
records were versioned has no `format`: it is format 0, and `Format.migrations[0]` brings it to
format 1. A reader brings what it reads to the current format before its model sees it, and
refuses a newer one in one line naming the file and the rlcrate that wrote it (`NewerFormat`,
exit 2): a newer rlcrate's record is never half-read, nor taken for a damaged one and
replaced. Nothing is dropped on read: a migration says what each old field becomes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, Field, model_validator

from runner import __version__
from runner.errors import RunFileError

if TYPE_CHECKING:
    from typing import Self

WRITTEN_BY = f"rlcrate {__version__}"
UNVERSIONED = 0  # the format of a file written before records carried one

Data = dict[str, Any]
Migration = Callable[[Data], Data]
V = TypeVar("V", bound="Versioned")


class NewerFormat(RunFileError):
    """A record of a format this rlcrate does not know: written by a newer one."""


def is_int(value: Any) -> bool:
    """An integer, not a bool (JSON's `true` is an int to isinstance)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Format:
    """A record's format history: its name (for messages), the format this rlcrate writes, and
    `migrations[n]`, the function from format n to n + 1, for every n below it."""

    name: str
    current: int
    migrations: tuple[Migration, ...]
    # a record whose unversioned files held a `format` key of their own says so here
    unversioned: Callable[[Data], bool] | None = None

    def __post_init__(self) -> None:
        if len(self.migrations) != self.current:  # a missing step would skip a migration
            raise TypeError(f"{self.name}: format {self.current} needs {self.current} migrations")

    def found(self, data: Data) -> Any:
        """The format `data` says it has; a file without one is format 0."""
        if self.unversioned is not None and self.unversioned(data):
            return UNVERSIONED
        return data.get("format", UNVERSIONED)

    def upgrade(self, data: Any, source: str) -> Any:
        """`data` brought to the current format. NewerFormat when it is newer; data that is not a
        mapping, or whose `format` is not a whole number, comes back as it is (the model then
        refuses it as damaged)."""
        if not isinstance(data, dict):
            return data
        found = self.found(data)
        if not is_int(found) or found < 0:
            return data
        if found > self.current:
            raise newer(source, self, found, data.get("written_by"))
        for step in self.migrations[found:]:
            data = step(dict(data))
        return data


def newer(source: str, fmt: Format, found: int, written_by: Any) -> NewerFormat:
    who = written_by if isinstance(written_by, str) and written_by else "a newer rlcrate"
    return NewerFormat(
        f"{source}: written by {who} in {fmt.name} format {found}; this rlcrate "
        f"({__version__}) reads format {fmt.current} and older: read it with {who} or newer"
    )


def stamped(data: Data) -> Data:
    """The migration from format 0 of a record whose fields did not change: it says format 1, by
    an rlcrate too old to say which (`written_by` null)."""
    return {**data, "format": 1, "written_by": None}


def stamped_keeping(data: Data, known: set[str]) -> Data:
    """`stamped`, for a record whose model took fields it did not name (a trainer's, an
    executor's): those outside `known` are kept as they were, under `legacy`."""
    legacy = {k: v for k, v in data.items() if k not in known}
    kept = {k: v for k, v in data.items() if k in known}
    return {**stamped(kept), **({"legacy": legacy} if legacy else {})}


class Versioned(BaseModel):
    """A record with a format: `format` and `written_by` first in the file, then its own fields.
    Subclasses set FORMAT; a record is written with `as_written()` and read with `load` or
    `rundir.checked` (which migrate first)."""

    FORMAT: ClassVar[Format]

    format: int = Field(1, description="The record's format (see runner/record/versioned.py).")
    written_by: str | None = Field(
        WRITTEN_BY,
        description="The rlcrate that wrote it (`rlcrate X.Y.Z`); null: one from before records "
        "said so.",
    )

    @model_validator(mode="after")
    def _current_format(self) -> Self:
        if "format" not in self.model_fields_set:  # made here: the format this rlcrate writes
            self.format = self.FORMAT.current
        elif self.format != self.FORMAT.current:  # a reader migrates before the model sees it
            raise ValueError(
                f"format {self.format} is not {self.FORMAT.name}'s format {self.FORMAT.current}"
            )
        return self

    def as_written(self) -> Data:
        """The record as plain JSON data, stamped with this rlcrate."""
        data = self.model_dump(mode="json", by_alias=True, exclude={"format", "written_by"})
        return {"format": self.FORMAT.current, "written_by": WRITTEN_BY, **data}


def upgraded(model: type[V], data: Any, source: str) -> Any:
    """`data` (a record of `model`) brought to the current format (`Format.upgrade`)."""
    return model.FORMAT.upgrade(data, source)
