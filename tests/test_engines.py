"""`run --image` with an engine that answers but cannot start containers (podman in a sandbox
that forbids raising RLIMIT_NOFILE: `crun` exits 126). A fake `podman` on PATH plays that engine
(the fault cannot be produced on demand on every machine); `rlcrate` is the installed console
script. `doctor` calls such an engine unusable, `run` does not pick it, and an engine exit status
(125-127) is one `error:` line with exit 1, not a stray 126."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
import yaml

from runner import __version__
from tests.helpers import rlcrate, tiny_manifest

CRUN = "Error: crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted: OCI permission denied"


def _podman(folder: Path, *, probe_ok: bool, log: Path) -> Path:
    """A podman that answers `info` and `image inspect`; `run` fails as crun does (the probe
    run, `--rootfs /`, succeeds when `probe_ok`)."""
    inspect = json.dumps([{"Id": "sha256:" + "c" * 64, "Labels": {"io.rlcrate.variant": "cpu"}}])
    probe = "exit 0" if probe_ok else f"echo '{CRUN}' >&2; exit 126"
    script = f"""\
        #!/bin/sh
        echo "$@" >> {log}
        case "$1 $2" in
          "info --format") echo crun; exit 0;;
          "image inspect") echo '{inspect}'; exit 0;;
        esac
        case "$*" in *--rootfs*) {probe};; esac
        [ "$1" = run ] && echo '{CRUN}' >&2 && exit 126
        exit 99
        """
    path = folder / "podman"
    path.write_text(textwrap.dedent(script))
    path.chmod(0o755)
    return path


@pytest.fixture
def only_podman(tmp_path):
    """PATH with the fake podman and the system's tools, no docker or buildah."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "podman.log"
    env = {"PATH": f"{folder}{os.pathsep}/nonexistent", "RLCRATE_ENGINE": ""}
    return folder, log, env


def _manifest(tmp_path: Path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(tiny_manifest()))
    return path


def test_doctor_calls_an_engine_that_cannot_start_a_container_unusable(only_podman):
    folder, log, env = only_podman
    _podman(folder, probe_ok=False, log=log)
    out = rlcrate("doctor", env_extra=env)
    row = next(ln for ln in out.stdout.splitlines() if "engine podman" in ln)
    assert "│ yes " in row and "│ no " in row, row  # installed, not usable
    assert "cannot start a container" in out.stdout and "RLIMIT_NOFILE" in out.stdout


def test_run_does_not_pick_it_and_says_why_in_one_line(only_podman, tmp_path):
    folder, log, env = only_podman
    _podman(folder, probe_ok=False, log=log)
    out = rlcrate(
        "run",
        str(_manifest(tmp_path)),
        "--image",
        "cpu",
        "--out",
        str(tmp_path / "o"),
        env_extra=env,
    )
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(errors) == 1 and "podman" in errors[0] and "RLIMIT_NOFILE" in errors[0], errors
    runs = [
        ln for ln in log.read_text().splitlines() if ln.startswith("run") and "--rootfs" not in ln
    ]
    assert not runs, "the image was started with an engine known not to work"


def test_named_engine_that_cannot_start_a_container_is_one_line(only_podman, tmp_path):
    folder, log, env = only_podman
    _podman(folder, probe_ok=False, log=log)
    out = rlcrate(
        "run",
        str(_manifest(tmp_path)),
        "--image",
        "cpu",
        "--out",
        str(tmp_path / "o"),
        env_extra={**env, "RLCRATE_ENGINE": "podman"},
    )
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2 and len(errors) == 1, out.stderr
    assert errors[0].startswith("error: container engine podman:") and "RLIMIT_NOFILE" in errors[0]


def test_engine_exit_126_is_an_error_line_and_exit_1(only_podman, tmp_path):
    """The probe passes but the run itself fails in the runtime: exit 1 with one `error:` line,
    and no "(paths under /out ...)" line for a run that never started."""
    folder, log, env = only_podman
    _podman(folder, probe_ok=True, log=log)
    out = rlcrate(
        "run",
        str(_manifest(tmp_path)),
        "--image",
        f"rlcrate-cpu:{__version__}",
        "--out",
        str(tmp_path / "o"),
        env_extra=env,
    )
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 1, out.stdout + out.stderr
    assert len(errors) == 1 and "126" in errors[0] and "could not start" in errors[0], errors
    assert "paths under /out" not in out.stdout + out.stderr
    assert "Traceback" not in out.stderr
