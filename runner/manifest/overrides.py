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

from pydantic import BaseModel

from runner.errors import ManifestError, UserInputError
from runner.manifest.parse import parse_yaml
from runner.manifest.problems import Loc, Problem, shorten
from runner.manifest.seeds import parse_num_seeds, parse_seeds, seeds_text

# Mappings whose keys are dotted manifest paths: the rest of an override's path is one key.
DOTTED_KEYS = {("matrix",), ("expect",), ("bench", "sweep"), ("tune", "space")}


@dataclass(frozen=True)
class Override:
    """One change to the manifest's data: `label` is how the user wrote it (recorded in full;
    `shown`, its start, is what error lines echo)."""

    label: str
    path: tuple[str, ...]
    value: Any

    @property
    def shown(self) -> str:
        return shorten(self.label)


def _split(path: str) -> tuple[str, ...]:
    parts = path.split(".")
    for n in range(1, len(parts)):
        if tuple(parts[:n]) in DOTTED_KEYS:
            return (*parts[:n], ".".join(parts[n:]))
    return tuple(parts)


def _value(raw: str, shown: str) -> Any:
    """The YAML value of a `--set`, read with the manifest's bounded loader (alias bombs, depth,
    duplicate keys, NaN and infinity refused as in a file); problems name the override."""
    if not raw.strip():
        return None
    try:
        value, _ = parse_yaml(raw, shown)
    except ManifestError as exc:
        raise ManifestError([dataclasses.replace(p, line=0) for p in exc.problems]) from None
    return value


def parse_set(text: str) -> Override:
    """`PATH=VALUE` as an Override; UserInputError naming it when it is not one."""
    label = f"--set {text}"
    shown = shorten(label)
    path, eq, raw = text.partition("=")
    path = path.strip()
    # a path with a line break or another control character names no field (and would split
    # the one-line error it gets)
    if not eq or not path or not path.isprintable() or any(not p for p in path.split(".")):
        raise UserInputError(f"{shown}: expected PATH=VALUE, such as algo.params.n_steps=64")
    problem = path_problem(_split(path))
    if problem:
        raise UserInputError(f"{shown}: {problem}")
    return Override(label, _split(path), _value(raw, shown))


def build(
    sets: Sequence[str] = (), seeds: str | None = None, num_seeds: str | None = None
) -> list[Override]:
    """The command line's overrides, in order (`--seeds` last: it wins over `--set seeds=`)."""
    if seeds is not None and num_seeds is not None:
        raise UserInputError("--seeds and --num-seeds: give one of them, not both")
    out = [parse_set(s) for s in sets]
    if seeds is not None:
        out.append(Override(f"--seeds {seeds}", ("seeds",), parse_seeds(seeds)))
    if num_seeds is not None:
        out.append(Override(f"--num-seeds {num_seeds}", ("seeds",), parse_num_seeds(num_seeds)))
    return out


def _models(annotation: Any) -> list[type[BaseModel]]:
    kinds = get_args(annotation) if get_origin(annotation) in (Union, type(int | None)) else ()
    kinds = kinds or (annotation,)
    return [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]


def path_problem(path: tuple[str, ...]) -> str | None:
    """Why `path` names no field of the manifest (with a suggestion), or None if it does.
    Below a free-form mapping (env.kwargs, algo.params, matrix ...) any key is allowed."""
    from runner.manifest.schema import Manifest, fields_of

    model: type[BaseModel] = Manifest
    for i, part in enumerate(path):
        fields = fields_of(model)
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
                    f"{o.shown}: {where} is {type(child).__name__} in the manifest, not a "
                    f"mapping; set {where} as a whole"
                )
            node = child
        node[o.path[-1]] = copy.deepcopy(o.value)
    return data


def _matrix_paths(matrix: Any) -> list[tuple[str, str, list[Any]]]:
    """(dotted path, which matrix entry varies it, the values it sets) for each path the matrix
    varies."""
    if isinstance(matrix, dict):
        return [
            (str(k), f"matrix.{k}", v if isinstance(v, list) else [v]) for k, v in matrix.items()
        ]
    if isinstance(matrix, list):
        return [
            (str(k), f"matrix[{i}]", [v])
            for i, e in enumerate(matrix)
            if isinstance(e, dict)
            for k, v in e.items()
        ]
    return []


def _holds(value: Any, rest: list[str]) -> bool:
    for part in rest:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def _replaced(mine: str, path: str, values: list[Any]) -> bool:
    """Whether a matrix path that sets `values` at `path` replaces the value `mine` names. A
    mapping merges into the one already there (`algo.params: {n_steps: 64}` keeps the other
    params), so it replaces only what it holds."""
    if path == mine:
        return True
    if mine.startswith(path + "."):
        rest = mine[len(path) + 1 :].split(".")
        return any(not isinstance(v, dict) or _holds(v, rest) for v in values)
    return False


def matrix_problems(data: Any, overrides: Sequence[Override]) -> list[Problem]:
    """A `--set` of a value the matrix varies would be replaced in every variant yet recorded as
    if used: refused, naming the matrix entry to change instead."""
    matrix = data.get("matrix") if isinstance(data, dict) else None
    out = []
    for o in overrides:
        if not o.label.startswith("--set ") or o.path[0] in {k[0] for k in DOTTED_KEYS}:
            continue
        mine = ".".join(o.path)
        for path, entry, values in _matrix_paths(matrix):
            inside = path.startswith(mine + ".") and _holds(
                o.value, path[len(mine) + 1 :].split(".")
            )
            if _replaced(mine, path, values) or inside:
                message = (
                    f"the matrix varies {path} ({entry}): every variant replaces this value, so "
                    f"no unit would use it; change {entry} instead"
                )
                out.append(Problem(o.shown, 0, (), message))
                break
    return out


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
            out.append(dataclasses.replace(p, file=o.shown, line=0, path=rest))
            continue
        holding = [o for o in overrides if p.path and _under(o.path, p.path)]
        if holding:
            above.append((p, holding[-1]))
        else:
            out.append(p)
    named = {p.file for p in out}
    for p, o in above:
        if o.shown not in named:
            out.append(dataclasses.replace(p, file=o.shown, line=0, path=()))
            named.add(o.shown)
    return out


def labels(overrides: Sequence[Override]) -> list[str]:
    return [o.label for o in overrides]


def _is_seeds(o: Override) -> bool:
    return o.path == ("seeds",) and o.label.startswith(("--seeds ", "--num-seeds "))


def cli_args(overrides: Sequence[Override]) -> list[str]:
    """The overrides as command-line arguments again (`--set=PATH=VALUE`, `--seeds=0-3`): for a
    run inside an image, and the dry construction's child process."""
    return [
        f"--seeds={seeds_text(o.value)}" if _is_seeds(o) else "=".join(o.label.split(" ", 1))
        for o in overrides
    ]


def from_args(argv: Sequence[str]) -> list[Override]:
    """`cli_args` read back."""
    sets = [a.removeprefix("--set=") for a in argv if a.startswith("--set=")]
    seeds = next((a.removeprefix("--seeds=") for a in argv if a.startswith("--seeds=")), None)
    return build(sets, seeds)


def record(overrides: Sequence[Override], argv: Sequence[str]) -> dict[str, Any]:
    """What resolved.yaml and provenance.json keep: the command line, each --set as written and
    the seeds --seeds or --num-seeds chose, as a list (`from_record` turns them back into
    overrides for a resume or a reproduction)."""
    sets = [o.label.removeprefix("--set ") for o in overrides if o.label.startswith("--set ")]
    seeds = next((list(o.value) for o in overrides if _is_seeds(o)), None)
    return {"argv": list(argv), "set": sets, "seeds": seeds}


def _recorded_seeds(value: Any) -> list[Override]:
    """A run's recorded seeds: a list (this version), or the text of the old `--seeds`, where a
    bare number was a count (`5`: seeds 0 to 4) and `5,` was seed 5."""
    if value is None:
        return []
    if isinstance(value, list):
        text = seeds_text(value) if all(type(s) is int for s in value) else ""
        return [Override(f"--seeds {text}", ("seeds",), parse_seeds(text))]
    text = str(value).strip()
    if text.isascii() and text.isdigit():
        return [Override(f"--num-seeds {text}", ("seeds",), parse_num_seeds(text))]
    return [Override(f"--seeds {text}", ("seeds",), parse_seeds(text))]


def from_record(rec: Any) -> list[Override]:
    """The overrides a run recorded (none for a run made before overrides existed)."""
    if not isinstance(rec, dict):
        return []
    return build(rec.get("set") or []) + _recorded_seeds(rec.get("seeds"))


def of_run(run_dir: Path) -> list[Override]:
    """The --set and --seeds a run directory was made with (from its resolved.yaml)."""
    from runner.manifest.parse import read_yaml

    path = run_dir / "resolved.yaml"
    if not path.is_file():
        return []
    res, _ = read_yaml(path)
    return from_record(res.get("command_line") if isinstance(res, dict) else None)
