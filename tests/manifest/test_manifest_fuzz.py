"""Property-based fuzz (Hypothesis) of the manifest pipeline as `rlcrate validate` runs it (parse,
schema, checks: `runner.checks.load.load_manifest`) and of `--set`. Whatever a file or an
override holds, the answer is a manifest or the project's own problem (ManifestError, one line
per problem naming the file or the override; UserInputError, one line): never another exception.
A `--set PATH=VALUE` puts the value, as YAML reads it, into the parsed manifest. In process, no
training: a few seconds in all."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runner.checks.load import load_manifest
from runner.errors import ManifestError, UserInputError
from runner.manifest.overrides import Override, parse_set
from runner.manifest.parse import parse_yaml
from runner.manifest.problems import shorten
from runner.manifest.schema import Manifest
from tests.helpers import tiny_manifest

# No per-example deadline (a loaded machine says nothing about the parser); few examples each:
# the whole module stays within seconds. The file is rewritten in each example, so the
# function-scoped tmp_path is fine to share between examples.
FUZZ = settings(
    deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats()  # NaN and infinity included: refused as in any file
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# Where a change goes: every field of the tiny manifest, fields it leaves out, one nobody knows.
PATHS = st.sampled_from([
    ("rlcrate",), ("name",), ("image",), ("executor",), ("env",), ("env", "backend"),
    ("env", "id"), ("env", "kwargs"), ("env", "kwargs", "sutton_barto_reward"), ("parallel",),
    ("parallel", "envs"), ("parallel", "workers"), ("parallel", "mode"), ("algo",),
    ("algo", "name"), ("algo", "trainer"), ("algo", "params"), ("algo", "params", "n_steps"),
    ("algo", "params", "learning_rate"), ("algo", "policy"), ("train",), ("train", "timesteps"),
    ("train", "checkpoint_every"), ("train", "init_from"), ("eval",), ("eval", "episodes"),
    ("eval", "reward_levels"), ("seeds",), ("matrix",), ("expect",), ("track",), ("bench",),
    ("tune",), ("nonsense",),
])  # fmt: skip


def _answer(path: Path, overrides: list[Override] | tuple[()] = ()) -> Manifest | None:
    """The pipeline's answer: the manifest, or None after checking that its problem is ours and
    says where, one line each."""
    try:
        return load_manifest(path, overrides=overrides)
    except ManifestError as exc:
        _ours(exc, [str(path), *(o.shown for o in overrides)])
        return None
    except UserInputError as exc:  # an override over a field that is not a mapping
        assert str(exc).strip() and "\n" not in str(exc).strip(), str(exc)
        return None


def _ours(exc: ManifestError, files: list[str]) -> None:
    """One line per problem, each naming one of `files` (the manifest or an override)."""
    assert exc.problems, "a ManifestError with no problem in it"
    for p in exc.problems:
        assert "\n" not in str(p), str(p)
        assert p.file in files, (p, files)


def _set(data: dict, path: tuple[str, ...], value: object) -> dict:
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value
    return data


def _drop(data: dict, path: tuple[str, ...]) -> dict:
    node: object = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)
    return data


@FUZZ
@given(st.lists(st.tuples(PATHS, st.none() | VALUES), min_size=1, max_size=3))
def test_a_manifest_with_any_field_changed_is_a_manifest_or_our_problem(tmp_path, changes):
    """The tiny manifest with fields set to any YAML value (None: the field dropped)."""
    data = tiny_manifest()
    for where, value in changes:
        data = _drop(data, where) if value is None else _set(data, where, value)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    _answer(path)


VALID_TEXT = yaml.safe_dump(tiny_manifest(), sort_keys=False)


@FUZZ
@given(st.lists(
    st.tuples(st.integers(0, len(VALID_TEXT)), st.integers(0, 3), st.text(max_size=4)),
    min_size=1, max_size=4,
))  # fmt: skip
@example(edits=[(0, 0, "\x08")])  # found by this test: YAML's reader error was two lines
def test_a_manifest_edited_character_by_character_is_a_manifest_or_our_problem(tmp_path, edits):
    """The tiny manifest's text with a few characters cut and others typed in: broken
    indentation, aliases, tags, unclosed quotes, tabs, duplicate keys."""
    text = VALID_TEXT
    for at, cut, typed in edits:
        at = min(at, len(text))
        text = text[:at] + typed + text[at + cut :]
    path = tmp_path / "m.yaml"
    path.write_text(text)
    _answer(path)


@FUZZ
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_are_a_manifest_or_our_problem(tmp_path, content):
    path = tmp_path / "m.yaml"
    path.write_bytes(content)
    assert _answer(path) is None  # nothing this short is a whole manifest


@pytest.fixture
def tiny_file(tmp_path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(VALID_TEXT)
    return path


def _with(path: Path, text: str) -> Manifest | None:
    """The manifest at `path` with `--set text`; None when refused (as ours, one line)."""
    try:
        override = parse_set(text)
    except ManifestError as exc:  # its value as YAML: one line per problem, as in a file
        _ours(exc, [shorten(f"--set {text}")])
        return None
    except UserInputError as exc:
        assert "\n" not in str(exc).strip(), str(exc)
        return None
    return _answer(path, [override])


@FUZZ
@given(st.text(max_size=40))
@example(text="\n")  # found by this test: the override echoed with its line break
@example(text="0\n0=")  # found by this test: a path with a line break, echoed in the error
def test_any_set_argument_is_an_override_or_our_problem(tiny_file, text):
    _with(tiny_file, text)


@FUZZ
@given(PATHS, VALUES)
@example(where=("rlcrate",), value={"\n": math.inf})  # found by it: a key's line break
@example(where=("rlcrate",), value=[math.inf, math.inf])  # two problems, a line each
def test_a_set_of_any_value_at_any_field_is_a_manifest_or_our_problem(tiny_file, where, value):
    flow = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    flow = flow.removesuffix("\n...").removesuffix("...").strip()
    _with(tiny_file, f"{'.'.join(where)}={flow}")


def _float_forms(x: float) -> list[str]:
    """Ways a person writes a float: repr, exponent forms (`3e-4`, `3.000e-04`, `3E-4`)."""
    out = [repr(x), f"{x:e}", f"{x:E}", f"{x:.3e}".replace("e+", "e"), f"{x:g}"]
    return [t for t in out if math.isfinite(float(t))]


@FUZZ
@given(st.floats(min_value=0, max_value=1e300, allow_nan=False) | st.sampled_from([3e-4, 1e-5]))
def test_a_set_float_lands_in_the_manifest(tiny_file, x):
    for text in _float_forms(x):
        m = _with(tiny_file, f"algo.params.learning_rate={text}")
        assert m is not None, text
        assert m.algo.params["learning_rate"] == float(text), text


@FUZZ
@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=0, max_value=3))
def test_a_set_integer_lands_in_the_manifest_written_with_or_without_an_exponent(
    tiny_file, mantissa, exponent
):
    for text in (str(mantissa * 10**exponent), f"{mantissa}e{exponent}"):
        m = _with(tiny_file, f"eval.episodes={text}")
        assert m is not None and m.eval.episodes == mantissa * 10**exponent, text
        assert type(m.eval.episodes) is int


@FUZZ
@given(st.booleans(), st.sampled_from([str.lower, str.title, str.upper]))
def test_a_set_boolean_lands_in_the_manifest(tiny_file, flag, case):
    m = _with(tiny_file, f"eval.deterministic={case(str(flag))}")
    assert m is not None and m.eval.deterministic is flag


@FUZZ
@given(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True))
def test_a_set_string_lands_in_the_manifest_as_yaml_reads_it(tiny_file, text):
    """A name that YAML reads as a string is that name; one it reads as a number or a boolean
    (`1e3`, `true`) is refused as a name written so in the file is, naming the --set."""
    m = _with(tiny_file, f"name={text}")
    as_yaml = parse_yaml(text, "v")[0]
    if isinstance(as_yaml, str):
        assert m is not None and m.name == text
    else:
        assert m is None


@FUZZ
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=5),
    st.lists(st.integers(min_value=0, max_value=2**31), max_size=5, min_size=1, unique=True),
)
def test_a_set_list_lands_in_the_manifest(tiny_file, levels, seeds):
    m = _with(tiny_file, f"eval.reward_levels=[{', '.join(map(repr, levels))}]")
    assert m is not None and m.eval.reward_levels == levels
    m = _with(tiny_file, f"seeds=[{', '.join(map(str, seeds))}]")
    assert m is not None and m.seeds == seeds
