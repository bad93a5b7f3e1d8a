"""Bad arguments to archive, reproduce and check-determinism: one sentence, exit status 2."""

from __future__ import annotations

import pytest

from tests.helpers import rlcrate, tiny_manifest


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["reproduce", "{a}", "--units", "0"], "--units: expected a positive number"),
        (["reproduce", "{a}", "--seeds", "x"], "--seeds: 'x' is not a seed; write seeds as 0"),
        (["reproduce", "{a}", "--seeds", "0", "--units", "1"], "give one of them, not both"),
        (["reproduce", "{a}", "--num-seeds", "2", "--units", "1"], "give one of them, not both"),
        (["reproduce", "{a}", "--num-seeds", "0"], "--num-seeds: expected a count of seeds"),
        (["reproduce", "{a}", "--seeds", ""], "--seeds: expected at least one seed"),
        (["reproduce", "{a}", "--alpha", "0.9"], "--alpha: expected a significance level"),
        (["reproduce", "{a}"], "refused, the stream is"),
        (["check-determinism", "{m}", "--steps", "0"], "--steps: expected 1 to 10,000,000 steps"),
        (["archive", "{d}", "-o", "{d}/x.tar.gz"], "not a run directory"),
    ],
)
def test_bad_arguments_one_line_exit_2(write_manifest, tmp_path, args, words):
    names = {
        "a": str(write_manifest("not an archive", "a.tar.gz")),
        "m": str(write_manifest(tiny_manifest())),
        "d": str(tmp_path),
    }
    out = rlcrate(*(a.format(**names) for a in args))
    assert out.returncode == 2, out.stdout + out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
