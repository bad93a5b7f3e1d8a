"""`rlcrate image export`: a real (tiny) image committed with buildah, exported as an OCI archive;
the .sif path where Apptainer is absent; the command lines."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from runner.images.engine import LABEL_DIGEST, LABEL_LOCK, LABEL_REF, ImageInfo
from runner.images.export import oci_archive_command
from runner.images.sif import build_command, definition
from tests.helpers import rlcrate


@pytest.fixture
def tiny_image(tmp_path):
    if shutil.which("buildah") is None:
        pytest.skip("buildah is not installed (make system-deps)")
    tag = f"localhost/rlcrate-cpu:exporttest-{secrets.token_hex(3)}"
    payload = tmp_path / "hello.txt"
    payload.write_text("hello from rlcrate\n")
    ctr = subprocess.run(
        ["buildah", "from", "scratch"], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        subprocess.run(
            ["buildah", "copy", ctr, str(payload), "/hello.txt"], check=True, capture_output=True
        )
        subprocess.run(["buildah", "commit", "--quiet", ctr, tag], check=True, capture_output=True)
    finally:
        subprocess.run(["buildah", "rm", ctr], capture_output=True)
    yield tag
    subprocess.run(["buildah", "rmi", tag], capture_output=True)


def _json_member(tar: tarfile.TarFile, name: str) -> Any:
    found = tar.extractfile(name)
    assert found is not None, f"{name} is not a file in the archive"
    return json.load(found)


@pytest.mark.image
def test_export_oci_archive_with_buildah(tiny_image, tmp_path):
    out_file = tmp_path / "exported" / "tiny.oci.tar"
    out = rlcrate(
        "image",
        "export",
        tiny_image,
        "--format",
        "oci-archive",
        "--engine",
        "buildah",
        "-o",
        str(out_file),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(out_file)
    with tarfile.open(out_file) as tar:
        names = tar.getnames()
        assert "oci-layout" in names and "index.json" in names
        index = _json_member(tar, "index.json")
        manifest_digest = index["manifests"][0]["digest"].split(":")[1]
        manifest = _json_member(tar, f"blobs/sha256/{manifest_digest}")
        layer = manifest["layers"][0]["digest"].split(":")[1]
        assert f"blobs/sha256/{layer}" in names
    assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"]
    assert not list(out_file.parent.glob(".*partial"))


def test_export_missing_image_is_exit_2(tmp_path):
    if shutil.which("buildah") is None:
        pytest.skip("buildah is not installed (make system-deps)")
    out = rlcrate(
        "image",
        "export",
        "rlcrate-cpu:0.0.0-nosuch",
        "--engine",
        "buildah",
        "-o",
        str(tmp_path / "x.tar"),
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        "error: buildah has no image rlcrate-cpu:0.0.0-nosuch; build it with "
        "`rlcrate image build cpu`"
    )
    assert not (tmp_path / "x.tar").exists()


def test_export_sif_without_apptainer_is_one_line_exit_2(tmp_path):
    """PATH without Apptainer's folders (it may be installed here: make apptainer)."""
    folders = os.environ["PATH"].split(os.pathsep)
    bare = [
        f for f in folders if not any(Path(f, n).exists() for n in ("apptainer", "singularity"))
    ]
    out = rlcrate(
        "image", "export", "cpu", "--format", "sif", "-o", str(tmp_path / "x.sif"),
        env_extra={"PATH": os.pathsep.join(bare)},
    )  # fmt: skip
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --format sif needs Apptainer")
    assert not list(tmp_path.iterdir())


def test_export_command_lines():
    tag, out = "rlcrate-cuda:0.1.0", Path("/o/x.tar")
    assert oci_archive_command("buildah", tag, out) == [
        "buildah",
        "push",
        "--quiet",
        tag,
        f"oci-archive:/o/x.tar:{tag}",
    ]
    assert oci_archive_command("podman", tag, out) == [
        "podman",
        "save",
        "--quiet",
        "--format",
        "oci-archive",
        "-o",
        "/o/x.tar",
        tag,
    ]
    assert build_command("apptainer", Path("/o/x.def"), Path("/o/x.sif")) == [
        "apptainer",
        "build",
        "--force",
        "--disable-cache",
        "--mksquashfs-args",
        "-comp gzip -Xcompression-level 1",
        "/o/x.sif",
        "/o/x.def",
    ]


def test_sif_definition_adds_the_image_digest_to_its_labels():
    info = ImageInfo(
        "localhost/rlcrate-cpu:0.1.0", "sha256:" + "a" * 64, None, None, {LABEL_LOCK: "b" * 64}
    )
    text = definition(Path("/w/image.oci.tar"), info)
    assert text.splitlines()[:4] == [
        "Bootstrap: oci-archive",
        "From: /w/image.oci.tar",
        "",
        "%labels",
    ]
    assert f"    {LABEL_DIGEST} sha256:{'a' * 64}" in text.splitlines()
    assert f"    {LABEL_REF} localhost/rlcrate-cpu:0.1.0" in text.splitlines()
    assert f"    {LABEL_LOCK} {'b' * 64}" in text.splitlines()
