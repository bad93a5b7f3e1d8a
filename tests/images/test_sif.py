"""The CPU image as a .sif under Apptainer (make apptainer): exported by `rlcrate image export
--format sif`, run here by `rlcrate run --image FILE.sif` and under the tests' Slurm, each unit's
evaluation identical to the same unit run here without an image; Ctrl-C and Slurm's time-limit
signal leave nothing running and resume; bad .sif files and an Apptainer that cannot make its
namespaces refused in one line. Tiny .sif files (`Bootstrap: scratch`) stand in where only the
labels or the start matter; the real one is built once per module from the image tests' build
(its layers cached by then)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from runner import __version__
from runner.images.engine import LABEL_DIGEST, LABEL_LOCK, LABEL_REF, LABEL_VARIANT, PINNED_LOCK
from tests.executors.test_slurm import _status, _wait, slurm  # noqa: F401  (the module's Slurm cluster)
from tests.helpers import (
    ROOT,
    checkout_env,
    children_of,
    rlcrate,
    run_dir_of,
    start_run,
    tiny_manifest,
    unit_processes,
)
from tests.images.test_images import _build, _can_build
from tests.run.test_run import _pending_sigterm

TAG = "localhost/rlcrate-cpu:sif-test"  # its own tag: other modules may rebuild the default one
PINNED_CPU = {LABEL_VARIANT: "cpu", LABEL_LOCK: PINNED_LOCK["cpu"]}  # a CPU image's labels


def _no_apptainer() -> str | None:
    if shutil.which("apptainer") is None:
        return "Apptainer is not installed (make apptainer)"
    return None


needs_apptainer = pytest.mark.skipif(_no_apptainer() is not None, reason=_no_apptainer() or "")
needs_build = pytest.mark.skipif(
    (_can_build() or _no_apptainer()) is not None, reason=_can_build() or _no_apptainer() or ""
)


def _labels(sif: Path) -> dict[str, str]:
    out = subprocess.run(
        ["apptainer", "inspect", "--json", "--labels", str(sif)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["data"]["attributes"]["labels"]


def scratch_sif(folder: Path, name: str, **labels: str) -> Path:
    """A .sif of one text file and these labels (no image behind it: nothing can run in it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hello.txt").write_text("hello\n")
    recipe = folder / f"{name}.def"
    lines = ["Bootstrap: scratch", "", "%files", f"    {folder / 'hello.txt'} /hello.txt", ""]
    lines += ["%labels", *(f"    {k} {v}" for k, v in labels.items())] if labels else []
    recipe.write_text("\n".join(lines) + "\n")
    sif = folder / f"{name}.sif"
    subprocess.run(
        ["apptainer", "build", "--force", "--disable-cache", str(sif), str(recipe)],
        check=True,
        capture_output=True,
    )
    return sif


@pytest.fixture(scope="module")
def sif(tmp_path_factory) -> Path:
    """The CPU image, built (layer-cached) and exported as a .sif through the console script."""
    out = _build(tag=TAG)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    path = tmp_path_factory.mktemp("sif") / "rlcrate-cpu.sif"
    exported = rlcrate(
        "image", "export", TAG, "--format", "sif", "--engine", "buildah", "-o", str(path),
        timeout=3600,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stdout[-2000:] + exported.stderr[-2000:]
    assert exported.stdout.strip() == str(path)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # nothing else left
    return path


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> tuple[Path, Path]:
    """(manifest, its unit run here, without an image): what the .sif runs must reproduce."""
    folder = tmp_path_factory.mktemp("local")
    manifest = folder / "in" / "m.yaml"
    manifest.parent.mkdir()
    # no periodic checkpoints: the Slurm test's signal makes the only one; 6,144 steps leave
    # seconds of training when it lands at 1,024 or more
    m = tiny_manifest(train__timesteps=6144, train__checkpoint_every=0)
    manifest.write_text(yaml.safe_dump(m, sort_keys=False))
    out = rlcrate("run", str(manifest), "--out", str(folder / "runs"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return manifest, run_dir_of(folder / "runs", "tiny") / "units/default/seed-0"


def _episodes(unit: Path) -> list:
    return json.loads((unit / "eval.json").read_text())["episodes"]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return "sha256:" + h.hexdigest()


def _held(sif: Path) -> list[str]:
    """What still holds the .sif: loop devices backed by it, processes naming it."""
    loops = subprocess.run(["losetup", "-j", str(sif)], capture_output=True, text=True).stdout
    procs = []
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if p.name.isdigit() and sif.name.encode() in (p / "cmdline").read_bytes():
                procs.append(p.name)
    return loops.splitlines() + [f"process {p}" for p in procs]


@pytest.mark.image
@pytest.mark.slow
@needs_build
def test_export_labels_name_the_image_and_its_lock(sif):
    from runner.images.engine import inspect

    labels = _labels(sif)
    image = inspect("buildah", TAG)
    assert image is not None
    assert labels[LABEL_DIGEST] == image.id and labels[LABEL_REF] == TAG
    assert labels[LABEL_LOCK] == PINNED_LOCK["cpu"] and labels[LABEL_VARIANT] == "cpu"


@pytest.mark.image
@pytest.mark.slow
@needs_build
def test_run_in_the_sif_matches_the_run_here(sif, local_run, tmp_path):
    manifest, here = local_run
    out = rlcrate("run", str(manifest), "--image", str(sif), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit = run / "units/default/seed-0"
    assert _episodes(unit) == _episodes(here)
    status = json.loads((unit / "status.json").read_text())
    assert status["python"]["executable"].startswith("/opt/venv/bin/python3")  # the image's
    image = json.loads((run / "provenance.json").read_text())["image"]
    assert image == {"tag": str(sif), "digest": _sha256(sif), "source": _labels(sif)[LABEL_DIGEST]}
    assert (unit / "eval.json").stat().st_uid == os.getuid()
    assert not _held(sif)


@pytest.mark.image
@pytest.mark.slow
@needs_build
def test_ctrl_c_in_the_sif_leaves_nothing_and_resumes(sif, tmp_path):
    # 12,000 steps: the interrupt comes after the first checkpoint (1,024), with seconds to go
    m = tiny_manifest(train__timesteps=12_000, train__checkpoint_every=1024, eval__episodes=2)
    manifest = tmp_path / "in" / "m.yaml"
    manifest.parent.mkdir()
    manifest.write_text(yaml.safe_dump(m, sort_keys=False))
    out = tmp_path / "runs"
    proc = start_run(manifest, out, "--image", str(sif))
    ckpts = lambda: list(out.glob("tiny/*/units/default/seed-0/checkpoints/step-*.zip"))  # noqa: E731
    _wait(lambda: ckpts() or proc.poll() is not None, 300, "a first checkpoint")
    assert ckpts(), proc.communicate()
    kids = children_of(proc.pid)
    (unit_pid,) = unit_processes(proc.pid)  # inside the .sif, seen from here
    os.kill(unit_pid, signal.SIGSTOP)  # it cannot finish before the stop reaches it
    run = run_dir_of(out, "tiny")
    assert not (run / "units/default/seed-0/model.zip").exists(), "trained before the stop"
    proc.send_signal(signal.SIGINT)  # on its way down: Apptainer, its init, the runner, the unit
    deadline = time.monotonic() + 10  # (or taken already by a thread still running: test_run's)
    while not _pending_sigterm(unit_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(unit_pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    unit = run / "units/default/seed-0"
    assert json.loads((unit / "status.json").read_text())["state"] == "interrupted"
    assert not [k for k in kids if Path(f"/proc/{k}").exists()], "processes left behind"
    assert not _held(sif)
    resumed = rlcrate("run", str(run / "manifest.yaml"), "--image", str(sif), "--resume", str(run))
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["timesteps_done"] >= 12_000
    assert status["resumed_from"] and status["resumed_from"] >= 1024
    assert len(list(out.glob("tiny/*"))) == 1  # the same run directory


@pytest.mark.image
@pytest.mark.slow
@pytest.mark.slurm
@needs_build
def test_slurm_time_limit_signal_in_the_sif_resumes_exactly(slurm, sif, local_run, tmp_path):  # noqa: F811
    """Each unit a Slurm job running `apptainer exec` of the .sif: submitit's signal before the
    time limit (SIGUSR2) reaches the unit inside through Apptainer, it checkpoints, the job
    requeues and the unit resumes in the .sif, ending with the parameters and evaluation of the
    same unit run here without an image."""
    from tests.trainers.sb3.test_exact_resume import params_hash

    manifest, here = local_run
    out = rlcrate(
        "run", str(manifest), "--out", str(tmp_path / "runs"), "-x", "slurm", "--time", "30",
        "--image", str(sif), "--detach",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    jid = json.loads((run / "slurm/jobs.json").read_text())["jobs"]["default/seed-0"]
    progress = run / "units/default/seed-0/progress.json"
    _wait(
        lambda: progress.exists() and json.loads(progress.read_text())["steps"] >= 1024,
        300,
        "the unit to train a thousand steps",
    )
    subprocess.run(["scancel", "--signal=USR2", jid], check=True, env=slurm)
    _wait(
        lambda: _status(run).get("state") == "done" and rlcrate("status", str(run)).returncode == 0,
        900,
        "the requeued unit to finish",
    )
    st = _status(run)
    assert st["resumed_from"] and 1024 <= st["resumed_from"] < 6144 and st["resume"] == "exact"
    assert st["python"]["executable"] == "/opt/venv/bin/python3"
    unit = run / "units/default/seed-0"
    log = (unit / "unit.log").read_text()
    assert log.count(f"[slurm job {jid}] apptainer exec --containall") == 2  # started twice
    assert params_hash(unit) == params_hash(here) and _episodes(unit) == _episodes(here)
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["image"]["tag"] == str(sif) and prov["image"]["digest"] == _sha256(sif)
    _wait(lambda: not _held(sif), 60, "the job's processes to end")


# --- the logic under them, in process ------------------------------------------------------


def test_apptainer_lock_pins_what_runs_a_sif():
    """images/apptainer/apptainer.lock: Apptainer >= 1.2 with the tools it builds, unpacks and
    mounts a .sif with, each .deb by version and SHA-256."""
    rows = [ln.split() for ln in (ROOT / "images/apptainer/apptainer.lock").read_text().splitlines()
            if ln and not ln.startswith("#")]  # fmt: skip
    assert rows and all(len(r) == 3 and len(r[2]) == 64 for r in rows)
    pinned = {name: version for name, version, _ in rows}
    major, minor = (int(x) for x in pinned["apptainer"].split(".")[:2])
    assert (major, minor) >= (1, 2)
    assert {"squashfs-tools", "squashfuse", "libc6"} <= set(pinned)


def test_sif_run_command_binds_the_manifest_and_output_folders(tmp_path):
    from runner.images.sif import SifImage
    from runner.images.sif_run import run_command

    sif = SifImage(tmp_path / "x.sif", {LABEL_DIGEST: "sha256:" + "c" * 64}, "sha256:" + "d" * 64)
    cmd = run_command(
        "apptainer", sif, manifest=tmp_path / "in" / "m.yaml", out_dir=tmp_path / "out",
        rlcrate_args=["--jobs", "train"],
    )  # fmt: skip
    assert cmd[:4] == ["apptainer", "exec", "--containall", "--no-privs"]
    assert f"{tmp_path / 'in'}:/in:ro" in cmd and f"{tmp_path / 'out'}:/out" in cmd
    assert f"RLCRATE_IMAGE={sif.path}" in cmd and f"RLCRATE_IMAGE_DIGEST={sif.digest}" in cmd
    assert f"RLCRATE_IMAGE_SOURCE=sha256:{'c' * 64}" in cmd
    assert cmd[cmd.index("--pwd") + 1] == "/out" and "--nv" not in cmd
    assert cmd[cmd.index(str(sif.path)) + 1 :] == [
        "rlcrate", "run", "/in/m.yaml", "--out", "/out", "--image", "local", "--jobs", "train",
    ]  # fmt: skip


def test_labels_are_checked_against_the_pinned_lock():
    from runner.images.sif import label_problem

    cpu = dict(PINNED_CPU)
    assert label_problem(cpu, None) is None and label_problem(cpu, "cpu") is None
    assert label_problem(cpu, f"rlcrate-cpu:{__version__}") is None
    assert label_problem(cpu, "local") is None
    assert "not an rlcrate image" in (label_problem({LABEL_VARIANT: "cpu"}, None) or "")
    unknown = {LABEL_VARIANT: "gpu", LABEL_LOCK: "x"}
    assert "not an rlcrate image" in (label_problem(unknown, None) or "")
    other = label_problem({**cpu, LABEL_LOCK: "f" * 64}, "cpu") or ""
    assert "another lock" in other and "ffffffffffff" in other and PINNED_LOCK["cpu"][:12] in other
    assert "the manifest's image is cuda" in (label_problem(cpu, "cuda") or "")
    cuda = {LABEL_VARIANT: "cuda", LABEL_LOCK: PINNED_LOCK["cuda"]}
    assert label_problem(cuda, None) is None  # no image in the manifest: the .sif's own variant


def test_what_apptainer_said_is_its_last_fatal_or_error_line():
    from runner.executors.apptainer import apptainer_said

    colored = "\x1b[91mERROR  : Failed to set mount propagation: Invalid argument\n\x1b[0m"
    assert apptainer_said(colored) == "Failed to set mount propagation: Invalid argument"
    text = "INFO:    Converting\nFATAL:   container creation failed: no loop\n"
    assert apptainer_said(text) == "container creation failed: no loop"
    assert apptainer_said("INFO: only this\n") == ""


def test_sif_digest_is_remembered_per_file(tmp_path, monkeypatch):
    from runner.images.sif import file_digest

    monkeypatch.setenv("RLCRATE_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "a.sif"
    f.write_bytes(b"x" * 1000)
    assert file_digest(f) == "sha256:" + hashlib.sha256(b"x" * 1000).hexdigest()
    cached = json.loads((tmp_path / "cache" / "sif-digests.json").read_text())
    assert cached[str(f)]["digest"] == file_digest(f)
    f.write_bytes(b"y" * 1000)  # the same size, another file: hashed again
    assert file_digest(f) == "sha256:" + hashlib.sha256(b"y" * 1000).hexdigest()


# --- bad input: one line, exit 2, nothing written ---------------------------------------------


def _refused(out: subprocess.CompletedProcess, runs: Path) -> str:
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert not runs.exists()
    return lines[0]


@pytest.mark.image
@needs_apptainer
def test_bad_sif_files_are_one_line_exit_2(tmp_path, write_manifest):
    manifest = write_manifest(tiny_manifest())
    runs = tmp_path / "runs"
    plain = scratch_sif(tmp_path / "s", "plain")
    line = _refused(rlcrate("run", str(manifest), "--image", str(plain), "--out", str(runs)), runs)
    assert "not an rlcrate image" in line and str(plain) in line
    other = scratch_sif(tmp_path / "s", "other", **{LABEL_VARIANT: "cpu", LABEL_LOCK: "0" * 64})
    for executor in ("local", "slurm"):
        out = rlcrate(
            "run", str(manifest), "--image", str(other), "--out", str(runs), "-x", executor
        )
        line = _refused(out, runs)
        assert "another lock" in line and "000000000000" in line and PINNED_LOCK["cpu"][:12] in line
    junk = tmp_path / "junk.sif"
    junk.write_bytes(b"not a sif at all\n" * 100)
    line = _refused(rlcrate("run", str(manifest), "--image", str(junk), "--out", str(runs)), runs)
    assert "not an image Apptainer can read" in line
    cuda = write_manifest({**tiny_manifest(), "image": "cuda"}, "cuda.yaml")
    pinned = scratch_sif(tmp_path / "s", "pinned", **PINNED_CPU)
    line = _refused(rlcrate("run", str(cuda), "--image", str(pinned), "--out", str(runs)), runs)
    assert "a cpu image, and the manifest's image is cuda" in line


@pytest.mark.image
@needs_apptainer
def test_a_slurm_unit_whose_apptainer_cannot_start_fails_with_its_message(tmp_path):
    """What a Slurm job runs (UnitJob, here in process): Apptainer fails before the unit starts
    (nothing to run in this .sif); the unit is failed with what Apptainer said, not left pending
    for Slurm's end of job to explain."""
    from runner.executors.slurm_job import UnitJob

    sif = scratch_sif(tmp_path / "s", "empty", **PINNED_CPU)
    run_dir = tmp_path / "run"
    assert UnitJob(str(run_dir), "default", 0, ["train"], None, str(sif))() == 255
    status = json.loads((run_dir / "units/default/seed-0/status.json").read_text())
    assert status["state"] == "failed", status
    assert status["error"].startswith(f"Apptainer could not start {sif} on {os.uname().nodename}: ")
    assert "python3" in status["error"] and "FATAL" not in status["error"]


@pytest.mark.image
@needs_apptainer
@pytest.mark.skipif(os.geteuid() != 0, reason="a chroot needs root")
def test_apptainer_without_namespaces_is_one_line_exit_2(tmp_path, write_manifest):
    """In a plain chroot (its root no mount point) Apptainer cannot make its
    mount namespace private: `run --image` says so in one line before anything is written, and
    `doctor` says Apptainer is not usable there."""
    manifest = write_manifest(tiny_manifest())
    runs = tmp_path / "runs"
    sif = scratch_sif(tmp_path / "s", "pinned", **PINNED_CPU)
    exe = str(Path(sys.executable).with_name("rlcrate"))
    root = tmp_path / "root"
    out = _in_chroot(root, exe, "run", str(manifest), "--image", str(sif), "--out", str(runs))
    line = _refused(out, runs)
    assert "Apptainer cannot start" in line and "mount propagation" in line
    doctor = _in_chroot(root, exe, "doctor")
    row = next(ln for ln in doctor.stdout.splitlines() if "│ apptainer" in ln)
    assert [c.strip() for c in row.split("│")[2:4]] == ["yes", "no"], doctor.stdout
    assert "cannot make a private mount namespace" in row


CHROOT = """R=$1; shift
for d in /*; do
    n=$(basename "$d")
    if [ -L "$d" ]; then ln -sfn "$(readlink "$d")" "$R/$n"
    elif [ -d "$d" ]; then
        mkdir -p "$R/$n"
        case $n in proc | sys | dev) how=--rbind ;; *) how=--bind ;; esac
        mount "$how" "$d" "$R/$n"
    fi
done
exec chroot "$R" "$@"
"""


def _in_chroot(root: Path, *argv: str) -> subprocess.CompletedProcess:
    """argv in a chroot whose root is a plain folder, the host's own folders bound inside (in a
    mount namespace of its own: nothing stays mounted after)."""
    root.mkdir(exist_ok=True)
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", CHROOT, "sh", str(root),
         *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=checkout_env(COLUMNS="300"),  # doctor's table unwrapped
    )  # fmt: skip
