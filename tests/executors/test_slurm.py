"""The Slurm executor against a real single-node Slurm cluster (slurmctld + slurmd + munged,
started by the fixture as root with its own slurm.conf), plus its bad-input paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import slurm_cluster
from tests.helpers import (
    checkout_env,
    rlcrate,
    run_dir_of,
    start_run,
    tiny_manifest,
    toy_manifest,
)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    # The slurm extra is the runner's, not the images': the GPU environment (make test-gpu-env)
    # runs the fast suite without it.
    pytest.importorskip("submitit", reason="the slurm executor needs submitit (rlcrate[slurm])")
    tmp = tmp_path_factory.mktemp("slurm")
    try:
        env = slurm_cluster.start(tmp)
    except slurm_cluster.Unavailable as exc:
        pytest.skip(f"no Slurm cluster here: {exc}")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = env["SLURM_CONF"]  # what the rlcrate subprocesses inherit
    try:
        yield env
    finally:
        slurm_cluster.stop(tmp, env)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


def _status(run: Path, unit: str = "default/seed-0") -> dict:
    try:
        return json.loads((run / "units" / unit / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _wait(cond, timeout: float, what: str, seen=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} {seen()}".rstrip())


def _detached(write_manifest, tmp_path, **over) -> Path:
    """A run submitted to Slurm and left to it, trained by the torch-free toy_climb (what these
    tests watch is Slurm's requeues, signals and cancels; SB3 over Slurm is the first test's);
    its 1 ms per vector step makes training last about `timesteps` / 1,600 seconds."""
    m = toy_manifest(name="tiny", algo__params__step_ms=1, **over)
    out = rlcrate(
        "run",
        str(write_manifest(m)),
        "--out",
        str(tmp_path / "runs"),
        "-x",
        "slurm",
        "--time",
        "30",
        "--detach",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "rlcrate status" in out.stdout
    return run_dir_of(tmp_path / "runs", "tiny")


@pytest.mark.slow
@pytest.mark.slurm
def test_small_manifest_runs_as_slurm_jobs(slurm, write_manifest, tmp_path):
    m = write_manifest(tiny_manifest(seeds=[0, 1], matrix={"algo.params.n_epochs": [1, 2]}))
    out = rlcrate(
        "run",
        str(m),
        "--out",
        str(tmp_path / "runs"),
        "-x",
        "slurm",
        "--partition",
        slurm_cluster.PARTITION,
        "--time",
        "00:20:00",
        "--sbatch",
        "comment=rlcrate-test",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    assert json.loads((run / "summary.json").read_text())["complete"] is True
    jobs = json.loads((run / "slurm/jobs.json").read_text())["jobs"]
    assert len(set(jobs.values())) == 4
    script = next((run / "slurm").glob("*_submission.sh")).read_text()
    assert "--cpus-per-task=1" in script and "--comment=rlcrate-test" in script
    for unit, jid in jobs.items():
        assert _status(run, unit)["state"] == "done"
        assert f"[slurm job {jid}]" in (run / "units" / unit / "unit.log").read_text()


@pytest.mark.slow
@pytest.mark.slurm
def test_requeued_unit_completes_from_its_checkpoint(slurm, write_manifest, tmp_path):
    # 12,000 steps: the requeue lands at 4,096, with seconds of training still to go
    run = _detached(write_manifest, tmp_path, train__timesteps=12000, train__checkpoint_every=2048)
    jid = json.loads((run / "slurm/jobs.json").read_text())["jobs"]["default/seed-0"]
    progress = run / "units/default/seed-0/progress.json"
    _wait(
        lambda: progress.exists() and json.loads(progress.read_text())["steps"] >= 4096,
        300,
        "the unit to train a few thousand steps",
    )
    subprocess.run(["scontrol", "requeue", jid], check=True, env=slurm)
    _wait(lambda: _status(run).get("state") == "interrupted", 120, "the unit to checkpoint")
    _wait(
        # the unit's own record first: `rlcrate status` (a whole process) only once it says done
        lambda: _status(run).get("state") == "done" and rlcrate("status", str(run)).returncode == 0,
        900,
        "the requeued unit to finish",
    )
    st = _status(run)
    assert st["resumed_from"] and st["resumed_from"] >= 4096 and st["timesteps_done"] >= 12000
    log = (run / "units/default/seed-0/unit.log").read_text()
    assert log.count(f"[slurm job {jid}]") == 2  # the same job, started twice
    out = rlcrate("status", str(run))
    assert out.returncode == 0 and "done" in out.stdout and (run / "summary.json").is_file()


@pytest.mark.slow
@pytest.mark.slurm
def test_time_limit_signal_requeues_and_the_unit_resumes_exactly(slurm, write_manifest, tmp_path):
    """submitit's signal (SIGUSR2, sent by Slurm before the time limit): the SB3 unit finishes
    the rollout in progress, checkpoints there with its state, submitit requeues the job, and
    the requeued unit resumes exactly: final parameters and eval.json identical to the same
    unit trained without a stop (run beside it, by the local executor)."""
    from tests.trainers.sb3.test_exact_resume import params_hash

    # no periodic checkpoints (the signal's is the only one); 6,144 steps: seconds of training
    # left when the signal lands at 1,024 or more
    path = write_manifest(tiny_manifest(train__timesteps=6144, train__checkpoint_every=0))
    out = rlcrate(
        "run", str(path), "--out", str(tmp_path / "runs"), "-x", "slurm", "--time", "30",
        "--detach",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    jid = json.loads((run / "slurm/jobs.json").read_text())["jobs"]["default/seed-0"]
    progress = run / "units/default/seed-0/progress.json"
    _wait(
        lambda: progress.exists() and json.loads(progress.read_text())["steps"] >= 1024,
        300,
        "the unit to train a thousand steps",
    )
    subprocess.run(["scancel", "--signal=USR2", jid], check=True, env=slurm)
    whole = start_run(path, tmp_path / "whole", env_extra=checkout_env())
    _wait(
        # the unit's own record first: `rlcrate status` (a whole process) only once it says done
        lambda: _status(run).get("state") == "done" and rlcrate("status", str(run)).returncode == 0,
        900,
        "the requeued unit to finish",
    )
    st = _status(run)
    assert st["resumed_from"] and 1024 <= st["resumed_from"] < 6144, st
    assert st["resume"] == "exact", st
    log = (run / "units/default/seed-0/unit.log").read_text()
    assert log.count(f"[slurm job {jid}]") == 2
    assert whole.wait(timeout=300) == 0, whole.communicate()
    ref = run_dir_of(tmp_path / "whole", "tiny") / "units/default/seed-0"
    unit = run / "units/default/seed-0"
    assert params_hash(unit) == params_hash(ref)
    episodes = (json.loads((u / "eval.json").read_text())["episodes"] for u in (unit, ref))
    assert next(episodes) == next(episodes)


@pytest.mark.slow
@pytest.mark.slurm
def test_scancel_is_reported_as_failed(slurm, write_manifest, tmp_path):
    # 20,000 steps: scancel lands as training starts, with over ten seconds of it to go
    run = _detached(write_manifest, tmp_path, train__timesteps=20000)
    jid = json.loads((run / "slurm/jobs.json").read_text())["jobs"]["default/seed-0"]
    progress = run / "units/default/seed-0/progress.json"
    _wait(progress.exists, 300, "the unit to start training")
    subprocess.run(["scancel", jid], check=True, env=slurm)

    def ended() -> bool:
        return rlcrate("status", str(run)).returncode == 1

    _wait(ended, 180, "status to report the cancelled unit")
    before = (run / "units/default/seed-0/status.json").read_bytes()
    out = rlcrate("status", str(run))
    assert out.returncode == 1 and "CANCELLED" in out.stdout, out.stdout
    # status only looks: the unit's own record (interrupted by scancel's SIGTERM) is kept
    assert (run / "units/default/seed-0/status.json").read_bytes() == before
    assert _status(run)["state"] != "failed"
    # the unit checkpointed on scancel's SIGTERM: --resume submits it again and it continues
    out = rlcrate(
        "run", str(run / "manifest.yaml"), "-x", "slurm", "--time", "30", "--resume", str(run)
    )
    assert out.returncode == 0, out.stdout + out.stderr
    st = _status(run)
    assert st["state"] == "done" and st["resumed_from"] > 0
    assert json.loads((run / "slurm/jobs.json").read_text())["jobs"]["default/seed-0"] != jid


@pytest.mark.slow
@pytest.mark.slurm
def test_ctrl_c_on_the_runner_cancels_its_jobs(slurm, write_manifest, tmp_path):
    """The runner stopped while its jobs run: it asks the executor to cancel what it still
    holds (Slurm: scancel), so no job outlives it; the unit checkpointed on Slurm's SIGTERM."""
    import signal

    m = toy_manifest(name="tiny", algo__params__step_ms=1, train__timesteps=40000)
    cmd = [str(Path(sys.executable).with_name("rlcrate")), "run", str(write_manifest(m)), "--out",
           str(tmp_path / "runs"), "-x", "slurm", "--time", "30"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    progress = tmp_path / "runs"
    _wait(lambda: list(progress.glob("tiny/*/units/default/seed-0/progress.json")), 300, "training")
    run = run_dir_of(tmp_path / "runs", "tiny")
    jid = json.loads((run / "slurm/jobs.json").read_text())["jobs"]["default/seed-0"]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err

    def gone() -> bool:
        queue = subprocess.run(["squeue", "-h", "-j", jid, "-o", "%T"], capture_output=True,
                               text=True, env=slurm)  # fmt: skip
        return queue.stdout.strip() in ("", "COMPLETED", "CANCELLED")

    _wait(gone, 60, f"job {jid} to be cancelled")
    _wait(lambda: _status(run)["state"] == "interrupted", 60, "the unit to record its stop",
          lambda: f"its status: {_status(run)['state']}")  # fmt: skip
    assert list((run / "units/default/seed-0/checkpoints").glob("*.zip"))


@pytest.mark.slurm
def test_sbatch_rejection_is_one_line_exit_2(slurm, write_manifest, tmp_path):
    out = rlcrate(
        "run",
        str(write_manifest(tiny_manifest())),
        "--out",
        str(tmp_path / "runs"),
        "-x",
        "slurm",
        "--partition",
        "nosuchpartition",
    )
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: sbatch refused the job for default/seed-0: sbatch: error:")
    assert "partition" in lines[0].lower()
    assert not (tmp_path / "runs").exists()  # the refused run leaves no run directory


def test_slurm_commands_absent_is_a_clear_error(write_manifest, tmp_path):
    env_path = str(Path(sys.executable).parent)  # the venv only: no sbatch, squeue, scontrol
    exe = Path(sys.executable).with_name("rlcrate")
    out = subprocess.run(
        [str(exe), "run", str(write_manifest(tiny_manifest())), "-x", "slurm"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": env_path},
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "needs Slurm's commands on PATH" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "runs").exists()  # refused before any run directory


def test_profile_with_unknown_key_is_one_line_exit_2(write_manifest, tmp_path):
    profile = tmp_path / "cluster.yaml"
    profile.write_text("account: proj1\npartiton: gpu\n")
    out = rlcrate(
        "run", str(write_manifest(tiny_manifest())), "-x", "slurm", "--profile", str(profile)
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"error: {profile}:2: partiton: unknown key; did you mean 'partition'? expected one of "
        "partition, account, time, sbatch, setup, python, image"
    )


def test_bad_time_is_one_line_exit_2(write_manifest):
    out = rlcrate("run", str(write_manifest(tiny_manifest())), "-x", "slurm", "--time", "1h")
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --time: expected minutes or [D-]HH:MM:SS, got '1h'"


def test_time_formats():
    from runner.executors.slurm_profile import minutes

    assert [minutes(t) for t in ("30", "30:30", "01:00:00", "2-0", "1-12:00")] == [
        30,
        31,
        60,
        2880,
        2160,
    ]
    for bad in ("x", "1:2:3:4", "-5", ""):
        with pytest.raises(ValueError):
            minutes(bad)


def test_slurm_flags_need_the_slurm_executor(write_manifest):
    out = rlcrate("run", str(write_manifest(tiny_manifest())), "--partition", "gpu")
    assert out.returncode == 2 and "--partition applies only to --executor slurm" in out.stderr


def test_profile_and_flags_merge(tmp_path):
    from runner.executors.slurm_profile import SlurmSettings

    profile = tmp_path / "p.yaml"
    profile.write_text("partition: cpu\ntime: 120\nsbatch: {qos: long, exclusive: true}\n")
    given = {"partition": "gpu", "account": None, "sbatch": {"constraint": "a100"}}
    s = SlurmSettings.build(profile, given)
    assert (s.partition, s.account, s.time) == ("gpu", None, "120")
    assert s.sbatch == {"qos": "long", "exclusive": True, "constraint": "a100"}


def test_apptainer_command_line(tmp_path):
    from runner.executors.slurm_job import command
    from runner.record.rundir import UnitRef

    cmd = command(tmp_path, UnitRef("v", 3), ["train", "eval"], None, "/img/rlcrate-cuda.sif", 1)
    assert cmd == [
        "apptainer",
        "exec",
        "--containall",
        "--no-privs",
        "--bind",
        f"{tmp_path}:{tmp_path}",
        "--nv",
        "--pwd",
        str(tmp_path),
        "/img/rlcrate-cuda.sif",
        "python3",
        "-m",
        "runner.run.unit",
        str(tmp_path),
        "v",
        "3",
        "train,eval",
    ]
    assert "--nv" not in command(tmp_path, UnitRef("v", 3), ["eval"], None, "/x.sif", 0)
