"""Stage 1 of reading a manifest: bounded, line-aware YAML parsing.

Every YAML file the runner reads as input (a manifest, a run's resolved.yaml) goes through
`parse_yaml`, which refuses what a hostile or careless file could do to a plain `yaml.safe_load`:
alias bombs (a few hundred bytes expanding to billions of values), nesting deep enough to
exhaust the stack, files too large to be a manifest, duplicate keys (YAML keeps the last one
silently), keys that are lists or mappings, and NaN or infinity anywhere. Each refusal is a
`Problem` naming the file, the line and the field.

Numbers are read as YAML 1.2 (and JSON) read them: PyYAML follows YAML 1.1, where `3e-4`, `1e6`,
`1.5e3` and `-.5` are text, so that every researcher's `learning_rate: 3e-4` would be refused as
"not a number". Those forms are numbers here (`NUMBER_TAG`); one written without a decimal point
whose value is whole (`1e6`, `2E4`) is an integer, so it fits integer fields (`train.timesteps`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml

from runner.errors import ManifestError
from runner.manifest.problems import Loc, Problem, shorten

MAX_BYTES = 1_000_000  # a large sweep manifest is a few kB
MAX_DEPTH = 50  # nesting of mappings and lists, aliases expanded
MAX_NODES = 100_000  # values after alias expansion
FLOAT_TAG = "tag:yaml.org,2002:float"
MERGE_TAG = "tag:yaml.org,2002:merge"
# The numbers YAML 1.2's core schema reads that YAML 1.1 reads as text (an exponent without a
# point or without a sign, a sign before a leading point); plain integers resolve as ints first.
NUMBER_TAG = "tag:rlcrate,2024:number"
NUMBER_12 = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
MAX_INT_DIGITS = 19  # `1e6` as an int up to about int64; beyond, it stays the float it names

Lines = dict[Loc, int]


def yaml12_number(text: str) -> int | float:
    """A NUMBER_12 scalar's value: an int when written without a point and with an exponent of
    0 or more (`1e6`, `2E+4`), computed exactly; a float otherwise (`3e-4`, `1.5e3`)."""
    mantissa, _, exponent = text.lower().partition("e")
    if "." not in mantissa and exponent and not exponent.startswith("-"):
        digits = mantissa.lstrip("+-").lstrip("0") or "0"
        if len(digits) + int(exponent) <= MAX_INT_DIGITS:
            return int(mantissa) * int(10 ** int(exponent))
    return float(text)


class _Loader(yaml.SafeLoader):
    """SafeLoader, with YAML 1.2's numbers; the bounds are checked on its events and nodes
    before anything is built."""

    def construct_number(self, node: yaml.ScalarNode) -> int | float:
        return yaml12_number(self.construct_scalar(node))


class _Dumper(yaml.SafeDumper):
    """SafeDumper that quotes a string _Loader would read as a number (`"3e-4"`)."""


for _cls in (_Loader, _Dumper):
    _cls.add_implicit_resolver(NUMBER_TAG, NUMBER_12, list("-+0123456789."))
_Loader.add_constructor(NUMBER_TAG, _Loader.construct_number)


def dump_yaml(data: Any) -> str:
    """YAML text that `parse_yaml` reads back as `data` (keys in their order): every YAML file
    rlcrate writes (resolved.yaml, best.yaml, a rerun's manifest) is written with it."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def _fail(source: str, line: int, path: Loc, message: str) -> ManifestError:
    return ManifestError([Problem(source, line, path, message)])


def _yaml_problem(exc: yaml.YAMLError, source: str, text: str) -> ManifestError:
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow, e.g. \x08
        line = text.count("\n", 0, exc.position) + 1
        c = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        return _fail(source, line, (), f"not valid YAML: character U+{c:04X} is not allowed")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        what = shorten((exc.problem or "invalid YAML").strip(), 160)  # it may quote the text
        if "could not determine a constructor" in str(exc):
            what = f"tag not allowed (manifests are plain YAML; {what})"
        return _fail(source, mark.line + 1 if mark else 0, (), what)
    return _fail(source, 0, (), f"not valid YAML ({exc})")


def _check_events(text: str, source: str) -> None:
    """Depth of the text itself, from the event stream (iterative: no recursion to exhaust)."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _fail(
                    source,
                    event.start_mark.line + 1 if event.start_mark else 0,
                    (),
                    f"nested more than {MAX_DEPTH} levels deep; a manifest needs a few",
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _expanded(node: yaml.Node, memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values, depth) of `node` with every alias expanded, in time linear in the text.

    An alias points at a node already seen in document order, so its size is in `memo`.
    """
    key = id(node)
    if key not in memo:
        size, depth = 1, 0
        for child in _children(node):
            s, d = _expanded(child, memo)
            size, depth = min(size + s, MAX_NODES + 1), max(depth, d)
        memo[key] = (size, depth + 1 if isinstance(node, yaml.CollectionNode) else 0)
    return memo[key]


class _Walk:
    """Record the line of every key path; collect duplicate keys, unhashable keys, NaN/inf."""

    def __init__(self, loader: _Loader, source: str):
        self.loader, self.source = loader, source
        self.lines: Lines = {}
        self.problems: list[Problem] = []

    def __call__(self, node: yaml.Node, path: Loc) -> None:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            self.mapping(node, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.lines[path + (i,)] = item.start_mark.line + 1
                self(item, path + (i,))
        elif isinstance(node, yaml.ScalarNode) and node.tag in (FLOAT_TAG, NUMBER_TAG):
            self.number(node, path)

    def mapping(self, node: yaml.MappingNode, path: Loc) -> None:
        first: dict[Any, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == MERGE_TAG:
                self(value_node, path)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(line, path, "a key must be a plain value, not a list or mapping")
                continue
            key = key_node.value
            if key in first:
                self.problem(
                    line,
                    path + (key,),
                    f"duplicate key (first on line {first[key]}); YAML would silently keep "
                    "only the last",
                )
            first.setdefault(key, line)
            self.lines[path + (key,)] = line
            self(value_node, path + (key,))

    def number(self, node: yaml.ScalarNode, path: Loc) -> None:
        try:
            value = (
                self.loader.construct_number(node)
                if node.tag == NUMBER_TAG
                else self.loader.construct_yaml_float(node)
            )
        except (ValueError, OverflowError):
            return
        if not math.isfinite(value):
            self.problem(
                node.start_mark.line + 1, path, f"expected a finite number, got {node.value!r}"
            )

    def problem(self, line: int, path: Loc, message: str) -> None:
        self.problems.append(Problem(self.source, line, path, message))


def parse_yaml(text: str, source: str) -> tuple[Any, Lines]:
    """Safe-load YAML text within the bounds above; return the data and each key path's line.

    Raises ManifestError whose problems are `Problem` values.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise _fail(
            source,
            0,
            (),
            f"{size / 1e6:.1f} MB is too large for a manifest (the limit "
            f"is {MAX_BYTES / 1e6:.0f} MB)",
        )
    try:
        _check_events(text, source)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None, {}
            values, depth = _expanded(node, {})
            if values > MAX_NODES or depth > MAX_DEPTH:
                raise _fail(
                    source,
                    0,
                    (),
                    f"expands to more than {MAX_NODES:,} values or "
                    f"{MAX_DEPTH} levels (YAML aliases?); a manifest is far smaller",
                )
            walk = _Walk(loader, source)
            walk(node, ())
            if walk.problems:
                raise ManifestError(walk.problems)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_problem(exc, source, text) from None
    except RecursionError:
        raise _fail(source, 0, (), "nested too deeply to read") from None
    return data, walk.lines


def read_text(path: Path) -> str:
    """The file's text, or a ManifestError naming it (missing, a folder, unreadable, too large)."""
    try:
        with open(path, "rb") as f:  # bounded even for /dev/zero or a file still growing
            raw = f.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise _fail(
                str(path), 0, (), f"larger than {MAX_BYTES / 1e6:.0f} MB: too large for a manifest"
            )
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise _fail(str(path), 0, (), "no such file") from None
    except IsADirectoryError:
        raise _fail(str(path), 0, (), "is a folder, expected a YAML file") from None
    except (UnicodeDecodeError, PermissionError, OSError) as exc:
        raise _fail(str(path), 0, (), f"cannot read it ({exc.__class__.__name__})") from None


def read_yaml(path: Path) -> tuple[Any, Lines]:
    """Read and parse one YAML file with the bounds above."""
    path = Path(path)
    return parse_yaml(read_text(path), str(path))
