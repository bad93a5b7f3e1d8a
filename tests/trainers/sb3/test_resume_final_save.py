"""A unit stopped while saving its final model never ends `done` with a model that lacks the
last update (it once resumed from a checkpoint taken at the budget, before that update).

Checkpoints are taken at rollout boundaries, after the update of the steps they count, and
never at the budget; a checkpoint at the budget (a stop during the last update, or an older
rlcrate's) is skipped on resume for an older one.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from runner.record.status import write_status
from tests.helpers import rlcrate, run_dir_of, tiny_manifest

pytestmark = [pytest.mark.gymnasium, pytest.mark.slow]  # real SB3 training (seconds)


def test_stopped_during_the_final_save_trains_its_last_steps_again(tmp_path):
    m = tiny_manifest(train__checkpoint_every=256)  # 512 steps, 2 envs x 64 steps a rollout
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(m))
    out = rlcrate("run", str(tmp_path / "m.yaml"), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit = run / "units/default/seed-0"
    ckpts = sorted(p.name for p in (unit / "checkpoints").glob("step-*.zip"))
    assert ckpts == ["step-256.zip"], "no checkpoint at the budget: the final model holds it"
    # what a SIGKILL during the final save left, plus a checkpoint at the budget taken before
    # the last update (what a stop during that update, or an older rlcrate, writes)
    shutil.copy(unit / "model.zip", unit / "checkpoints/step-512.zip")
    for name in ("model.zip", "train.json", "eval.json"):
        (unit / name).unlink()
    write_status(unit, "interrupted")
    again = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert again.returncode == 0, again.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] == 512
    assert status["resumed_from"] == 256, "the last 256 steps (and their updates) ran again"
    log = (unit / "unit.log").read_text()
    assert "step-512.zip was taken at the budget" in log, log
    assert (unit / "tb" / "resumed-256").is_dir()
