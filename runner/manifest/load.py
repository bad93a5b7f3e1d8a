"""Parse -> validate, as separate stages, collecting every problem before reporting (the checks
that consult backends and trainers come after, in `runner.checks.load`).

Each stage (parse: runner.manifest.parse) gives `Problem` values (file, line, field path,
message); the CLI prints them one per line as `FILE:LINE: dotted.path: message`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runner.errors import ManifestError
from runner.manifest.overrides import Override, attribute, matrix_problems
from runner.manifest.overrides import apply as apply_overrides
from runner.manifest.parse import parse_yaml, read_text  # the parse stage: bounded YAML
from runner.manifest.problems import Lines, Loc, Problem, at, validation_problems
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


# Fills in `algo.defaults` (rl-zoo3's values, or an Isaac Lab task's) under the parsed manifest:
# (data, path -> source) of the values it supplied; ValueError (one line) when it cannot. The
# trainers own it (runner.trainers.defaults); the layers above pass it in.
Defaults = Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, str]]]


def _wants_defaults(data: Any) -> bool:
    algo = data.get("algo") if isinstance(data, dict) else None
    return isinstance(algo, dict) and algo.get("defaults") is not None


def given(data: Any, path: tuple[str, ...]) -> bool:
    """Whether the manifest's data sets this dotted path (a default source never overrides it)."""
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def value_sources(m: Manifest, data: Any, supplied: dict[str, str]) -> dict[str, str]:
    """Where each algo value (and each value the defaults supplied, nested ones included) came
    from: the defaults' source, `manifest`, or `rlcrate default`."""
    paths: list[tuple[str, ...]] = [("algo", k) for k in m.algo.model_dump() if k != "params"]
    paths += [("algo", "params", k) for k in m.algo.params]
    out = {}
    for p in paths:
        key = ".".join(p)
        below = [v for k, v in supplied.items() if k.startswith(key + ".")]
        out[key] = supplied.get(key) or (
            "manifest" if given(data, p) else below[0] if below else "rlcrate default"
        )
    out.update(supplied)  # nested values the defaults supplied (an RSL-RL config's leaves)
    return out


def read_manifest(
    path: Path, defaults: Defaults | None = None, overrides: Sequence[Override] = ()
) -> tuple[Manifest, list[Problem], Lines]:
    """Parse and validate a manifest: the manifest, the schema's problems and each field's line.
    Paths in it are as written (`runner.backends.anchor_paths` anchors them at its folder).

    When the schema rejects some fields, the manifest comes back with defaults in place of the
    rejected values, so the checks (`runner.checks.load`) can still run on the rest and one
    `validate` shows every problem at once. `overrides` (the command line's --set and --seeds)
    change the data first, and a problem they cause names them; `defaults` then fills in
    `algo.defaults: zoo` (so `--set algo.defaults=zoo` works too).
    """
    source = str(path)
    data, lines = parse_yaml(read_text(path), source)
    data = apply_overrides(data, overrides)
    varied = matrix_problems(data, overrides)
    if varied:
        raise ManifestError(varied)
    as_written, supplied = data, dict[str, str]()
    if _wants_defaults(data) and defaults is not None:
        try:
            data, supplied = defaults(data)
        except ValueError as exc:
            raise ManifestError([at(source, lines, ("algo", "defaults"), str(exc))]) from None
    try:
        manifest = validate_data(data, source, lines)
        problems: list[Problem] = []
    except SchemaError as exc:
        problems = exc.problems
        try:
            manifest = Manifest.model_validate(_without(data, exc.locs))
        except (ValidationError, TypeError):
            raise ManifestError(attribute(exc.problems, overrides)) from None
    manifest._sources = value_sources(manifest, as_written, supplied)
    return manifest, problems, lines


def load_unchecked(
    path: str | Path, defaults: Defaults | None = None, overrides: Sequence[Override] = ()
) -> Manifest:
    """Parse and validate a manifest without the checks that consult backends and trainers (for
    the layers below them); raise ManifestError listing every schema problem."""
    manifest, problems, _ = read_manifest(Path(path), defaults, overrides)
    if problems:
        raise ManifestError(sorted(attribute(problems, overrides), key=lambda p: p.line))
    return manifest
