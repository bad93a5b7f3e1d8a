"""Parse -> validate -> check, as separate stages, collecting every problem before reporting.

Each stage gives `Problem` values (file, line, field path, message); the CLI prints them one per
line as `FILE:LINE: dotted.path: message`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from runner.errors import ManifestError
from runner.manifest.checks import check_manifest
from runner.manifest.problems import Lines, Loc, Problem, validation_problems
from runner.manifest.schema import Manifest

# ---------------------------------------------------------------- parse (YAML with line numbers)


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that remembers the line of every mapping key and sequence item."""


def _compose_lines(
    node: yaml.Node, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int]
) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[path + (key,)] = key_node.start_mark.line + 1
            _compose_lines(value_node, path + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _compose_lines(item, path + (i,), lines)


def parse_yaml(text: str, source: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Safe-load YAML text; return the data and a map from key path to line number."""
    try:
        node = yaml.compose(text, Loader=_LineLoader)
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        what = exc.problem or "invalid YAML"
        if "could not determine a constructor" in str(exc):
            what = f"tag not allowed (manifests are plain YAML; {what.strip()})"
        raise ManifestError([Problem(source, line, (), what)]) from None
    except yaml.YAMLError as exc:
        raise ManifestError([Problem(source, 0, (), f"not valid YAML ({exc})")]) from None
    lines: dict[tuple[Any, ...], int] = {}
    if node is not None:
        _compose_lines(node, (), lines)
    return data, lines


# ---------------------------------------------------------------- validate (pydantic -> problems)


class SchemaError(ManifestError):
    """The schema rejected some fields; `locs` says which, so the checks can run on the rest."""

    def __init__(self, problems: list[Problem], locs: list[Loc]):
        super().__init__(problems)
        self.locs = locs


def validate_data(data: Any, source: str, lines: Lines) -> Manifest:
    if not isinstance(data, dict):
        top = "expected a mapping of manifest fields at the top level"
        raise ManifestError([Problem(source, 1, (), top)])
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        locs = [tuple(e["loc"]) for e in exc.errors()]
        raise SchemaError(validation_problems(exc, source, lines), locs) from None


# ---------------------------------------------------------------- the whole pipeline


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError([Problem(str(path), 0, (), "no such manifest file")]) from None
    except (IsADirectoryError, UnicodeDecodeError, PermissionError) as exc:
        what = f"cannot read the manifest ({exc.__class__.__name__})"
        raise ManifestError([Problem(str(path), 0, (), what)]) from None


def _without(data: Any, locs: list[Loc]) -> Any:
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
    path = Path(path)
    source = str(path)
    data, lines = parse_yaml(read_text(path), source)
    try:
        manifest = validate_data(data, source, lines)
        problems: list[Problem] = []
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
        raise ManifestError(sorted(problems, key=lambda p: p.line))
    return manifest
