"""Manifest problems as values: collected by parse, schema and checks, turned into text only at
the edge (the CLI), so nothing ever parses a line number or a field path back out of a string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Loc = tuple[Any, ...]


def dotted(loc: Loc) -> str:
    """`("algo", "params", "n_steps")` -> `algo.params.n_steps`; list indices as `[i]`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
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


def render(problems: list[Problem]) -> list[str]:
    """Problems sorted by file and line, duplicates dropped, one line each."""
    return [str(p) for p in sorted(dict.fromkeys(problems), key=lambda p: (p.file, p.line))]
