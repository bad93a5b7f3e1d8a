"""What a refused `reproduce` or a killed `archive` leaves behind: a refused
warm-start archive leaves no OUT/parents/<id>/, its error names the archive's file, an extra
file under parents/ is refused, a SIGKILLed archive's temporary part is cleared by the next."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess

import pytest
import yaml

from tests.archive_tools import altered
from tests.helpers import rlcrate, rlcrate_exe, run_dir_of, tiny_manifest, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """(a warm-started run's archive, its parent's run id, the run)."""
    tmp = tmp_path_factory.mktemp("warm")
    parent_m = tmp / "parent.yaml"
    parent_m.write_text(yaml.safe_dump(tiny_manifest(name="parent", train__timesteps=128)))
    made = rlcrate("run", str(parent_m), "--out", str(tmp / "runs"), timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    parent = run_dir_of(tmp / "runs", "parent")
    child = tiny_manifest(name="child", train__timesteps=128, train__init_from={"run": str(parent)})
    (tmp / "child.yaml").write_text(yaml.safe_dump(child))
    made = rlcrate("run", str(tmp / "child.yaml"), "--out", str(tmp / "runs"), timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    out, run = tmp / "child.tar.gz", run_dir_of(tmp / "runs", "child")
    packed = rlcrate("archive", str(run), "-o", str(out))
    assert packed.returncode == 0, packed.stdout + packed.stderr
    return out, parent.name, run


def _parent_file(files: dict[str, bytes], suffix: str) -> str:
    (name,) = [n for n in files if n.startswith("parents/") and n.endswith(suffix)]
    return name


def _failed_parent(files: dict[str, bytes]) -> None:
    name = _parent_file(files, "status.json")
    status = json.loads(files[name])
    status["state"] = "failed"  # status.json is not pinned: the rerun's own check refuses it
    files[name] = json.dumps(status).encode()


def _extra_file(files: dict[str, bytes]) -> None:
    name = _parent_file(files, "status.json").replace("status.json", "run-me.sh")
    files[name] = b"#!/bin/sh\necho owned\n"


def _other_model(files: dict[str, bytes]) -> None:
    name = _parent_file(files, "model.zip")
    files[name] = files[name] + b"\0"


def _refused(res: subprocess.CompletedProcess) -> str:
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "rlcrate-reproduce-" not in errors[0], errors  # no temporary file named
    return errors[0]


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_failed_parent, "is failed, not done"),
        (_extra_file, "run-me.sh is not a file of the warm start's parent"),
        (_other_model, "model.zip is not the file its resolved.yaml pins"),
    ],
    ids=["parent-failed", "extra-file", "other-model"],
)
def test_refused_warm_start_archive_leaves_nothing(warm, tmp_path, edit, says):
    bad = altered(warm[0], tmp_path / "bad.tar.gz", edit, sums=True)
    out = tmp_path / "rerun"
    line = _refused(rlcrate("reproduce", str(bad), "--out", str(out), timeout=300))
    assert str(bad) in line and says in line, line
    assert not out.exists(), sorted(out.rglob("*"))  # no parents/<id>/, no run


def test_refused_rerun_keeps_a_parent_an_earlier_reproduce_unpacked(warm, tmp_path):
    out = tmp_path / "rerun"
    good = rlcrate("reproduce", str(warm[0]), "--out", str(out), timeout=300)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = altered(warm[0], tmp_path / "bad.tar.gz", _failed_parent, sums=True)
    line = _refused(rlcrate("reproduce", str(bad), "--out", str(out), timeout=300))
    assert "holds another copy of the warm start's parent" in line, line
    kept = out / "parents" / warm[1]
    assert (kept / "resolved.yaml").is_file()  # the first rerun's resolved.yaml names it
    assert json.loads(next(kept.rglob("status.json")).read_text())["state"] == "done"
    again = rlcrate("reproduce", str(warm[0]), "--out", str(out), timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr  # the same parent: used as it is


def test_killed_archive_part_is_cleared_by_the_next_archive(warm, tmp_path):
    """SIGKILL cannot be cleaned up after by the process itself: its `.NAME.PID.tmp` stays
    until the next `archive` to the same output, which removes the parts of dead pids."""
    run = tmp_path / "runs" / "child" / warm[2].name
    shutil.copytree(warm[2], run)
    big = run / "units/default/seed-0/big.bin"  # a run large enough to be caught writing
    big.write_bytes(os.urandom(64 << 20))
    out = tmp_path / "a.tar.gz"
    proc = subprocess.Popen([rlcrate_exe(), "archive", str(run), "-o", str(out)])
    part = out.with_name(f".{out.name}.{proc.pid}.tmp")
    wait_for(lambda: part.exists() or proc.poll() is not None, 120, "the archive's part")
    assert part.exists(), "the archive was not caught writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert part.exists() and not out.exists()  # what SIGKILL leaves
    big.unlink()
    again = rlcrate("archive", str(run), "-o", str(out), timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert out.is_file() and not part.exists()
    assert not list(tmp_path.glob(f".{out.name}.*.tmp"))
