"""`expect:` claims gate the exit status of `rlcrate run`: 3 and one line per unmet claim;
`--no-expect` reports without failing."""

from __future__ import annotations

import pytest

from runner.record.summary import RunSummary
from runner.run.expect import EXIT_EXPECT, unmet
from tests.helpers import rlcrate, toy_manifest


def test_unmet_lines_one_per_claim():
    summary = {
        "name": "claims",
        "run_id": "r",
        "seeds": [0],
        "written": 0.0,
        "variants": {
            "a": {
                "expect": [
                    {
                        "metric": "eval.mean_reward",
                        "op": ">=",
                        "value": 150,
                        "actual": 92.5,
                        "met": False,
                    },
                    {"metric": "eval.iqm", "op": ">", "value": 0, "actual": 90.0, "met": True},
                ]
            },
            "b": {
                "expect": [
                    {
                        "metric": "train.steps_per_s",
                        "op": ">=",
                        "value": 1e4,
                        "actual": None,
                        "met": False,
                    },
                ]
            },
        },
    }
    assert unmet(RunSummary.model_validate(summary)) == [
        "expect not met: a: eval.mean_reward >= 150 (got 92.5)",
        "expect not met: b: train.steps_per_s >= 10000 (got no value)",
    ]


@pytest.mark.slow
@pytest.mark.gymnasium
def test_run_exits_3_on_unmet_claims_and_no_expect_reports(write_manifest, tmp_path):
    m = toy_manifest(expect={"eval.mean_reward": {">=": 1_000_000, ">": 0}})  # claims, not training
    path = write_manifest(m)
    out = rlcrate("run", str(path), "--out", str(tmp_path / "a"))
    assert out.returncode == EXIT_EXPECT == 3, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("error: 1 of 2 expect: claim(s) not met")
    assert lines[1].startswith("expect not met: default: eval.mean_reward >= 1000000 (got ")
    assert len(lines) == 2 and "Traceback" not in out.stderr
    again = rlcrate("run", str(path), "--out", str(tmp_path / "b"), "--no-expect")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "NOT met" in again.stdout or "not met" in again.stdout
