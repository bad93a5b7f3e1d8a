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
import tarfile
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
from tests.helpers import ROOT

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
        assert cmd[cmd.index("--timestamp") + 1] == str(image_build.FILES_EPOCH)
        assert cmd[cmd.index("--format") + 1] == "oci"  # docker's records random ids
        assert cmd[cmd.index("--volume") + 1] == vols[0]
        assert "--layers" in cmd
    if engine == "buildah":
        assert cmd[cmd.index("--isolation") + 1] == "chroot"


def test_docker_build_volumes_become_build_inputs(tmp_path):
    """docker mounts no host folders in a build: volumes under /run/rlcrate-build travel as an
    image of their own (BUILD_INPUTS); anything else is refused in one line."""
    (tmp_path / "wheels").mkdir()
    (tmp_path / "ca.crt").write_text("x")
    layout = image_build.inputs_layout(
        [
            f"{tmp_path / 'wheels'}:/run/rlcrate-build/wheels:ro",
            f"{tmp_path / 'ca.crt'}:/run/rlcrate-build/ca.crt",
        ]
    )
    assert layout == {"wheels": tmp_path / "wheels", "ca.crt": tmp_path / "ca.crt"}
    for bad in (
        f"{tmp_path}:/etc/pip",
        f"{tmp_path}:/run/rlcrate-build/../x",
        "/nowhere:/run/rlcrate-build/x",
    ):
        with pytest.raises(UserInputError, match="--volume"):
            image_build.inputs_layout([bad])
    with pytest.raises(UserInputError, match="BUILD_INPUTS"):
        image_build.build_command(
            "docker", "cpu", "t", root=tmp_path, build_args={}, volumes=["a:b"]
        )


def test_docker_builder_needs_buildkit(fake_path):
    """buildx where installed; else a client with BuildKit built in (before 23); a newer client
    without buildx has only the legacy builder: one line saying what to install."""
    for version, buildx, expected in (
        ("28.2.2", True, ["docker", "buildx", "build", "--load"]),
        ("20.10.24+dfsg1", False, ["docker", "build"]),
        ("28.2.2", False, None),
    ):
        _fake_bin(
            fake_path,
            "docker",
            f"""[ "$1" = buildx ] && {{ {"echo v0.20" if buildx else "exit 1"}; exit; }}
            echo {version}
            """,
        )
        if expected is None:
            with pytest.raises(UserInputError, match="no buildx plugin"):
                image_build.docker_builder()
        else:
            assert image_build.docker_builder() == expected


def test_metadata_created_from_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    meta = image_build.metadata_args(ROOT)
    assert meta["CREATED"] == "2023-11-14T22:13:20Z" and meta["VERSION"] == __version__


@pytest.fixture
def toolkit(fake_path, tmp_path, monkeypatch):
    """A host with the NVIDIA Container Toolkit: its `nvidia-ctk` and, where asked, a CDI spec
    (fakes: a GPU host cannot be made here; the command lines are what is tested)."""
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    monkeypatch.setattr(image_run, "CDI_DIRS", (cdi,))
    monkeypatch.setenv("PATH", str(fake_path))
    return fake_path, cdi


def test_gpu_options_follow_what_the_host_has(toolkit):
    bin_dir, cdi = toolkit
    with pytest.raises(UserInputError, match="lacks") as err:
        image_run.gpu_options("docker")
    assert "\n" not in str(err.value)
    with pytest.raises(UserInputError, match="nvidia-ctk cdi generate"):
        image_run.gpu_options("podman")
    (cdi / "nvidia.yaml").write_text("cdiVersion: 0.5.0\n")
    assert image_run.gpu_options("podman") == ["--device", "nvidia.com/gpu=all"]
    assert image_run.gpu_options("docker") == ["--device", "nvidia.com/gpu=all"]
    _fake_bin(bin_dir, "nvidia-ctk", "exit 0\n")
    assert image_run.gpu_options("docker") == ["--gpus", "all"]


def test_run_command_docker_cuda(tmp_path, toolkit):
    _fake_bin(toolkit[0], "nvidia-ctk", "exit 0\n")
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


def test_run_command_podman_and_buildah(tmp_path, monkeypatch, toolkit):
    (toolkit[1] / "nvidia.yaml").write_text("cdiVersion: 0.5.0\n")
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
        [ "$1" = version ] && echo 20.10.24 && exit 0  # the daemon answers
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


def _layers(ref: str, folder: Path) -> list[dict[str, tuple]]:
    """Each layer of `ref` as {path: (content hash or link target, mode, uid, gid, mtime)}."""
    subprocess.run(
        ["buildah", "push", "--quiet", "--disable-compression", ref, f"oci:{folder}"],
        check=True, capture_output=True,
    )  # fmt: skip
    blob = folder / "blobs" / "sha256"
    index = json.loads((folder / "index.json").read_text())
    manifest = json.loads((blob / index["manifests"][0]["digest"][7:]).read_text())
    layers = []
    for layer in manifest["layers"]:
        with tarfile.open(blob / layer["digest"][7:]) as tar:
            layers.append(
                {m.name: (hashlib.sha256(tar.extractfile(m).read()).hexdigest()  # type: ignore[union-attr]
                          if m.isfile() else m.linkname, m.mode, m.uid, m.gid, m.mtime)
                 for m in tar}
            )  # fmt: skip
    return layers


def _what_differs(a: str, b: str, tmp: Path) -> str:
    first, second = _layers(a, tmp / "a"), _layers(b, tmp / "b")
    lines = [f"{a} and {b} differ"]
    for i, (x, y) in enumerate(zip(first, second, strict=False)):
        paths = sorted(p for p in set(x) | set(y) if x.get(p) != y.get(p))
        if paths:
            lines.append(f"layer {i}: {len(paths)} paths differ, e.g. " + "; ".join(
                f"{p}: {x.get(p)} vs {y.get(p)}" for p in paths[:5]))  # fmt: skip
    if len(lines) == 1:
        configs = [_config(ref) for ref in (a, b)]
        keys = sorted(
            k for k in set(configs[0]) | set(configs[1]) if configs[0].get(k) != configs[1].get(k)
        )
        lines.append(f"every layer is the same; the configs differ in {keys}: " + "; ".join(
            f"{k}: {configs[0].get(k)} vs {configs[1].get(k)}" for k in keys)[:3000])  # fmt: skip
    return "\n".join(lines)


def _config(ref: str) -> dict:
    """An image's OCI config, flattened to dotted keys."""
    data = json.loads(
        subprocess.run(
            ["buildah", "inspect", "--type", "image", ref], capture_output=True, text=True
        ).stdout
    )["OCIv1"]
    flat: dict = {}

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else key)
        else:
            flat[path] = node

    walk(data, "")
    return flat


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
        assert "godot4" in out.stdout and "4.6.3" in out.stdout
        assert "godot3-server" in out.stdout and "3.2.3" in out.stdout

    def test_rebuilt_with_empty_caches_it_has_the_same_digest(self, cpu_image, tmp_path):
        """The same commit built again with no layer cache: the same image, byte for byte (same
        config digest, same layers); if not, the layers and files that differ are named."""
        tag = "localhost/rlcrate-cpu:rebuilt"
        out = _build("--no-cache", tag=tag)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        try:
            again = image_engine.inspect("buildah", tag)
            assert again is not None
            if again.id != cpu_image.id:
                pytest.fail(_what_differs(cpu_image.ref, tag, tmp_path))
        finally:
            subprocess.run(["buildah", "rmi", tag], capture_output=True)

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
