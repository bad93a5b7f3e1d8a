"""Injected faults on real runs (tiny CartPole budgets): signals at each phase, a unit killed,
corruption of each run-directory file, two resumes at once, a full disk. Each must be survived
with nothing lost: the run ends with one clear line, its record says what happened, and
`--resume` finishes it without redoing finished work.

Faults of the runner around a unit train with the torch-free toy_climb trainer (tests/plugins:
same files, checkpoints and resume helpers as every trainer); those that reach into SB3's own
processes (its evaluation window, its SubprocVecEnv workers, its checkpoint sizes, the dry
construction's torch import) train with SB3.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import (
    children_of,
    processes_of,
    rlcrate,
    rlcrate_exe,
    run_dir_of,
    start_run,
    tiny_manifest,
    toy_manifest,
    unit_processes,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]

UNIT = "units/default/seed-0"
EVAL_EPISODES = 60


def _manifest(**over):
    return tiny_manifest(**{"train__timesteps": 1024, "train__checkpoint_every": 256, **over})


def _toy(**over):
    return toy_manifest(**{"name": "tiny", "train__timesteps": 1024,
                           "train__checkpoint_every": 256, **over})  # fmt: skip


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _status(run: Path) -> dict:
    return json.loads((run / UNIT / "status.json").read_text())


def _resume(run: Path) -> subprocess.CompletedProcess:
    return rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))


def _debris(run: Path) -> list[Path]:
    return [p for p in run.rglob(".*") if p.name != ".lock"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished run (1024 steps, checkpoints every 256, two seeds); tests corrupt copies."""
    home = tmp_path_factory.mktemp("finished")
    path = home / "tiny.yaml"
    path.write_text(json.dumps(_toy(seeds=[0, 1], eval__episodes=10)))
    res = rlcrate("run", str(path), "--out", str(home / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    return run_dir_of(home / "runs", "tiny")


def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "runs" / "tiny" / run.name
    shutil.copytree(run, dest)
    (dest / ".lock").unlink(missing_ok=True)
    return dest


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["INT", "KILL"])
def test_stopped_during_eval_keeps_the_trained_model(sig, write_manifest, tmp_path):
    # 60 episodes of the 1024-step policy (about 180 steps each): a few seconds of evaluation,
    # the window the signal is sent in once train.json shows that training has ended
    path = write_manifest(_manifest(eval__episodes=EVAL_EPISODES))
    proc = start_run(path, tmp_path / "runs")
    wait_for(lambda: list((tmp_path / "runs").glob(f"tiny/*/{UNIT}/train.json")), 300, "training")
    run = run_dir_of(tmp_path / "runs", "tiny")
    trained = _sha(run / UNIT / "model.zip")
    first = json.loads((run / UNIT / "train.json").read_text())
    kids = children_of(proc.pid)
    proc.send_signal(sig)
    proc.wait(timeout=120)
    assert proc.returncode == (130 if sig == signal.SIGINT else -9)
    wait_for(lambda: not [k for k in kids if Path(f"/proc/{k}").exists()], 30, "units to stop")
    assert not (run / UNIT / "eval.json").exists(), "the signal came after eval, not during it"
    res = _resume(run)
    assert res.returncode == 0, res.stderr
    assert _sha(run / UNIT / "model.zip") == trained, "the finished training was rolled back"
    done = _status(run)
    assert done["state"] == "done" and done["timesteps_done"] == 1024
    assert done["train_wall_time_s"] == first["train_wall_time_s"]
    assert done["wall_time_s"] > first["train_wall_time_s"]  # both segments, not the last only
    assert len(json.loads((run / UNIT / "eval.json").read_text())["episodes"]) == EVAL_EPISODES
    assert not _debris(run)


def test_interrupt_during_dry_construction_leaves_nothing(write_manifest, tmp_path):
    fresh = {"RLCRATE_CACHE_DIR": str(tmp_path / "cache")}  # no remembered construction
    proc = start_run(write_manifest(_manifest()), tmp_path / "runs", env_extra=fresh)
    # its child running the construction's module: the signal comes while it builds
    construct = "runner.checks.construct"
    wait_for(lambda: processes_of(proc.pid, construct), 120, "the dry construction to start")
    kids = children_of(proc.pid)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in proc.communicate()[1]
    assert not list((tmp_path / "runs").glob("tiny/*")), "a run directory was made"
    wait_for(lambda: not [k for k in kids if Path(f"/proc/{k}").exists()], 30, "no child left")


def test_unit_killed_by_a_signal_is_recorded_then_resumed(write_manifest, tmp_path):
    # about 3 s of training (2,048 vector steps of 1 ms): progress.json comes after 1 s
    path = write_manifest(_toy(train__timesteps=4096, algo__params__step_ms=1))
    proc = start_run(path, tmp_path / "runs")
    wait_for(lambda: list((tmp_path / "runs").glob(f"tiny/*/{UNIT}/progress.json")), 300, "train")
    unit_pids = unit_processes(proc.pid)
    assert unit_pids
    os.kill(unit_pids[0], signal.SIGKILL)
    proc.wait(timeout=120)
    run = run_dir_of(tmp_path / "runs", "tiny")
    assert proc.returncode == 1
    status = _status(run)
    assert status["state"] == "failed" and "SIGKILL" in status["error"]
    assert not _debris(run)
    res = _resume(run)
    assert res.returncode == 0, res.stderr
    assert _status(run)["state"] == "done"


CORRUPT = [
    "status.json",
    "eval.json",
    "model.zip",
    "provenance.json",
    "summary.json",
    "progress.json",
    "newest-checkpoint",
]


@pytest.mark.parametrize("name", CORRUPT)
def test_corrupt_file_is_survived(name, finished, tmp_path):
    run = _copy(finished, tmp_path)
    unit = run / UNIT
    before = {p.name: p.read_bytes() for p in (unit / "eval.json", unit / "model.zip")}
    prov = run / "provenance.json"
    if name == "newest-checkpoint":  # training stopped after its last checkpoint went bad
        (unit / "model.zip").unlink()
        (unit / "train.json").unlink()
        (unit / "checkpoints" / "step-1024.zip").write_bytes(b"PK\x03\x04 damaged")
        (unit / "status.json").write_text(json.dumps({"state": "interrupted"}))
        target = None
    else:
        target = run / name if name in ("provenance.json", "summary.json") else unit / name
        target.write_bytes(b"\x00{{ not json")
    res = _resume(run)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert _status(run)["state"] == "done"
    if name == "provenance.json":
        assert prov.read_bytes() == b"\x00{{ not json", "a damaged provenance was replaced"
    elif name == "newest-checkpoint":
        assert "step-1024.zip is unreadable" in (unit / "unit.log").read_text()
        assert _status(run)["resumed_from"] == 768
    else:
        # nothing lost: the same trained model, the same (deterministic) evaluation
        assert (unit / "model.zip").read_bytes() == before["model.zip"] or name == "model.zip"
        assert json.loads((unit / "eval.json").read_text()) == json.loads(before["eval.json"])
        assert json.loads((run / "summary.json").read_text())["complete"] is True
    assert not _debris(run)


@pytest.mark.parametrize("name", ["resolved.yaml", "manifest.yaml"])
def test_corrupt_run_definition_is_one_line(name, finished, tmp_path):
    run = _copy(finished, tmp_path)
    (run / name).write_text("variants: [unclosed\n")
    res = _resume(run)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2 and len(errors) == 1 and name in errors[0], res.stderr
    assert _status(run)["state"] == "done"  # nothing touched


def test_two_resumes_at_once_run_each_unit_once(finished, tmp_path):
    run = _copy(finished, tmp_path)
    for name in ("eval.json", "train.json", "model.zip"):  # one unit to train again
        (run / UNIT / name).unlink()
    shutil.rmtree(run / UNIT / "checkpoints")
    cmd = [rlcrate_exe(), "run", str(run / "manifest.yaml"), "--resume", str(run)]
    a, b = (
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    )
    codes = sorted([a.wait(timeout=300), b.wait(timeout=300)])
    outs = [p.communicate() for p in (a, b)]
    errs = outs[0][1] + outs[1][1]
    assert codes == [0, 2], errs
    assert "in use by another runner" in errs
    assert _status(run)["state"] == "done" and (run / UNIT / "train.json").is_file()
    assert sum("run directory:" in out for out, _ in outs) == 1  # one runner ran


def test_full_disk_is_recorded_and_resumable(small_disk, write_manifest, tmp_path):
    path = write_manifest(_manifest(train__timesteps=4096, train__checkpoint_every=128))
    res = rlcrate("run", str(path), "--out", str(small_disk))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    run = run_dir_of(small_disk, "tiny")
    status = _status(run)
    assert status["state"] == "failed" and "out of disk space" in status["error"], status
    assert not _debris(run), _debris(run)
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    res = _resume(run)
    assert res.returncode == 0, res.stderr
    assert _status(run)["state"] == "done"


def _direct_children(pid: int) -> list[int]:
    kids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(p.name))
            except (OSError, IndexError, ValueError):
                continue
    return sorted(kids)


def _env_workers(unit_pid: int) -> list[int]:
    """SubprocVecEnv's workers of a unit: the children of its multiprocessing forkserver."""
    for kid in _direct_children(unit_pid):
        try:
            if b"multiprocessing.forkserver" in Path(f"/proc/{kid}/cmdline").read_bytes():
                return _direct_children(kid)
        except OSError:
            continue
    return []


def test_last_env_worker_killed_fails_the_unit_promptly(write_manifest, tmp_path):
    """SIGKILL to the last SubprocVecEnv worker: the unit fails within seconds, saying so
    (SB3's own close() then waited for good on the workers that had already answered)."""
    subproc = {"envs": 2, "workers": 2, "mode": "subproc"}
    path = write_manifest(_manifest(train__timesteps=200_000, parallel=subproc))
    proc = start_run(path, tmp_path / "runs")
    wait_for(lambda: list((tmp_path / "runs").glob(f"tiny/*/{UNIT}/progress.json")), 300, "train")
    unit_pid = unit_processes(proc.pid)[0]
    wait_for(lambda: len(_env_workers(unit_pid)) == 2, 60, "both env workers")
    kids = children_of(proc.pid)
    os.kill(_env_workers(unit_pid)[-1], signal.SIGKILL)
    t0 = time.monotonic()
    proc.wait(timeout=120)
    assert time.monotonic() - t0 < 60, "the unit hung on its dead worker"
    assert proc.returncode == 1, proc.communicate()[1]
    status = _status(run_dir_of(tmp_path / "runs", "tiny"))
    assert status["state"] == "failed", status
    assert "env worker 2 of 2 died (killed by SIGKILL)" in status["error"], status
    wait_for(lambda: not [k for k in kids if Path(f"/proc/{k}").exists()], 30, "no child left")


def test_hung_unit_interpreter_cannot_hang_the_run(write_manifest, tmp_path):
    """A unit Python that never runs the unit (here: sleeps) is ended and failed after
    RLCRATE_UNIT_START_TIMEOUT_S; the run ends with exit 1 and leaves no process."""
    import sys

    marker = f"rlcrate-hang-{os.getpid()}"
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *runner.run.unit*) exec {sys.executable} -c '
        f"'import time; time.sleep(600)' {marker};; esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    env = {"RLCRATE_PYTHON_GYMNASIUM": str(python), "RLCRATE_UNIT_START_TIMEOUT_S": "5"}
    res = rlcrate(
        "run", str(write_manifest(_toy())), "--out", str(tmp_path / "runs"),
        env_extra=env, timeout=300,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    status = _status(run_dir_of(tmp_path / "runs", "tiny"))
    assert status["state"] == "failed" and "did not start the unit within 5 s" in status["error"]

    def hung() -> list[Path]:
        found = []
        for p in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if marker.encode() in p.read_bytes():
                    found.append(p)
            except OSError:
                continue
        return found

    wait_for(lambda: not hung(), 30, "the hung interpreter to be ended")
