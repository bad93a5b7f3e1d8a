"""The CPU image through a real Docker Engine: built from Dockerfile.cpu with BuildKit, run by
`rlcrate run --image` (same numbers as a local run and as buildah), stopped by Ctrl-C and by a
SIGKILL of the runner without leaving a container, resumed; the cloud-VM path through a real
registry; images carried between docker and buildah. The daemon and the registry are the tests'
own (tests/docker_daemon.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from runner import __version__
from tests import docker_daemon
from tests.helpers import rlcrate, rlcrate_exe, start_run, tiny_manifest
from tests.images.test_images import _can_build, _sandbox_flags

WHY_NOT = docker_daemon.missing() or _can_build()
pytestmark = [
    pytest.mark.image,
    pytest.mark.slow,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
]
TAG = f"rlcrate-cpu:{__version__}"


@pytest.fixture(scope="module")
def docker():
    folder = Path(tempfile.mkdtemp(prefix="rlcrate-docker-"))  # not pytest's: others reach it
    folder.chmod(0o711)
    with docker_daemon.started(folder / "engine") as d:
        yield d
    folder.rmdir()


def _docker_flags(docker: docker_daemon.Docker) -> list[str]:
    """images/sandbox-flags.sh's options, with its debootstrapped base carried from buildah's
    store to docker (`buildah push docker-archive:`, `docker load`) and on to the registry, since
    docker pins a base by its registry digest (as it would debian:bookworm-slim)."""
    flags = _sandbox_flags()
    base = flags[flags.index("--base") + 1]
    ref = f"{docker.registry}/rlcrate-base:bookworm"
    with tempfile.TemporaryDirectory() as tmp:
        archive = f"{tmp}/base.tar"
        subprocess.run(
            ["buildah", "push", "--quiet", base, f"docker-archive:{archive}:{ref}"],
            check=True, capture_output=True,
        )  # fmt: skip
        docker("load", "-i", archive)
    docker("push", ref)
    pinned = f"{ref}@{docker.pushed_digest(ref)}"
    return [pinned if flag == base else flag for flag in flags]


@pytest.fixture(scope="module")
def image(docker) -> str:
    """`rlcrate image build cpu --engine docker`, through the console script."""
    res = rlcrate(
        "image", "build", "cpu", "--engine", "docker", *_docker_flags(docker),
        env_extra=docker.env, timeout=1800,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == TAG
    assert "rlcrate-build-inputs" not in docker("images", "--format", "{{.Repository}}")
    return TAG


def _manifest(folder: Path, **over) -> Path:
    path = folder / "in" / "m.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    m = tiny_manifest(**{"train__timesteps": 2048, "eval__episodes": 3, **over})
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    return path


def _returns(out: Path) -> list[float]:
    evals = json.loads(next(out.rglob("eval.json")).read_text())
    return [e["return"] for e in evals["episodes"]]


def test_image_ls_names_the_engine_and_the_size(docker, image):
    res = rlcrate("image", "ls", env_extra=docker.env)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("images in docker")
    row = next(line for line in lines if line.startswith(image))
    assert row.split()[-3] == "GB" or " GB" in row, row
    labels = json.loads(docker("image", "inspect", "--format", "{{json .Config.Labels}}", image))
    assert labels["io.rlcrate.variant"] == "cpu" and labels["org.opencontainers.image.version"]


def test_files_belong_to_the_caller(docker, image):
    """The container runs as the caller's uid: a caller other than root gets files it owns."""
    uid = 4321
    with tempfile.TemporaryDirectory(prefix="rlcrate-uid-") as tmp:  # pytest's is root's only
        folder = Path(tmp)
        folder.chmod(0o755)
        manifest = _manifest(folder, train__timesteps=256, eval__episodes=1)
        out, home = folder / "out", folder / "home"
        for made in (out, home):
            made.mkdir()
            os.chown(made, uid, uid)
        sock = Path(docker.host.removeprefix("unix://"))
        sock.chmod(0o666)  # the caller reaches the daemon (as a member of a docker group would)
        res = subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", rlcrate_exe(),
             "run", str(manifest), "--image", image, "--out", str(out), "--no-report"],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, **docker.env, "HOME": str(home)},
        )  # fmt: skip
        sock.chmod(0o660)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        written = [p for p in out.rglob("*") if p.is_file()]
        assert written and {p.stat().st_uid for p in written} == {uid}


def _wait_for_checkpoint(proc: subprocess.Popen, unit: Path, after: int = 0) -> None:
    deadline = time.monotonic() + 300
    while not any(int(p.stem.split("-")[1]) > after for p in unit.glob("checkpoints/step-*.zip")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.3)


def _no_container_within(docker, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while docker.containers():
        assert time.monotonic() < deadline, docker("ps", "-a")
        time.sleep(0.5)


def test_sigkill_and_ctrl_c_leave_no_container_and_the_unit_resumes(docker, image, tmp_path):
    manifest = _manifest(tmp_path, train__timesteps=16_000, train__checkpoint_every=1024)
    out = tmp_path / "runs"
    proc = start_run(manifest, out, "--image", image, env_extra=docker.env)
    deadline = time.monotonic() + 120
    while not list(out.glob("tiny/*/units/default/seed-0")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.3)
    unit = next(out.glob("tiny/*/units/default/seed-0"))
    run = unit.parents[2]
    _wait_for_checkpoint(proc, unit)
    proc.kill()  # the runner only: its docker client is told to stop the container
    proc.communicate()
    _no_container_within(docker, 60)
    assert json.loads((unit / "status.json").read_text())["state"] == "interrupted"

    done = max(int(p.stem.split("-")[1]) for p in unit.glob("checkpoints/step-*.zip"))
    proc = start_run(
        run / "manifest.yaml", out, "--image", image, "--resume", str(run), env_extra=docker.env
    )
    _wait_for_checkpoint(proc, unit, after=done)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    _no_container_within(docker, 10)
    assert json.loads((unit / "status.json").read_text())["state"] == "interrupted"

    res = rlcrate(
        "run", str(run / "manifest.yaml"), "--image", image, "--resume", str(run),
        env_extra=docker.env,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["resumed_from"] > done
    assert len(list(out.glob("tiny/*"))) == 1 and docker.containers() == []


def test_the_cloud_vm_path_and_the_same_numbers_in_every_engine(docker, image, tmp_path):
    """docs/guides/cloud-gpu.md, the registry way: tag, push, read the digest; on "the VM" (this
    daemon, the tag removed) pull by digest and run `--image REPO@sha256:D`. buildah pulls the
    same digest and runs the same manifest: eval.json's episodes are identical locally, through
    docker and through buildah."""
    remote = f"{docker.registry}/rlcrate-cpu:{__version__}"
    docker("tag", image, remote)
    docker("push", remote)
    pinned = docker("image", "inspect", "--format", "{{index .RepoDigests 0}}", remote)
    repo, _, digest = pinned.partition("@")
    assert repo == remote.rsplit(":", 1)[0] and digest.startswith("sha256:")
    docker("rmi", remote)  # the name is gone; the layers stay (a full pull costs CI 40 s more)
    pulled_out = docker("pull", pinned)
    assert f"Digest: {digest}" in pulled_out  # the engine checked what it got against it
    manifest = _manifest(tmp_path)
    runs = {
        "local": rlcrate("run", str(manifest), "--out", str(tmp_path / "local")),
        "docker": rlcrate(
            "run", str(manifest), "--image", pinned, "--out", str(tmp_path / "docker"),
            env_extra=docker.env,
        ),
    }  # fmt: skip
    assert docker.containers() == []  # --rm
    pulled = subprocess.run(
        ["buildah", "pull", "--quiet", "--tls-verify=false", pinned],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert pulled.returncode == 0, pulled.stderr
    try:
        runs["buildah"] = rlcrate(
            "run", str(manifest), "--image", pinned, "--out", str(tmp_path / "buildah"),
            env_extra={"RLCRATE_ENGINE": "buildah"},
        )  # fmt: skip
    finally:
        subprocess.run(["buildah", "rmi", pinned], capture_output=True)  # the name, not the id
    for where, res in runs.items():
        assert res.returncode == 0, (where, res.stdout[-2000:] + res.stderr[-2000:])
    returns = {where: _returns(tmp_path / where) for where in runs}
    assert returns["docker"] == returns["local"] == returns["buildah"], returns
    provenance = json.loads(next((tmp_path / "docker").rglob("provenance.json")).read_text())
    assert provenance["image"]["tag"] == pinned and provenance["image"]["digest"] == digest


def test_saved_by_docker_loaded_by_buildah(docker, image, tmp_path):
    """`docker save` into buildah (`buildah pull docker-archive:`), the base image (the other
    direction carried it into docker): the same layers on both sides."""
    base = next(r for r in docker("images", "--format", "{{.Repository}}:{{.Tag}}").split()
                if r.endswith("/rlcrate-base:bookworm"))  # fmt: skip
    archive = tmp_path / "base.tar"
    docker("save", "-o", str(archive), base)
    pulled = subprocess.run(
        ["buildah", "pull", "--quiet", f"docker-archive:{archive}"],
        check=True, capture_output=True, text=True,
    ).stdout.split()[-1]  # fmt: skip
    try:
        inspected = subprocess.run(
            ["buildah", "inspect", "--type", "image", pulled],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        layers = json.loads(inspected)["OCIv1"]["rootfs"]["diff_ids"]
    finally:
        subprocess.run(["buildah", "rmi", base], capture_output=True)  # the name, not the id
    assert layers == json.loads(
        docker("image", "inspect", "--format", "{{json .RootFS.Layers}}", base)
    )


def test_bad_input_is_one_line(docker, image, tmp_path):
    manifest = _manifest(tmp_path, train__timesteps=256)
    cases = {
        "no daemon": (
            ["image", "ls"],
            {**docker.env, "DOCKER_HOST": f"unix://{tmp_path}/none.sock"},
            "container engine docker: no daemon answers",
        ),
        "image not there": (
            ["run", str(manifest), "--image", f"{docker.registry}/rlcrate-cpu:absent"],
            docker.env,
            "is not in docker's local images",
        ),
        "digest not the pinned one": (
            ["run", str(manifest), "--image", f"{docker.registry}/rlcrate-cpu@sha256:{'0' * 64}"],
            docker.env,
            "is not in docker's local images",
        ),
    }
    for name, (args, env, expected) in cases.items():
        res = rlcrate(*args, env_extra=env)
        errors = [ln for ln in res.stderr.splitlines() + res.stdout.splitlines() if ln.strip()]
        assert res.returncode == 2, (name, res.stdout, res.stderr)
        assert len(errors) == 1 and expected in errors[0], (name, errors)
    assert docker.containers() == []
