"""What a run has recorded is never lost or silently changed, on real tiny runs:
finished work is recovered rather than redone, a checkpoint's step is its own, an eval's mean is
its episodes', `status` only looks, result files follow the umask, and an unfinished run says it
has no results yet rather than that its claims failed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from runner.trainers.sb3.checkpoints import saved_steps
from tests.helpers import (
    as_run_by,
    children_of,
    rlcrate,
    rlcrate_exe,
    run_dir_of,
    start_run,
    tiny_manifest,
    toy_manifest,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]

UNIT = "units/default/seed-0"
BUDGET = 1024  # conftest's TINY_RUN


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(run: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a run: its bytes and mtime (what a read-only command must not change)."""
    return {
        str(p.relative_to(run)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(run.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _saved(model: Path) -> int:
    """The env steps a model zip says it trained; 0 when it is no readable SB3 zip."""
    return saved_steps(model) or 0


def _status(run: Path) -> dict:
    return json.loads((run / UNIT / "status.json").read_text())


def _resume(run: Path) -> subprocess.CompletedProcess:
    return rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))


@pytest.fixture(scope="module")
def finished(tiny_run):
    """The session's finished run (conftest's TINY_RUN), whose last checkpoint (768) comes before
    its final model (1024); tests change copies of it."""
    steps = sorted(int(p.stem[5:]) for p in (tiny_run / UNIT / "checkpoints").glob("step-*.zip"))
    assert steps == [256, 512, 768], steps
    return tiny_run


def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "runs" / "tiny" / run.name
    shutil.copytree(run, dest)
    (dest / ".lock").unlink(missing_ok=True)
    return dest


@pytest.mark.parametrize("damaged", ["status+train", "status-a-list", "train-while-interrupted"])
def test_finished_unit_is_recovered_not_retrained(damaged, finished, tmp_path):
    """model.zip and eval.json whole: whatever status.json and train.json say, the unit is
    finished; its record is rebuilt from the files, nothing trains again."""
    run = _copy(finished, tmp_path)
    unit = run / UNIT
    model, ev = _sha(unit / "model.zip"), (unit / "eval.json").read_bytes()
    (unit / "train.json").write_bytes(b"\x00{{ damaged")
    if damaged == "status+train":
        (unit / "status.json").write_bytes(b"\x00{{ damaged")
    elif damaged == "status-a-list":  # JSON, but not a status
        (unit / "status.json").write_text("[1, 2]")
    else:  # stopped during a re-evaluation, say
        (unit / "status.json").write_text(json.dumps({"state": "interrupted"}))
    res = _resume(run)
    assert res.returncode == 0, res.stdout + res.stderr
    assert _sha(unit / "model.zip") == model, "the finished model was trained again"
    status = _status(run)
    assert status["state"] == "done" and status["timesteps_done"] >= BUDGET
    assert json.loads((unit / "eval.json").read_bytes()) == json.loads(ev)
    record = json.loads((unit / "train.json").read_text())
    assert record["timesteps_done"] == _saved(unit / "model.zip") >= BUDGET
    assert "rebuilt" in record["recovered"]
    if damaged != "train-while-interrupted":  # not even evaluated again: recovered from files
        assert (unit / "eval.json").read_bytes() == ev
        assert "recovered" in res.stdout and "status.json was unreadable" in status["recovered"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is True


def test_renamed_checkpoint_cannot_end_a_unit_early(finished, tmp_path):
    """step-512.zip copied to step-999999.zip: the step is read from the checkpoint, and the
    unit trains on to its budget."""
    run = _copy(finished, tmp_path)
    unit = run / UNIT
    for name in ("model.zip", "train.json", "eval.json"):
        (unit / name).unlink()
    (unit / "checkpoints" / "step-768.zip").unlink()
    shutil.copy(unit / "checkpoints" / "step-512.zip", unit / "checkpoints" / "step-999999.zip")
    (unit / "status.json").write_text(json.dumps({"state": "interrupted"}))
    res = _resume(run)
    assert res.returncode == 0, res.stdout + res.stderr
    status = _status(run)
    assert status["state"] == "done" and status["resumed_from"] == 512, status
    assert status["timesteps_done"] >= BUDGET and _saved(unit / "model.zip") >= BUDGET
    assert "step-999999.zip holds step 512" in (unit / "unit.log").read_text()


def test_done_unit_whose_model_fell_short_trains_on(finished, tmp_path):
    """A unit recorded done whose model.zip trained 768 of 1024 steps is not done."""
    run = _copy(finished, tmp_path)
    unit = run / UNIT
    shutil.copy(unit / "checkpoints" / "step-768.zip", unit / "model.zip")
    res = _resume(run)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "model.zip: trained 768 of 1024 steps; that unit runs again" in res.stdout
    assert _status(run)["state"] == "done" and _saved(unit / "model.zip") >= BUDGET


def test_resume_does_not_take_a_flipped_mean(finished, tmp_path):
    """eval.json's mean raised by 600, episodes untouched: the result is its episodes'."""
    run = _copy(finished, tmp_path)
    path = run / UNIT / "eval.json"
    ev = json.loads(path.read_text())
    path.write_text(json.dumps({**ev, "mean": ev["mean"] + 600}))
    res = _resume(run)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(path.read_text()) == ev  # evaluated again: the same, whole result
    summary = json.loads((run / "summary.json").read_text())
    assert summary["variants"]["default"]["eval"]["per_seed_mean"]["0"] == ev["mean"]


def test_status_only_looks(finished, tmp_path):
    """On a finished run nothing is written, summary.json included (not even `written`)."""
    run = _copy(finished, tmp_path)
    before = _tree(run)
    res = rlcrate("status", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "still running" not in res.stdout and "met" in res.stdout
    assert _tree(run) == before


def _silent_slurm(tmp_path: Path) -> dict[str, str]:
    """Slurm's commands answering as they do when the controller is down: a fault that cannot
    be produced on demand with a real cluster."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for cmd in ("sbatch", "squeue", "scontrol", "scancel"):
        exe = bin_dir / cmd
        exe.write_text(
            "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller "
            "(connect failure)' >&2\nexit 1\n"
        )
        exe.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_status_never_changes_a_unit_when_slurm_does_not_answer(finished, tmp_path):
    run = _copy(finished, tmp_path)
    (run / UNIT / "status.json").write_text(
        json.dumps({**_status(run), "state": "interrupted", "error": "requeued"})
    )
    (run / "slurm").mkdir()
    (run / "slurm" / "jobs.json").write_text(json.dumps({"default/seed-0": "4242"}))
    as_run_by(run, "slurm")
    before = _tree(run)
    res = rlcrate("status", str(run), env_extra=_silent_slurm(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Slurm did not answer" in res.stdout and "interrupted" in res.stdout
    assert _tree(run) == before  # the unit is still interrupted; nothing written


def test_status_of_a_bench_run(write_manifest, tmp_path):
    """`rlcrate bench` runs no units: status neither lists them pending nor says running."""
    bench = {"steps": 128, "warmup": 0, "repeats": 1, "train": False, "cold_start": False}
    path = write_manifest(tiny_manifest(bench=bench))
    res = rlcrate("bench", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    before = _tree(run)
    res = rlcrate("status", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "pending" not in res.stdout and "still running" not in res.stdout
    assert "bench" in res.stdout
    assert _tree(run) == before


def test_files_follow_the_umask(write_manifest, tmp_path):
    """umask 027: every file the run writes is 0640 (not 0600, not 0644), every folder 0750."""
    path = write_manifest(tiny_manifest(train__checkpoint_every=256))
    res = subprocess.run(
        [rlcrate_exe(), "run", str(path), "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=lambda: os.umask(0o027),
    )
    assert res.returncode == 0, res.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    modes = {str(p.relative_to(run)): stat.S_IMODE(p.stat().st_mode) for p in run.rglob("*")}
    for name in ("summary.json", "report.md", "eval_table.tex", f"{UNIT}/train.json"):
        assert name in modes, name
    wrong = {n: oct(m) for n, m in modes.items() if m != (0o750 if (run / n).is_dir() else 0o640)}
    assert not wrong, wrong


def test_interrupted_run_has_no_results_yet(write_manifest, tmp_path):
    """Stopped before any unit was evaluated: its claims are not unmet, there are no results."""
    # toy_climb, 1 ms per vector step: still training when the interrupt comes
    m = toy_manifest(name="tiny", train__timesteps=200_000, algo__params__step_ms=1,
                     expect={"eval.mean_reward": {">=": 0}})  # fmt: skip
    proc = start_run(write_manifest(m), tmp_path / "runs")
    wait_for(lambda: list((tmp_path / "runs").glob(f"tiny/*/{UNIT}/progress.json")), 300, "train")
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    assert proc.returncode == 130
    run = run_dir_of(tmp_path / "runs", "tiny")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["expectations_met"] is None
    res = rlcrate("status", str(run))
    assert "no results yet" in res.stdout and "not met" not in res.stdout, res.stdout
    res = rlcrate("report", str(run))
    assert res.returncode == 0, res.stderr
    report = (run / "report.md").read_text()
    assert "not met" not in report and "no results yet" in report


def test_status_after_the_runner_is_killed_says_stopped_and_how_to_resume(write_manifest, tmp_path):
    """SIGKILL leaves the units' records at `running` (the units die with the runner and write
    nothing): status checks the recorded processes (pid and start time) and the run's lock, and
    says stopped, with the command that resumes it, instead of "still running"."""
    m = toy_manifest(name="tiny", train__timesteps=200_000, algo__params__step_ms=1, seeds=[0, 1],
                     parallel__units=1)  # fmt: skip
    proc = start_run(write_manifest(m), tmp_path / "runs")
    wait_for(lambda: list((tmp_path / "runs").glob(f"tiny/*/{UNIT}/progress.json")), 300, "train")
    run = run_dir_of(tmp_path / "runs", "tiny")
    kids = children_of(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    wait_for(lambda: not [k for k in kids if Path(f"/proc/{k}").exists()], 30, "units to die")
    assert _status(run)["state"] == "running" and _status(run)["process"]["pid"] in kids
    res = rlcrate("status", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "still running" not in res.stdout and "stopped" in res.stdout, res.stdout
    command = f"rlcrate run {run / 'manifest.yaml'} --resume {run}"
    assert res.stdout.splitlines()[-2:] == ["stopped; resume with:", command], res.stdout


def test_a_status_record_of_the_wrong_types_is_damaged_not_believed(tmp_path):
    """status.json through its one model: a field of the wrong type (a string for a list) is a
    damaged record (the unit runs again; commands that only report name the file), an
    executor's field is one the model names, and one it does not name is refused where it is
    written (tests/record/test_record_formats.py: an older record's are kept under `legacy`)."""
    from runner.errors import RunFileError
    from runner.record.status import read_status, recorded_status, write_status

    write_status(tmp_path, "running", variant="v", seed=0, slurm_job="42")
    status = read_status(tmp_path, strict=True)
    assert status.state == "running" and status.slurm_job == "42"
    (tmp_path / "status.json").write_text(json.dumps({"state": "done", "resumes": "many"}))
    assert recorded_status(tmp_path) is None and read_status(tmp_path).state == "pending"
    with pytest.raises(RunFileError, match="status.json: damaged .*resumes"):
        read_status(tmp_path, strict=True)
    with pytest.raises(ValueError):  # nothing unreadable is written
        write_status(tmp_path, "done", timesteps_done="lots")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="node_name"):
        write_status(tmp_path, "done", node_name="n1")  # type: ignore[call-arg]


def test_an_eval_record_is_believed_only_as_its_episodes_add_up(tmp_path):
    from runner.record.eval import read_eval, write_eval_record

    written = write_eval_record(tmp_path, [1.0, 3.0], [10, 12], deterministic=True, seed=7)
    again = read_eval(tmp_path / "eval.json")
    assert again == written and again.returns() == [1.0, 3.0] and again.mean == 2.0
    data = json.loads((tmp_path / "eval.json").read_text())
    assert data["episodes"][0] == {"return": 1.0, "length": 10}  # the file's own names
    for change in ({"mean": 5.0}, {"n_episodes": 3}, {"episodes": [{"return": "1", "length": 1}]}):
        (tmp_path / "eval.json").write_text(json.dumps({**data, **change}))
        assert read_eval(tmp_path / "eval.json") is None, change
