"""Parse -> validate -> check, as separate stages, collecting every problem before reporting.

Problems are reported one per line as `FILE:LINE: dotted.path: message`.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from runner.errors import ManifestError
from runner.manifest.parse import parse_yaml, read_text  # the parse stage (bounded YAML)
from runner.manifest.schema import Manifest

# ---------------------------------------------------------------- validate (pydantic -> lines)


def line_of(loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int:
    """The line of the deepest known prefix of `loc` (unknown nested paths point at the parent)."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 0


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc`, for 'did you mean' suggestions."""
    model: Any = Manifest
    for key in loc[:-1]:
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None or not (
            isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        ):
            return None
        model = field.annotation
    return model


def _message(err: Any) -> str:
    loc = tuple(err["loc"])
    kind = err["type"]
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
    msg = err["msg"]
    msg = msg.removeprefix("Value error, ")
    if (
        "input" in err
        and kind not in ("value_error",)
        and not isinstance(err["input"], (dict, list))
    ):
        msg += f" (got {err['input']!r})"
    return msg


def dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def validation_problems(
    exc: ValidationError,
    source: str,
    lines: dict[tuple[Any, ...], int],
    prefix: tuple[Any, ...] = (),
) -> list[str]:
    problems = []
    for err in exc.errors():
        # pydantic appends the literal choice / union branch to loc; keep the user's path only
        loc = tuple(
            p
            for p in err["loc"]
            if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))
        )
        full = prefix + loc
        problems.append(f"{source}:{line_of(full, lines)}: {dotted(full)}: {_message(err)}")
    return problems


class SchemaError(ManifestError):
    """The schema rejected some fields; `locs` says which, so the checks can run on the rest."""

    def __init__(self, problems: list[str], locs: list[tuple[Any, ...]]):
        super().__init__(problems)
        self.locs = locs


def validate_data(data: Any, source: str, lines: dict[tuple[Any, ...], int]) -> Manifest:
    if not isinstance(data, dict):
        raise ManifestError([f"{source}:1: expected a mapping of manifest fields at the top level"])
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        locs = [tuple(e["loc"]) for e in exc.errors()]
        raise SchemaError(validation_problems(exc, source, lines), locs) from None


# ---------------------------------------------------------------- the whole pipeline


def _without(data: Any, locs: list[tuple[Any, ...]]) -> Any:
    """A copy of `data` with the values at `locs` removed, so defaults can stand in for them."""
    import copy

    data = copy.deepcopy(data)
    for loc in locs:
        node = data
        for part in loc[:-1]:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                break
        else:
            if isinstance(node, dict):
                node.pop(loc[-1], None)
    return data


def _anchor_paths(manifest: Manifest, base: Path) -> Manifest:
    """A relative game path in env.id means relative to the manifest's folder, not the shell's."""
    env_id = manifest.env.id
    if manifest.env.backend == "godot" and ("/" in env_id or env_id.startswith(".")):
        candidate = base / env_id
        if not Path(env_id).is_absolute() and candidate.exists():
            return manifest.model_copy(
                update={"env": manifest.env.model_copy(update={"id": str(candidate.resolve())})}
            )
    return manifest


def load_manifest(path: str | Path, *, check: bool = True) -> Manifest:
    """Parse, validate and (by default) check a manifest; raise ManifestError listing every problem.

    When the schema rejects some fields, the checks still run on the rest (with defaults in place
    of the rejected values), so one `validate` shows every problem at once.
    """
    from runner.manifest.checks import check_manifest

    path = Path(path)
    source = str(path)
    data, lines = parse_yaml(read_text(path), source)
    try:
        manifest = validate_data(data, source, lines)
        problems: list[str] = []
    except SchemaError as exc:
        problems = exc.problems
        try:
            manifest = Manifest.model_validate(_without(data, exc.locs))
        except (ValidationError, TypeError):
            raise exc from None
    manifest = _anchor_paths(manifest, path.resolve().parent)
    if check:
        problems += [p for p in check_manifest(manifest, source, lines) if p not in problems]
    if problems:
        raise ManifestError(sorted(problems, key=_line_number))
    return manifest


def _line_number(problem: Any) -> int:
    line = getattr(problem, "line", None)
    if line is not None:
        return int(line)
    parts = str(problem).split(":")
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0
