"""Parse -> validate, as separate stages, collecting every problem before reporting (the checks
that consult backends and trainers come after, in `runner.checks.load`).

Each stage (parse: runner.manifest.parse) gives `Problem` values (file, line, field path,
message); the CLI prints them one per line as `FILE:LINE: dotted.path: message`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.errors import ManifestError
from runner.manifest.parse import parse_yaml, read_text  # the parse stage: bounded YAML
from runner.manifest.problems import Lines, Loc, Problem, validation_problems
from runner.manifest.schema import Manifest

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


# Supplies values under the parsed manifest before validation (`algo.defaults: task`, set by the
# checks layer, which may consult backends): (data, source, lines) -> (data, dotted path -> source)
Prepare = Callable[[Any, str, Lines], tuple[Any, dict[str, str]]]


def read_manifest(
    path: Path, prepare: Prepare | None = None
) -> tuple[Manifest, list[Problem], Lines]:
    """Parse and validate a manifest: the manifest, the schema's problems and each field's line.

    When the schema rejects some fields, the manifest comes back with defaults in place of the
    rejected values, so the checks (`runner.checks.load`) can still run on the rest and one
    `validate` shows every problem at once.
    """
    source = str(path)
    data, lines = parse_yaml(read_text(path), source)
    sources: dict[str, str] = {}
    if prepare is not None:
        data, sources = prepare(data, source, lines)
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
    manifest._sources = sources
    return manifest, problems, lines


def load_unchecked(path: str | Path) -> Manifest:
    """Parse and validate a manifest without the checks that consult backends and trainers (for
    the layers below them); raise ManifestError listing every schema problem."""
    manifest, problems, _ = read_manifest(Path(path))
    if problems:
        raise ManifestError(sorted(problems, key=lambda p: p.line))
    return manifest
