"""Container engines as `run --image`, `doctor` and the image commands meet them, played by fake
engines on PATH where the case cannot be produced on demand (a daemon that answers with the CPU
image, one that does not answer, podman in a sandbox that forbids raising RLIMIT_NOFILE so that
`crun` exits 126); `rlcrate` is the installed console script. The manifest's `image:` sends the
units into that image, `--image` overrides it; `doctor` calls an engine that cannot start a
container unusable and `run` does not pick it; an engine exit status (125-127) is one `error:`
line with exit 1. And the runner installed alone (no extras) validates, doctors and drives an
image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from runner import __version__
from runner.checks.load import load_manifest
from runner.images import engine
from tests.helpers import ROOT, rlcrate, tiny_manifest

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


def test_doctor_reuses_the_last_container_probe_until_asked_or_the_engine_changes(
    only_podman, tmp_path
):
    """The container probe (podman's `run`) is what can hang for half a minute: doctor shows
    the last one's finding with its age, `doctor --probe` probes again, and so does a doctor
    after the engine's binary or answer changed."""
    folder, log, env = only_podman
    env = {**env, "RLCRATE_CACHE_DIR": str(tmp_path / "cache")}
    podman = _podman(folder, probe_ok=False, log=log)

    def doctor(*args: str) -> tuple[str, int]:
        log.unlink(missing_ok=True)
        out = rlcrate("doctor", *args, env_extra=env)
        assert out.returncode == 0, out.stderr
        row = " ".join(ln for ln in out.stdout.splitlines() if "podman" in ln or "probe" in ln)
        probes = sum("--rootfs" in ln for ln in log.read_text().splitlines())
        return row, probes

    row, probes = doctor()
    assert probes == 1 and "RLIMIT_NOFILE" in row and "ago" not in row, row
    row, probes = doctor()
    assert probes == 0 and "RLIMIT_NOFILE" in row and "s ago" in row, row
    row, probes = doctor("--probe")
    assert probes == 1 and "ago" not in row, row
    _podman(folder, probe_ok=True, log=log)  # another binary (its time changes): a new answer
    os.utime(podman, ns=(0, os.stat(podman).st_mtime_ns + 10**9))
    row, probes = doctor()
    assert probes == 1 and "RLIMIT_NOFILE" not in row, row


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


def _fake(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(0o755)


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    """A docker whose daemon answers, that has the CPU image and logs every `run`."""
    folder, log = tmp_path / "bin", tmp_path / "docker.log"
    folder.mkdir()
    labels = {engine.LABEL_VARIANT: "cpu"}
    inspect = json.dumps([{"Id": "sha256:" + "c" * 64, "Config": {"Labels": labels}}])
    _fake(
        folder,
        "docker",
        f"""
        [ "$1" = "version" ] && echo 27.0 && exit 0
        [ "$1 $2" = "image inspect" ] && echo '{inspect}' && exit 0
        [ "$1" = "run" ] && echo "$@" >> {log} && exit 0
        exit 99
        """,
    )
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RLCRATE_ENGINE", "docker")
    return log


def test_manifest_image_sends_the_units_into_that_image(fake_docker, write_manifest, tmp_path):
    path = write_manifest(tiny_manifest(image="cpu"))
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), report=True)
    assert out.returncode == 0, out.stderr
    argv = fake_docker.read_text().split()
    tag = f"rlcrate-cpu:{__version__}"
    # inside, the runner runs the units right there and decides the jobs from the manifest
    assert argv[argv.index(tag) + 1 :] == [
        "rlcrate",
        "run",
        f"/in/{path.name}",
        "--out",
        "/out",
        "--image",
        "local",
        "--executor",
        "local",
    ]
    assert not (tmp_path / "runs" / "tiny").exists()  # nothing ran here


def test_image_option_overrides_the_manifest(fake_docker, write_manifest, tmp_path):
    path = write_manifest(tiny_manifest(image="cuda"))
    out = rlcrate("run", str(path), "--image", "cpu", "--jobs", "train", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert f"rlcrate-cpu:{__version__}" in fake_docker.read_text()
    assert "--jobs train" in fake_docker.read_text()


def test_image_default_is_local(write_manifest):
    assert load_manifest(write_manifest(tiny_manifest())).image == "local"


def test_doctor_lists_docker_without_daemon_as_not_usable(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    _fake(folder, "docker", 'echo "Cannot connect to the Docker daemon" >&2; exit 1\n')
    _fake(folder, "podman", "echo crun; exit 0\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.delenv("RLCRATE_ENGINE", raising=False)
    out = rlcrate("doctor")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "engine docker" in line)
    cells = [c.strip() for c in row.split("│")]
    assert cells[2:5] == ["yes", "no", "no daemon answers: Cannot connect to the Docker daemon"]
    # image commands take the first engine that answers, not the first one installed (the probe
    # of whether an engine starts containers is cached per process: ask afresh for these fakes)
    from runner.checks import installed

    installed.container_problem.cache_clear()
    try:
        assert engine.detect_engine() == "podman"
    finally:
        installed.container_problem.cache_clear()


@pytest.mark.slow  # builds and installs rlcrate into a fresh virtual environment (about 1 min)
def test_light_install_validates_doctors_and_drives_an_image(fake_docker, tmp_path):
    venv = tmp_path / "light"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", str(ROOT)], capture_output=True, text=True
    )
    assert pip.returncode == 0, pip.stderr
    assert "License" not in pip.stderr  # no setuptools license-table deprecation banner
    exe = str(venv / "bin/rlcrate")
    py = str(venv / "bin/python")
    for module in ("torch", "numpy", "stable_baselines3"):
        assert subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode
    quick = str(ROOT / "manifests/quickstart.yaml")
    val = subprocess.run([exe, "validate", quick], capture_output=True, text=True)
    assert val.returncode == 0 and "not checked" in val.stdout, val.stderr
    assert subprocess.run([exe, "doctor"], capture_output=True, text=True).returncode == 0
    here = subprocess.run(
        [exe, "run", quick, "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert here.returncode == 2 and "--image cpu" in here.stderr and "Traceback" not in here.stderr
    there = subprocess.run(
        [exe, "run", quick, "--image", "cpu", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
    )
    assert there.returncode == 0, there.stderr
    assert "/in/quickstart.yaml" in fake_docker.read_text()
    data = yaml.safe_load(Path(quick).read_text())
    assert data.get("image", "local") == "local"  # quickstart runs here unless told otherwise


def test_image_builds_find_the_checkout():
    from runner.images.build import source_root

    assert (source_root() / "Dockerfile.cpu").is_file()
