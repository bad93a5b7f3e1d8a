"""runner.images: engine command lines, the CUDA driver preflight, and (marked image, slow) the
CPU image built with buildah from a debootstrapped base and run.

The image tests build through `images/sandbox-flags.sh` (local base from images/base.sh, cached
under $RLCRATE_BASE_CACHE, default /var/cache/rlcrate; this machine's CA bundle and wheel folder
mounted for the build only). Later runs reuse the cached layers, so only the first is slow.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from runner import __version__
from runner.errors import UserInputError
from runner.images import build as image_build
from runner.images import engine as image_engine
from runner.images import run as image_run

ROOT = Path(__file__).resolve().parents[1]
OLD_DRIVER, NEW_DRIVER = "535.104.05", "580.95.05"


def _info(variant: str = "cpu", **labels: str) -> image_engine.ImageInfo:
    return image_engine.ImageInfo(
        f"rlcrate-{variant}:{__version__}",
        "sha256:" + "a" * 64,
        "sha256:" + "b" * 64,
        None,
        {image_engine.LABEL_VARIANT: variant, **labels},
    )


def _fake_bin(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(0o755)


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    """A folder first on PATH for fake nvidia-smi / docker scripts."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def test_targets_and_tags():
    assert image_engine.resolve_target("cpu") == ("cpu", f"rlcrate-cpu:{__version__}")
    assert image_engine.resolve_target("localhost/rlcrate-cuda:dev") == (
        "cuda",
        "localhost/rlcrate-cuda:dev",
    )
    with pytest.raises(UserInputError, match="expected cpu, cuda"):
        image_engine.resolve_target("ubuntu:24.04")


def test_base_must_be_pinned_by_digest():
    args = image_build.base_args("mirror.example/debian:bookworm-slim@sha256:" + "c" * 64)
    assert args["BASE_NAME"] == "mirror.example/debian:bookworm-slim"
    assert args["BASE_DIGEST"] == "sha256:" + "c" * 64
    with pytest.raises(UserInputError, match="pinned by digest"):
        image_build.base_args("debian:bookworm-slim")


@pytest.mark.parametrize("engine", image_engine.ENGINES)
def test_build_command(engine, tmp_path):
    args = {"SOURCE_DATE_EPOCH": "1700000000", "VERSION": "1.2.3"}
    vols = [] if engine == "docker" else ["/etc/ssl/certs/ca-certificates.crt:/run/ca.crt:ro"]
    cmd = image_build.build_command(
        engine, "cpu", "rlcrate-cpu:1.2.3", root=tmp_path, build_args=args, volumes=vols
    )
    assert cmd[0] == engine and cmd[-1] == str(tmp_path)
    assert cmd[cmd.index("-f") + 1] == str(tmp_path / "Dockerfile.cpu")
    assert "--build-arg" in cmd and "VERSION=1.2.3" in cmd
    if engine != "docker":
        assert cmd[cmd.index("--timestamp") + 1] == "1700000000"
        assert cmd[cmd.index("--volume") + 1] == vols[0]
        assert "--layers" in cmd
    if engine == "buildah":
        assert cmd[cmd.index("--isolation") + 1] == "chroot"


def test_docker_build_cannot_mount(tmp_path):
    with pytest.raises(UserInputError, match="cannot mount"):
        image_build.build_command(
            "docker", "cpu", "t", root=tmp_path, build_args={}, volumes=["a:b"]
        )


def test_metadata_created_from_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    meta = image_build.metadata_args(ROOT)
    assert meta["CREATED"] == "2023-11-14T22:13:20Z" and meta["VERSION"] == __version__


def test_run_command_docker_cuda(tmp_path):
    manifest = tmp_path / "m.yaml"
    info = _info("cuda", **{image_engine.LABEL_MIN_DRIVER: "580.65.06"})
    cmd = image_run.run_command(
        "docker",
        info,
        manifest=manifest,
        out_dir=tmp_path / "out",
        rlcrate_args=["--jobs", "train"],
    )
    assert cmd[:3] == ["docker", "run", "--rm"]
    assert cmd[cmd.index("--gpus") + 1] == "all"
    assert cmd[cmd.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert f"{tmp_path}:/in:ro" in cmd and f"{tmp_path / 'out'}:/out" in cmd
    assert f"RLCRATE_IMAGE={info.ref}" in cmd and f"RLCRATE_IMAGE_DIGEST={info.digest}" in cmd
    assert cmd[cmd.index(info.ref) + 1 :] == [
        "rlcrate",
        "run",
        "/in/m.yaml",
        "--out",
        "/out",
        "--image",
        "local",
        "--jobs",
        "train",
    ]


def test_run_command_podman_and_buildah(tmp_path, monkeypatch):
    manifest = tmp_path / "m.yaml"
    monkeypatch.setattr(os, "getuid", lambda: 1234)
    podman = image_run.run_command(
        "podman", _info("cuda"), manifest=manifest, out_dir=tmp_path, rlcrate_args=[]
    )
    assert "keep-id" in podman and "nvidia.com/gpu=all" in podman
    buildah = image_run.run_command(
        "buildah",
        _info("cpu"),
        manifest=manifest,
        out_dir=tmp_path,
        rlcrate_args=[],
        container="ctr",
    )
    assert buildah[buildah.index("ctr") + 1 :][:3] == ["--", "/usr/bin/tini", "--"]
    with pytest.raises(UserInputError, match="buildah cannot give a container GPUs"):
        image_run.run_command(
            "buildah", _info("cuda"), manifest=manifest, out_dir=tmp_path, rlcrate_args=[]
        )


@pytest.mark.parametrize(
    ("driver", "ok"), [(OLD_DRIVER, False), ("580.65.06", True), (NEW_DRIVER, True)]
)
def test_driver_preflight_with_fake_nvidia_smi(fake_path, driver, ok):
    _fake_bin(fake_path, "nvidia-smi", f'echo "{driver}"\n')
    assert image_run.host_driver_version() == driver
    info = _info("cuda", **{image_engine.LABEL_MIN_DRIVER: "580.65.06"})
    if ok:
        image_run.check_driver(info, image_run.host_driver_version())
        return
    with pytest.raises(UserInputError) as err:
        image_run.check_driver(info, image_run.host_driver_version())
    message = str(err.value)
    assert "\n" not in message and "580.65.06" in message and OLD_DRIVER in message


def test_no_driver_is_one_line(fake_path, monkeypatch):
    monkeypatch.setenv("PATH", str(fake_path))  # no nvidia-smi anywhere
    with pytest.raises(UserInputError, match="nvidia-smi found none"):
        image_run.check_driver(
            _info("cuda", **{image_engine.LABEL_MIN_DRIVER: "580.65.06"}),
            image_run.host_driver_version(),
        )


def test_run_in_image_refuses_old_driver_before_starting(fake_path, tmp_path, write_manifest):
    """`rlcrate run M --image rlcrate-cuda:...` against a fake docker and an old fake driver:
    exit 2, one line naming both versions, and no `docker run`."""
    log = tmp_path / "docker.log"
    labels = {image_engine.LABEL_VARIANT: "cuda", image_engine.LABEL_MIN_DRIVER: "580.65.06"}
    inspect = json.dumps([{"Id": "sha256:" + "d" * 64, "Config": {"Labels": labels}}])
    _fake_bin(
        fake_path,
        "docker",
        f"""echo "$@" >> {log}
        [ "$1 $2" = "image inspect" ] && echo '{inspect}' && exit 0
        exit 99
        """,
    )
    _fake_bin(fake_path, "nvidia-smi", f'echo "{OLD_DRIVER}"\n')
    manifest = write_manifest((ROOT / "manifests" / "quickstart.yaml").read_text())
    from runner.cli import app

    result = CliRunner().invoke(
        app,
        [
            "run",
            str(manifest),
            "--image",
            f"rlcrate-cuda:{__version__}",
            "--out",
            str(tmp_path / "runs"),
        ],
        env={"RLCRATE_ENGINE": "docker"},
    )
    assert result.exit_code == 2, result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and OLD_DRIVER in errors[0] and "580.65.06" in errors[0]
    assert "run" not in [line.split()[0] for line in log.read_text().splitlines()]


def test_image_ls_without_engine(monkeypatch, tmp_path):
    from runner.cli import app

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("RLCRATE_ENGINE", raising=False)  # `make test` exports one
    result = CliRunner().invoke(app, ["image", "ls"])
    assert result.exit_code == 2 and "no container engine" in result.output


# --- the CPU image, built and run with buildah -------------------------------------------------


def _can_build() -> str | None:
    if shutil.which("buildah") is None or shutil.which("podman") is None:
        return "buildah and podman are needed"
    if os.geteuid() != 0:
        return "buildah --isolation chroot needs root here"
    return None


def _sandbox_flags() -> list[str]:
    out = subprocess.run(
        [str(ROOT / "images" / "sandbox-flags.sh")],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return out.stdout.split()


def _build(*extra: str, tag: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "runner",
        "image",
        "build",
        tag,
        "--engine",
        "buildah",
        *_sandbox_flags(),
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=ROOT)


@pytest.fixture(scope="module")
def cpu_image() -> image_engine.ImageInfo:
    tag = f"localhost/rlcrate-cpu:{__version__}"
    out = _build(tag=tag)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    info = image_engine.inspect("buildah", tag)
    assert info is not None
    return info


def _in_image(ref: str, *argv: str) -> subprocess.CompletedProcess:
    ctr = subprocess.run(
        ["buildah", "from", "--pull=never", ref], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    try:
        return subprocess.run(
            ["buildah", "run", "--isolation", "chroot", ctr, "--", *argv],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run(["buildah", "rm", ctr], capture_output=True)


@pytest.mark.image
@pytest.mark.slow
@pytest.mark.skipif(_can_build() is not None, reason=_can_build() or "")
class TestCpuImage:
    def test_labels_and_lock_hash(self, cpu_image):
        labels = cpu_image.labels
        lock = (ROOT / "images" / "cpu" / "requirements.lock").read_bytes()
        assert labels[image_engine.LABEL_LOCK] == hashlib.sha256(lock).hexdigest()
        assert labels[image_engine.LABEL_VARIANT] == "cpu"
        for key in ("version", "revision", "source", "created", "base.name", "base.digest"):
            assert labels.get(f"org.opencontainers.image.{key}"), key
        assert labels["org.opencontainers.image.version"] == __version__
        assert labels["org.opencontainers.image.base.digest"].startswith("sha256:")
        assert image_engine.LABEL_MIN_DRIVER not in labels

    def test_runs_as_non_root_under_tini(self, cpu_image):
        config = json.loads(
            subprocess.run(
                ["buildah", "inspect", "--type", "image", cpu_image.ref],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        docker = config["Docker"]["config"]
        assert docker["User"] == "1000:1000"
        assert docker["Entrypoint"][:2] == ["/usr/bin/tini", "--"]
        out = _in_image(cpu_image.ref, "sh", "-c", "id -u; touch /work/x $HOME/y && echo writable")
        assert out.stdout.split()[0] != "0" and "writable" in out.stdout, out.stderr

    def test_doctor_inside(self, cpu_image):
        out = _in_image(cpu_image.ref, *image_engine.ENTRYPOINT, "doctor")
        assert out.returncode == 0, out.stderr
        assert "godot3-server" in out.stdout and "3.2.3" in out.stdout

    def test_tampered_lock_hash_fails_the_build(self, cpu_image):
        out = _build("--build-arg", "LOCK_SHA256=" + "0" * 64, tag="localhost/rlcrate-cpu:tampered")
        assert out.returncode != 0
        assert "does not match LOCK_SHA256" in out.stdout + out.stderr

    def test_quickstart_smoke_in_image(self, cpu_image, tmp_path):
        """The quickstart manifest, shrunk to seconds, through `run_in_image` as the CLI uses it."""
        data = yaml.safe_load((ROOT / "manifests" / "quickstart.yaml").read_text())
        data.update(name="quickstart-smoke", seeds=[0], expect={})
        data["train"] = {"timesteps": 1024}
        data["eval"] = {"episodes": 2, "deterministic": True}
        manifest = tmp_path / "in" / "smoke.yaml"
        manifest.parent.mkdir()
        manifest.write_text(yaml.safe_dump(data, sort_keys=False))
        out_dir = tmp_path / "runs"
        code = image_run.run_in_image(
            manifest, cpu_image.ref, out_dir, ["--jobs", "train,eval"], engine="buildah"
        )
        assert code == 0
        provenance = json.loads(next(out_dir.rglob("provenance.json")).read_text())
        assert provenance["image"]["tag"] == cpu_image.ref
        assert provenance["image"]["digest"] in (cpu_image.digest, cpu_image.id)
        assert next(out_dir.rglob("eval.json")).stat().st_uid == os.getuid()
