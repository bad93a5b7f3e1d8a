"""The logic of `rlcrate export` in process, no torch: which unit `--variant`/`--seed` name, and
how closely the exported policy's actions match the model's own (the check that decides whether
the file is kept). Exporting itself is tests/export/test_export.py's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces

from runner.errors import UserInputError
from runner.export.onnx import ACTION_TOLERANCE, _agreement, pick_unit
from runner.record.rundir import UnitRef

RUN = Path("runs/tiny/20260101-000000")


def test_the_only_variant_and_the_first_seed_are_taken_when_not_named():
    assert pick_unit(RUN, ["default"], [3, 4], None, None) == UnitRef("default", 3)
    assert pick_unit(RUN, ["a", "b"], [0, 1], "b", 1) == UnitRef("b", 1)


@pytest.mark.parametrize(
    ("variant", "seed", "says"),
    [
        (None, None, "has 2 variants (a, b); name one with --variant"),
        ("c", None, "--variant c: runs/tiny/20260101-000000 has a, b"),
        ("a", 7, "--seed 7: runs/tiny/20260101-000000 has seeds 0, 1"),
    ],
)
def test_a_unit_the_run_does_not_have_is_refused_in_one_line(variant, seed, says):
    with pytest.raises(UserInputError) as err:
        pick_unit(RUN, ["a", "b"], [0, 1], variant, seed)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_discrete_actions_agree_only_where_identical():
    share, gap = _agreement(
        np.array([0, 1, 2, 1]), np.array([0, 1, 2, 2]), spaces.Discrete(3), "sb3"
    )
    assert share == 0.75 and gap == 1.0


def test_continuous_actions_agree_within_the_tolerance():
    box = spaces.Box(-1.0, 1.0, shape=(2,))
    predicted = np.zeros((3, 2))
    exported = predicted + np.array([[0.0, ACTION_TOLERANCE / 2], [0.0, 0.0], [0.1, 0.0]])
    share, gap = _agreement(exported, predicted, box, "sb3")
    assert share == pytest.approx(2 / 3) and gap == pytest.approx(0.1)


def test_godot_rl_layout_compares_means_clipped_into_the_space():
    """godot-rl's layout exports the unclipped mean; predict() clips it into the space."""
    box = spaces.Box(-1.0, 1.0, shape=(1,))
    means, predicted = np.array([[3.0], [-0.5]]), np.array([[1.0], [-0.5]])
    assert _agreement(means, predicted, box, "godot-rl") == (1.0, 0.0)
    assert _agreement(means, predicted, box, "sb3")[0] == 0.5
