"""Bounded before work starts, and nothing left behind: absurd-but-valid values are warned about
with a number, cluster refusals leave no run directory and come within seconds, a run leaves no
temporary folder and no library notice on stderr. Through the installed console script. (Values
refused outright are cases in tests/reliability_cases.py, run by
tests/reliability/test_bad_inputs.py.)"""

from __future__ import annotations

import re
import shutil
import socket
import time

import pytest
import yaml

from tests.helpers import rlcrate, run_dir_of, tiny_manifest


def _write(tmp_path, manifest: dict, name: str = "m.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def test_many_subprocess_envs_warned_with_memory_estimate(tmp_path):
    m = tiny_manifest(parallel={"envs": 64, "workers": 64, "mode": "subproc"})
    out = rlcrate("validate", str(_write(tmp_path, m)))
    assert out.returncode == 0, out.stderr
    warning = next(ln for ln in out.stderr.splitlines() if "64 env processes" in ln)
    found = re.search(r"about ([\d.]+) GB of memory", warning)
    assert found, warning
    gb = float(found.group(1))
    assert 5 < gb < 20, warning  # 64 x 150 MB workers + the unit: ~10 GB


def test_checkpoint_every_step_warned_with_the_count(tmp_path):
    m = tiny_manifest(train={"timesteps": 256, "checkpoint_every": 1})  # 2 envs: one per step
    out = rlcrate("validate", str(_write(tmp_path, m)))
    assert out.returncode == 0, out.stderr
    assert "saves 128 checkpoints per unit" in out.stderr, out.stderr
    sane = tiny_manifest(train={"timesteps": 256, "checkpoint_every": 128})
    assert "checkpoints" not in rlcrate("validate", str(_write(tmp_path, sane, "s.yaml"))).stderr


def _silent_listener() -> socket.socket:
    """A port on 127.0.0.1 that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


def test_ray_address_that_is_not_ray_is_refused_in_one_line(tmp_path):
    """Something listens there but never speaks Ray (ray.init would retry for 20 s and log a
    line a second): one line, exit 2, no run directory. How long rlcrate waits there is
    test_ray_address_check_waits_only_its_own_bound's; this bound is on the whole command, the
    console script's start included (14 s on a loaded two-core machine), and only says that
    nothing retries for minutes."""
    pytest.importorskip("ray")
    with _silent_listener() as listener:
        t0 = time.monotonic()
        out = rlcrate(
            "run",
            str(_write(tmp_path, tiny_manifest())),
            "--executor",
            "ray",
            "--ray-address",
            f"127.0.0.1:{listener.getsockname()[1]}",
            "--out",
            str(tmp_path / "runs"),
        )
        seconds = time.monotonic() - t0
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "no Ray cluster answers there" in out.stderr
    assert seconds < 120, f"took {seconds:.1f} s"
    assert not (tmp_path / "runs").exists()


def test_ray_address_check_waits_only_its_own_bound(monkeypatch):
    """In process, Ray's modules loaded first: the address check waits CONNECT_TIMEOUT_S for
    the connection and as long for the GCS's answer, no more (the clusters guide says 3 s
    each); with the bound set to 1 s it is refused in well under ray.init's 20 s of retries."""
    pytest.importorskip("ray")
    from ray.core.generated import gcs_service_pb2_grpc  # noqa: F401  (loaded before the clock)

    from runner.errors import UserInputError
    from runner.executors import ray as ray_executor

    assert ray_executor.CONNECT_TIMEOUT_S == 3.0  # docs/guides/clusters.md
    monkeypatch.setattr(ray_executor, "CONNECT_TIMEOUT_S", 1.0)
    with _silent_listener() as listener:
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        t0 = time.monotonic()
        with pytest.raises(UserInputError, match="no Ray cluster answers there"):
            ray_executor.check_address(address)
        seconds = time.monotonic() - t0
    assert seconds < 10, f"took {seconds:.1f} s with a bound of 1 s per step"


def test_slurm_refusal_leaves_no_run_directory(tmp_path):
    """sbatch refuses (its configuration names no cluster): one line, and the run directory made
    for it is gone again. (A configuration file that does not exist would do too, but sbatch
    retries stat-ing it for 60 s first.)"""
    if shutil.which("sbatch") is None:
        pytest.skip("Slurm's commands are not installed")
    pytest.importorskip("submitit")
    conf = tmp_path / "slurm.conf"
    conf.write_text("bogus=1\n")
    out = rlcrate(
        "run",
        str(_write(tmp_path, tiny_manifest())),
        "--executor",
        "slurm",
        "--out",
        str(tmp_path / "runs"),
        env_extra={"SLURM_CONF": str(conf)},
    )
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2 and len(errors) == 1 and "sbatch" in errors[0], out.stderr
    assert not (tmp_path / "runs").exists(), sorted(p.name for p in (tmp_path / "runs").rglob("*"))


@pytest.mark.slow  # trains a tiny agent
@pytest.mark.gymnasium
def test_run_leaves_no_temp_folder_and_no_library_notice(tmp_path):
    """SB3's logger makes $TMPDIR/SB3-<date> when given no folder; matplotlib logs a warning
    when HOME is not writable. Neither reaches the user."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = rlcrate(
        "run",
        str(_write(tmp_path, tiny_manifest())),
        "--out",
        str(tmp_path / "runs"),
        env_extra={"TMPDIR": str(tmpdir), "HOME": "/proc", "MPLCONFIGDIR": ""},
        report=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert not list(tmpdir.glob("SB3-*")), list(tmpdir.iterdir())
    assert "matplotlib" not in out.stderr.lower(), out.stderr
    assert (run_dir_of(tmp_path / "runs", "tiny") / "plots" / "learning_curves.png").is_file()
