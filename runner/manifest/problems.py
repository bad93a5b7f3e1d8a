"""Manifest problems as values: collected by parse, schema and checks, turned into text only at
the edge (the CLI), so nothing ever parses a line number or a field path back out of a string.

Also the helpers that make them: a key path's line, and pydantic's errors as problems.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, get_args

# Problem lives with the errors (ManifestError holds them); re-exported for the manifest stages.
from runner.errors import Loc as Loc
from runner.errors import Problem as Problem
from runner.errors import dotted as dotted

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

Lines = dict[Loc, int]  # key path -> line, from the parse stage
SHOWN = 80  # a value echoed in an error line is cut to this many characters


def shorten(text: str, limit: int = SHOWN) -> str:
    """`text`, or its start and an ellipsis: error lines stay one short line (a line break or
    another character that is not printable shown as its escape, `\\n`)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(problems: list[Problem]) -> list[str]:
    """Problems sorted by file and line, duplicates dropped, one line each."""
    return [str(p) for p in sorted(dict.fromkeys(problems), key=lambda p: (p.file, p.line))]


def line_of(loc: Loc, lines: Lines) -> int:
    """The line of the deepest known prefix of `loc` (unknown nested paths point at the parent)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 0


def at(source: str, lines: Lines, loc: Loc, message: str) -> Problem:
    """A problem at field `loc`, on that field's line."""
    return Problem(source, line_of(loc, lines), tuple(loc), message)


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc`, for 'did you mean' suggestions."""
    from pydantic import BaseModel

    from runner.manifest.schema import Manifest, fields_of

    model: Any = Manifest
    for key in loc[:-1]:
        field = fields_of(model).get(key) if isinstance(key, str) else None
        # `X | None` fields (algo.normalize): the model inside
        kinds = get_args(field.annotation) or (field.annotation,) if field is not None else ()
        inner: list[type[BaseModel]] = [
            k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)
        ]
        if not inner:
            return None
        model = inner[0]
    return model


def _message(err: Any) -> str:
    loc, kind = tuple(err["loc"]), err["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        hint = ""
        if model is not None:
            close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
            if close:
                hint = f"; did you mean '{close[0]}'?"
            hint += f" (allowed: {', '.join(model.model_fields)})"
        return f"unknown key{hint}"
    if kind == "missing":
        return "required field is missing"
    if kind == "string_pattern_mismatch" and loc == ("name",):
        return (
            f"expected a folder-safe name: letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit, at most 100 characters (got {err['input']!r})"
        )
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind.startswith("rlcrate_"):  # the schema's own sentences (`env`'s options, modes)
        return msg
    if "input" in err and kind != "value_error" and not isinstance(err["input"], (dict, list)):
        msg += f" (got {err['input']!r})"
    return msg


def user_loc(err: Any) -> Loc:
    """pydantic appends the literal choice / union branch to loc; keep the user's path only."""
    loc = err["loc"]
    return tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or "function-" in p)))


def validation_problems(
    exc: ValidationError, source: str, lines: Lines, prefix: Loc = ()
) -> list[Problem]:
    """pydantic's errors as problems, each at its field's line (under `prefix`)."""
    return [at(source, lines, prefix + user_loc(err), _message(err)) for err in exc.errors()]
