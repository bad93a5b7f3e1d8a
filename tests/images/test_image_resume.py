"""`rlcrate run --image … --resume RUN_DIR` with the CPU image through buildah: a run inside the
image is interrupted, resumed inside the image from its checkpoint, and completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers import rlcrate, run_dir_of, tiny_manifest
from tests.images.test_images import _build, _can_build

TAG = "localhost/rlcrate-cpu:resume-test"  # its own tag: other suites may rebuild the default one


@pytest.fixture(scope="module")
def image_tag() -> str:
    out = _build(tag=TAG)  # layer-cached after the first CPU image build
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return TAG


@pytest.mark.image
@pytest.mark.slow
@pytest.mark.skipif(_can_build() is not None, reason=_can_build() or "")
def test_interrupt_and_resume_inside_the_image(image_tag, tmp_path, monkeypatch):
    monkeypatch.setenv("RLCRATE_ENGINE", "buildah")
    # 12,000 steps: the interrupt comes after the first checkpoint (1,024), with seconds to go
    m = tiny_manifest(train__timesteps=12_000, train__checkpoint_every=1024, eval__episodes=2)
    manifest = tmp_path / "in" / "m.yaml"
    manifest.parent.mkdir()
    manifest.write_text(yaml.safe_dump(m, sort_keys=False))
    out = tmp_path / "runs"
    exe = Path(sys.executable).with_name("rlcrate")
    proc = subprocess.Popen(
        [str(exe), "run", str(manifest), "--image", image_tag, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not list(out.glob("tiny/*/units/default/seed-0/checkpoints/step-*.zip")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    run = run_dir_of(out, "tiny")
    unit = run / "units/default/seed-0"
    assert json.loads((unit / "status.json").read_text())["state"] == "interrupted"
    resumed = rlcrate("run", str(run / "manifest.yaml"), "--image", image_tag, "--resume", str(run))
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] >= 12_000
    assert status["resumed_from"] and status["resumed_from"] >= 1024  # from its checkpoint
    assert (unit / "eval.json").stat().st_uid == os.getuid()
    assert len(list(out.glob("tiny/*"))) == 1  # the same run directory, not a new one


@pytest.mark.image
@pytest.mark.slow
@pytest.mark.skipif(_can_build() is not None, reason=_can_build() or "")
def test_reproduce_inside_the_image(image_tag, tmp_path, monkeypatch):
    """A run made here, reproduced inside the image: the environment diff is the image's."""
    monkeypatch.setenv("RLCRATE_ENGINE", "buildah")
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(tiny_manifest(), sort_keys=False))
    assert rlcrate("run", str(manifest), "--out", str(tmp_path / "runs")).returncode == 0
    bundle = tmp_path / "tiny.tar.gz"
    assert (
        rlcrate("archive", str(run_dir_of(tmp_path / "runs", "tiny")), "-o", str(bundle)).returncode
        == 0
    )
    res = rlcrate("reproduce", str(bundle), "--image", image_tag, "--out", str(tmp_path / "rerun"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    report = json.loads((run_dir_of(tmp_path / "rerun", "tiny") / "reproduce.json").read_text())
    rows = {r["what"]: r for r in report["environment"]}
    assert rows["image"]["here"] == image_tag and rows["image"]["archived"] == "-"
    assert report["same_environment"] is False and report["verdict"] in (
        "identical",
        "within tolerance",
    )
    assert res.stdout.strip().splitlines()[-1] == report["line"]
    assert f"image: {image_tag} (" in res.stdout
    assert "the archived run ran in no image" in res.stdout
