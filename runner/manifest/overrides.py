"""Command-line overrides: `--set PATH=VALUE` and `--seeds`, applied to the manifest's data
before it is validated, so they go through exactly the schema and checks the file does.

A path is Hydra's dotted path into the manifest (`algo.params.n_steps`); the value is typed by
YAML (`64` an int, `[1, 2]` a list, `{a: 1}` a mapping, `null`). Under `matrix`, `expect` and
`bench.sweep`, whose keys are themselves dotted paths, the rest of the path is one key:
`matrix.parallel.workers=[1,4]`. A problem an override causes names the override, not a line of
the file (`attribute`).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel

from runner.errors import UserInputError
from runner.manifest.problems import Loc, Problem

# Mappings whose keys are dotted manifest paths: the rest of an override's path is one key.
DOTTED_KEYS = {("matrix",), ("expect",), ("bench", "sweep")}


@dataclass(frozen=True)
class Override:
    """One change to the manifest's data: `label` is how the user wrote it (for messages)."""

    label: str
    path: tuple[str, ...]
    value: Any


def _split(path: str) -> tuple[str, ...]:
    parts = path.split(".")
    for n in range(1, len(parts)):
        if tuple(parts[:n]) in DOTTED_KEYS:
            return (*parts[:n], ".".join(parts[n:]))
    return tuple(parts)


def parse_set(text: str) -> Override:
    """`PATH=VALUE` as an Override; UserInputError naming it when it is not one."""
    label = f"--set {text}"
    path, eq, raw = text.partition("=")
    path = path.strip()
    if not eq or not path or any(not p for p in path.split(".")):
        raise UserInputError(f"{label}: expected PATH=VALUE, such as algo.params.n_steps=64")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        what = getattr(exc, "problem", None) or "not valid YAML"
        raise UserInputError(f"{label}: the value is not valid YAML ({what})") from None
    problem = path_problem(_split(path))
    if problem:
        raise UserInputError(f"{label}: {problem}")
    return Override(label, _split(path), value)


def parse_seeds(text: str, option: str = "--seeds") -> list[int]:
    """`0,3` (these seeds) or `5` (a count: seeds 0..4); UserInputError on anything else."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [int(p) for p in parts if p]
    except ValueError:
        raise UserInputError(
            f"{option}: expected comma-separated seeds (0,3) or a count (5), got {text!r}"
        ) from None
    if not values:
        raise UserInputError(f"{option}: expected at least one seed, got {text!r}")
    if len(parts) == 1:  # a count
        if values[0] < 1:
            raise UserInputError(f"{option}: expected a positive count of seeds, got {text!r}")
        return list(range(values[0]))
    negative = [s for s in values if s < 0]
    if negative:
        raise UserInputError(f"{option}: seeds must be non-negative, got {negative[0]}")
    repeated = sorted({s for s in values if values.count(s) > 1})
    if repeated:
        raise UserInputError(f"{option}: seed {repeated[0]} is given more than once")
    return values


def seeds_override(text: str) -> Override:
    return Override(f"--seeds {text}", ("seeds",), parse_seeds(text))


def build(sets: Sequence[str] = (), seeds: str | None = None) -> list[Override]:
    """The command line's overrides, in order (`--seeds` last: it wins over `--set seeds=`)."""
    out = [parse_set(s) for s in sets]
    return out + ([seeds_override(seeds)] if seeds else [])


def _models(annotation: Any) -> list[type[BaseModel]]:
    kinds = get_args(annotation) if get_origin(annotation) in (Union, type(int | None)) else ()
    kinds = kinds or (annotation,)
    return [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]


def path_problem(path: tuple[str, ...]) -> str | None:
    """Why `path` names no field of the manifest (with a suggestion), or None if it does.
    Below a free-form mapping (env.kwargs, algo.params, matrix ...) any key is allowed."""
    from runner.manifest.schema import Manifest

    model: type[BaseModel] = Manifest
    for i, part in enumerate(path):
        fields = model.model_fields
        if part not in fields:
            where = ".".join(path[:i]) or "the manifest"
            close = difflib.get_close_matches(part, list(fields), n=1)
            hint = f"; did you mean '{'.'.join((*path[:i], *close))}'?" if close else ""
            return f"'{'.'.join(path)}' does not exist: {where} has no field '{part}'{hint}"
        annotation = fields[part].annotation
        inner = _models(annotation)
        if not inner:
            if i + 1 < len(path) and not _is_mapping(annotation):
                here = ".".join(path[: i + 1])
                return f"{here} is a single value, it has no field '{path[i + 1]}'"
            return None  # a leaf or a free-form mapping: the schema checks the value
        model = inner[0]
    return None


def _is_mapping(annotation: Any) -> bool:
    kinds = get_args(annotation) if get_origin(annotation) in (Union, type(int | None)) else ()
    return any(k is dict or get_origin(k) is dict for k in (kinds or (annotation,)))


def apply(data: Any, overrides: Sequence[Override]) -> Any:
    """A copy of the manifest's data with each override set in turn; a mapping set over a
    mapping replaces it (as in the file). UserInputError when a parent is not a mapping."""
    if not overrides or not isinstance(data, dict):
        return data
    data = copy.deepcopy(data)
    for o in overrides:
        node = data
        for i, part in enumerate(o.path[:-1]):
            child = node.setdefault(part, {})
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                where = ".".join(o.path[: i + 1])
                raise UserInputError(
                    f"{o.label}: {where} is {type(child).__name__} in the manifest, not a "
                    f"mapping; set {where} as a whole"
                )
            node = child
        node[o.path[-1]] = copy.deepcopy(o.value)
    return data


def _under(loc: Loc, prefix: tuple[str, ...]) -> bool:
    return tuple(loc[: len(prefix)]) == prefix


def attribute(problems: list[Problem], overrides: Sequence[Override]) -> list[Problem]:
    """Problems at (or inside, or a check on the mapping holding) an overridden field name the
    override instead of a line of the file; the rest are unchanged. The last override of a
    path wins, as when applying. A check on the mapping is dropped when the override already
    has a problem of its own (pydantic reports a union's other branch there too)."""
    out: list[Problem] = []
    above: list[tuple[Problem, Override]] = []
    for p in problems:
        inside = [o for o in overrides if p.path and _under(p.path, o.path)]
        if inside:
            o = inside[-1]
            rest = tuple(p.path[len(o.path) :])
            out.append(dataclasses.replace(p, file=o.label, line=0, path=rest))
            continue
        holding = [o for o in overrides if p.path and _under(o.path, p.path)]
        if holding:
            above.append((p, holding[-1]))
        else:
            out.append(p)
    named = {p.file for p in out}
    for p, o in above:
        if o.label not in named:
            out.append(dataclasses.replace(p, file=o.label, line=0, path=()))
            named.add(o.label)
    return out


def labels(overrides: Sequence[Override]) -> list[str]:
    return [o.label for o in overrides]


def cli_args(overrides: Sequence[Override]) -> list[str]:
    """The overrides as command-line arguments again (`--set=PATH=VALUE`, `--seeds=0,3`): for a
    run inside an image, and the dry construction's child process."""
    return ["=".join(o.label.split(" ", 1)) for o in overrides]


def from_args(argv: Sequence[str]) -> list[Override]:
    """`cli_args` read back."""
    sets = [a.removeprefix("--set=") for a in argv if a.startswith("--set=")]
    seeds = next((a.removeprefix("--seeds=") for a in argv if a.startswith("--seeds=")), None)
    return build(sets, seeds)


def record(overrides: Sequence[Override], argv: Sequence[str]) -> dict[str, Any]:
    """What resolved.yaml and provenance.json keep: the command line, and each override as
    written (`from_record` turns them back into overrides for a resume or a reproduction)."""
    sets = [o.label.removeprefix("--set ") for o in overrides if o.label.startswith("--set ")]
    seeds = next(
        (
            o.label.removeprefix("--seeds ")
            for o in overrides
            if o.path == ("seeds",) and o.label.startswith("--seeds ")
        ),
        None,
    )
    return {"argv": list(argv), "set": sets, "seeds": seeds}


def from_record(rec: Any) -> list[Override]:
    """The overrides a run recorded (none for a run made before overrides existed)."""
    if not isinstance(rec, dict):
        return []
    return build(rec.get("set") or [], rec.get("seeds"))


def of_run(run_dir: Path) -> list[Override]:
    """The --set and --seeds a run directory was made with (from its resolved.yaml)."""
    from runner.manifest.parse import read_yaml

    path = run_dir / "resolved.yaml"
    if not path.is_file():
        return []
    res, _ = read_yaml(path)
    return from_record(res.get("command_line") if isinstance(res, dict) else None)
