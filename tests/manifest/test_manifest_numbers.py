"""Numbers as researchers write them (`3e-4`, `1e6`): read as YAML 1.2 reads them, in files and
in `--set`; and the files rlcrate writes read back as they were. Fast: no training."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import ManifestError
from runner.manifest.overrides import parse_set
from runner.manifest.parse import dump_yaml, parse_yaml
from tests.helpers import rlcrate, tiny_manifest

FINITE = st.floats(allow_nan=False, allow_infinity=False)
# No per-example deadline: a loaded CI machine may take longer than Hypothesis's 200 ms default
# on any example, which says nothing about the parser.
QUICK = settings(deadline=None, max_examples=100)


def _forms(x: float) -> list[str]:
    """Ways a person writes `x`: Python's repr, exponent forms with and without a point, an
    exponent with and without its sign, upper case, a leading point without its zero."""
    out = [repr(x), f"{x:e}", f"{x:E}", f"{x:.3e}".replace("e+", "e"), f"{x:.0e}"]
    out += [f"{x:g}", f"{x:.17g}".replace("e+", "e")]
    if 0 < abs(x) < 1 and "e" not in f"{x:f}":
        out.append(f"{x:f}".replace("0.", ".", 1))  # .25, -.25
    return [t for t in out if math.isfinite(float(t))]  # rounding up may pass the largest float


@QUICK
@given(FINITE)
def test_every_written_form_of_a_float_is_that_number(x):
    for text in _forms(x):
        value, _ = parse_yaml(f"lr: {text}\n", "m.yaml")
        got = value["lr"]
        assert isinstance(got, (int, float)) and not isinstance(got, bool), (text, got)
        assert got == float(text), (text, got)  # exactly the number Python reads it as
        mantissa, _, exponent = text.lower().partition("e")
        if isinstance(got, int):  # an integer only when written without a point or a - exponent
            assert "." not in mantissa and not exponent.startswith("-"), (text, got)


@QUICK
@given(st.integers(min_value=-(10**6), max_value=10**6), st.integers(min_value=0, max_value=12))
def test_a_whole_number_with_an_exponent_and_no_point_is_that_integer(mantissa, exponent):
    value, _ = parse_yaml(f"timesteps: {mantissa}e{exponent}\n", "m.yaml")
    assert value["timesteps"] == mantissa * 10**exponent
    assert type(value["timesteps"]) is int


@QUICK
@given(FINITE)
def test_a_set_reads_the_number_as_the_file_does(x):
    for text in _forms(x):
        override = parse_set(f"algo.params.ent_coef={text}")
        assert override.value == parse_yaml(f"v: {text}", "m.yaml")[0]["v"] == float(text)


@QUICK
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | FINITE | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
))  # fmt: skip
def test_what_rlcrate_writes_reads_back_as_it_was(data):
    """resolved.yaml and best.yaml: a string that looks like a number (`"3e-4"`) stays a string."""
    assert parse_yaml(dump_yaml({"data": data}), "resolved.yaml")[0] == {"data": data}


@pytest.mark.parametrize("text", ["1e400", "-1e999", "1.5e400"])
def test_a_number_too_large_for_a_float_is_refused_as_infinity_is(text):
    with pytest.raises(ManifestError, match="expected a finite number"):
        parse_yaml(f"algo:\n  params: {{learning_rate: {text}}}\n", "m.yaml")


def test_text_that_is_not_a_number_stays_text():
    data, _ = parse_yaml("a: lin_3e-4\nb: 1e\nc: e5\nd: '3e-4'\ne: 3e-4x\n", "m.yaml")
    assert data == {"a": "lin_3e-4", "b": "1e", "c": "e5", "d": "3e-4", "e": "3e-4x"}
    assert math.isclose(parse_yaml("a: 3e-4", "m.yaml")[0]["a"], 3e-4)


def test_exponent_numbers_through_validate(write_manifest):
    """`learning_rate: 3e-4`, `timesteps: 1e3` in the file and `-s algo.params.ent_coef=1e-3`:
    valid, and resolved to those numbers (`validate --show` prints each value's source)."""
    m = tiny_manifest()
    text = dump_yaml(m).replace("timesteps: 512", "timesteps: 1e3")
    text = text.replace("n_epochs: 2", "n_epochs: 2\n    learning_rate: 3e-4")
    assert "timesteps: 1e3" in text and "learning_rate: 3e-4" in text
    path = write_manifest(text)
    out = rlcrate("validate", str(path), "-s", "algo.params.ent_coef=1e-3", "--show")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "learning_rate: 0.0003" in out.stdout and "ent_coef: 0.001" in out.stdout, out.stdout
    assert out.stderr == ""
