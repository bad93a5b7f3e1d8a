"""`rlcrate check-determinism --resume` (runner/run/check_resume.py) gives a verdict only where a
kill really happened: it refuses a trainer that does not declare it can be killed for the check
(the KillForResume ability), gives no verdict when the unit was not killed at the step asked, and
keeps its verdict per backend and trainer. The check itself, trained and killed for real with SB3:
tests/trainers/sb3/test_exact_resume.py."""

from __future__ import annotations

import os

import pytest

from tests.helpers import PLUGINS, ROOT, one_error_line, rlcrate, toy_manifest


@pytest.mark.gymnasium
def test_a_trainer_that_cannot_be_killed_is_refused(write_manifest, tmp_path):
    """toy_climb does not declare the ability: one line, exit 2, no training, nothing
    remembered (before: three trainings, "exact ... resumed from step none", exit 0, and
    `exact` remembered for the whole gymnasium backend)."""
    cache = tmp_path / "cache"
    path = write_manifest(toy_manifest())
    res = rlcrate(
        "check-determinism", str(path), "--resume", "--steps", "256",
        env_extra={"RLCRATE_CACHE_DIR": str(cache)},
    )  # fmt: skip
    one_error_line(res, f"{path}:", "algo.trainer:", "toy_climb", "KillForResume", "sb3")
    assert res.stdout == ""
    assert not (cache / "determinism.json").exists()


CLAIMS = '''
from rlcrate_toys.climb import Climb
from runner.trainers.abilities import KillForResume


class Claims(Climb, KillForResume):
    """toy_climb declaring the kill ability without a kill hook in its loop."""

    name = "toy_claims"
'''


@pytest.mark.gymnasium
def test_a_trainer_that_claims_the_kill_but_is_not_killed_gives_no_verdict(
    write_manifest, tmp_path
):
    """A package's trainer that declares the KillForResume ability but never kills its unit: the
    unit trains to its end where it was to be killed, and the check says so, exit 2, nothing
    remembered (a verdict there would compare two plain trainings)."""
    site, cache = tmp_path / "site", tmp_path / "cache"
    info = site / "rlcrate_claims-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rlcrate-claims\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[rlcrate.trainers]\ntoy_claims = rlcrate_claims:Claims\n"
    )
    (site / "rlcrate_claims.py").write_text(CLAIMS)
    path = write_manifest(toy_manifest(algo__trainer="toy_claims"))
    res = rlcrate(
        "check-determinism", str(path), "--resume", "--steps", "256",
        env_extra={"RLCRATE_CACHE_DIR": str(cache),
                   "PYTHONPATH": os.pathsep.join([str(ROOT), str(PLUGINS), str(site)])},
    )  # fmt: skip
    one_error_line(
        res, "the toy_claims trainer was told to kill its unit at env step 217",
        "it was not killed (it ended with exit status 0, not SIGKILL)", "no verdict",
    )  # fmt: skip
    assert not (cache / "determinism.json").exists()


@pytest.mark.parametrize(
    ("returncode", "record", "why"),
    [
        (-9, {"asked": 100, "step": 100}, None),
        (-9, {"asked": 100, "step": 101}, None),  # the first step past it, of 2 envs
        (0, None, "it was not killed (it ended with exit status 0, not SIGKILL)"),
        (1, None, "it was not killed (it ended with exit status 1, not SIGKILL)"),
        (-15, {"step": 100}, "it was not killed (it ended with signal 15, not SIGKILL)"),
        (-9, None, "it was killed without recording the step (RLCRATE_KILL_RECORD)"),
        (-9, {"step": "100"}, "it was killed without recording the step (RLCRATE_KILL_RECORD)"),
        (-9, {"step": 64}, "it was killed at env step 64, not at its first step at or past 100"),
        (-9, {"step": 102}, "it was killed at env step 102, not at its first step at or past 100"),
    ],
)  # fmt: skip
def test_a_kill_counts_only_by_sigkill_at_the_step_asked(returncode, record, why):
    from runner.trainers.kill import kill_problem

    assert kill_problem(returncode, record, 100, 2) == why


def test_resume_verdicts_are_kept_per_backend_and_trainer(tmp_path, monkeypatch):
    """An SB3 verdict is not a toy_climb one: provenance copies only the verdicts of the
    trainers its run uses; an entry of the older per-backend form is dropped, not read as
    another trainer's."""
    import json

    from runner import provenance
    from runner.provenance import determinism

    monkeypatch.setenv("RLCRATE_CACHE_DIR", str(tmp_path / "cache"))
    old = {"result": "exact", "env": "CartPole-v1", "differ": []}
    key = determinism.fingerprint()
    determinism.cache_file().write_text(json.dumps({key: {"resume": {"gymnasium": old}}}))
    assert determinism.recorded_resume({"gymnasium": {"sb3"}}) == {}
    differs = {**old, "result": "approximate", "differ": ["params"], "trainer": "sb3"}
    assert determinism.record_resume("gymnasium", "sb3", differs) is None
    assert json.loads(determinism.cache_file().read_text())[key]["resume"] == {
        "gymnasium": {"sb3": {**differs, "algo": None, "checked": None}}
    }
    path = tmp_path / "m.yaml"
    toy = provenance.collect(["rlcrate"], path, {"gymnasium"}, {}, {"gymnasium": {"toy_climb"}})
    assert toy["resume_checked"] == {} and toy["resume"] == {"gymnasium": "exact"}
    sb3 = provenance.collect(["rlcrate"], path, {"gymnasium"}, {}, {"gymnasium": {"sb3"}})
    assert sb3["resume_checked"]["gymnasium"]["sb3"]["differ"] == ["params"]
    assert sb3["resume"] == {
        "gymnasium": "approximate: check-determinism --resume found params differ (on CartPole-v1)"
    }
