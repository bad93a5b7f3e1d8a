"""A backend interpreter that hangs or is broken is one line within seconds; a run directory that
cannot be written is one line naming the run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, checkout_env, rlcrate, run_dir_of, toy_manifest

SCRIPTS = {
    "hangs": "#!/bin/sh\nexec sleep 300 # {marker}\n",
    "broken": "#!/bin/sh\necho 'no such Python here' >&2\nexit 1\n",
}


def _script(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"python-{kind}"
    path.write_text(SCRIPTS[kind].format(marker=f"rlcrate-probe-{os.getpid()}"))
    path.chmod(0o755)
    return path


def _left(marker: str) -> list[str]:
    found = []
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in p.read_bytes():
                found.append(p.parent.name)
        except OSError:
            continue
    return found


@pytest.mark.parametrize("kind", ["hangs", "broken"])
@pytest.mark.parametrize(
    ("var", "manifest", "command"),
    [
        ("RLCRATE_PYTHON_BRAX", "brax-tiny.yaml", ["validate", "--deep"]),
        ("RLCRATE_PYTHON_BRAX", "brax-tiny.yaml", ["run"]),
        ("RLCRATE_PYTHON_ISAACLAB", "isaaclab-cartpole-tiny.yaml", ["validate"]),
    ],
)
def test_bad_backend_python_is_one_line_in_seconds(tmp_path, kind, var, manifest, command):
    python = _script(tmp_path, kind)
    start = time.monotonic()
    res = rlcrate(
        *command, str(ROOT / "manifests" / manifest),
        *(["--out", str(tmp_path / "runs")] if command == ["run"] else []),
        env_extra={var: str(python), "RLCRATE_PROBE_TIMEOUT": "3"}, timeout=120,
    )  # fmt: skip
    took = time.monotonic() - start
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(lines) == 1 and var in lines[0] and str(python) in lines[0], res.stderr
    assert ("did not answer" if kind == "hangs" else "no such Python here") in lines[0]
    assert "Traceback" not in res.stdout + res.stderr
    assert took < 30, took  # the probe's 3 s here (10 s by default), not a dry construction's 600
    if kind == "hangs":
        assert "within 3 s" in lines[0]
    assert not (tmp_path / "runs").exists()  # a refusal makes no run directory
    assert not _left(f"rlcrate-probe-{os.getpid()}")


def _tiny_run(write_manifest, tmp_path: Path, *, tracked: bool) -> Path:
    dead = {"mlflow": {"uri": "http://127.0.0.1:9"}}  # nothing listens: a warning, untracked
    extra = {"track": dead} if tracked else {}
    m = write_manifest(toy_manifest(name="tiny", train__timesteps=128, **extra))  # no torch
    res = rlcrate("train", str(m), "--out", str(tmp_path / "runs"), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return run_dir_of(tmp_path / "runs", "tiny")


def _read_only(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """`rlcrate ARGS` with run_dir mounted read-only (a private mount namespace: root, as here,
    writes through file modes)."""
    exe = Path(sys.executable).with_name("rlcrate")
    inner = f'mount --bind -o ro "{run_dir}" "{run_dir}" && exec "$0" "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", inner, str(exe), *args],
        capture_output=True, text=True, timeout=300, env=checkout_env(COLUMNS="200"),
    )  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only bind mount needs root")
@pytest.mark.parametrize("command", ["run", "eval", "track"])
def test_read_only_run_dir_is_one_line_naming_the_run(write_manifest, tmp_path, command):
    if command == "track":  # `rlcrate track` needs a track section, and one needs MLflow
        pytest.importorskip("mlflow", reason="pip install 'rlcrate[track]'")
    run_dir = _tiny_run(write_manifest, tmp_path, tracked=command == "track")
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    manifest = str(run_dir / "manifest.yaml")
    args = {
        "run": ["run", manifest, "--resume", str(run_dir)],
        "eval": ["eval", manifest, "--resume", str(run_dir)],
        "track": ["track", str(run_dir)],
    }[command]
    res = _read_only(run_dir, *args)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(lines) == 1 and str(run_dir) in lines[0], res.stderr
    assert "cannot be written" in lines[0] and ".lock" not in lines[0] and ".tmp" not in lines[0]
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == before


def test_a_bad_probe_timeout_is_one_line(tmp_path):
    res = rlcrate(
        "validate", str(ROOT / "manifests" / "isaaclab-cartpole-tiny.yaml"),
        env_extra={"RLCRATE_PYTHON_ISAACLAB": sys.executable, "RLCRATE_PROBE_TIMEOUT": "soon"},
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip() == (
        "error: RLCRATE_PROBE_TIMEOUT='soon': expected seconds between 0.5 and 3600"
    ), res.stderr
