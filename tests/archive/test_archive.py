"""`rlcrate archive` and the refusals of `rlcrate reproduce`, on a real run's archive altered
one way at a time. Every refusal must come before anything is extracted or rerun."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import time

import pytest

from tests.archive_tools import INDEX, SUMS, altered, members, resum, write
from tests.helpers import rlcrate

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]  # one real training run per module


@pytest.fixture(scope="module")
def run(tiny_run):
    """The session's finished two-seed run (checkpoints included); tests that change it copy it."""
    return tiny_run


@pytest.fixture(scope="module")
def bundle(run, tmp_path_factory):
    path = tmp_path_factory.mktemp("bundle") / "tiny.tar.gz"
    out = rlcrate("archive", str(run), "-o", str(path))
    assert out.returncode == 0, out.stderr
    return path


def test_archive_is_deterministic_and_checksummed(run, bundle, tmp_path):
    again = tmp_path / "again.tar.gz"
    assert rlcrate("archive", str(run), "-o", str(again)).returncode == 0
    assert again.read_bytes() == bundle.read_bytes()  # byte-identical
    with tarfile.open(bundle) as tar:
        infos = tar.getmembers()
        names = [m.name.partition("/")[2] for m in infos]
        tar.extractall(tmp_path / "x", filter="data")
    assert names[:2] == [INDEX, SUMS] and names[2:] == sorted(names[2:])
    assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" and m.isreg() for m in infos)
    for want in (
        "manifest.yaml",
        "resolved.yaml",
        "provenance.json",
        "summary.json",
        "report.md",
        "environment/packages.txt",
        "units/default/seed-1/eval.json",
        "units/default/seed-1/status.json",
        "units/default/seed-0/model.zip",
    ):
        assert want in names, want
    # a reviewer can check it with standard tools
    check = subprocess.run(
        ["sha256sum", "--check", "--strict", SUMS],
        cwd=tmp_path / "x" / run.name,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    index = json.loads((tmp_path / "x" / run.name / INDEX).read_text())
    assert index["written_by"].startswith("rlcrate ") and index["run"]["complete"] is True
    assert index["contains"]["models"] is True and index["run"]["units"] == 2


def test_archive_without_models_and_tensorboard(run, bundle, tmp_path):
    small = tmp_path / "small.tar.gz"
    out = rlcrate("archive", str(run), "-o", str(small), "--no-models", "--no-tensorboard")
    assert out.returncode == 0, out.stderr
    _, files = members(small)
    assert not [n for n in files if n.endswith(".zip") or "/tb/" in n]
    assert json.loads(files[INDEX])["contains"]["models"] is False
    assert small.stat().st_size < bundle.stat().st_size


def test_archive_refuses_unfinished_and_marks_incomplete(run, tmp_path):
    import shutil

    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    status = copy / "units/default/seed-1/status.json"
    data = json.loads(status.read_text())
    for state, flag, code in (("running", "--incomplete", 2), ("failed", None, 2)):
        status.write_text(json.dumps({**data, "state": state}))
        out = rlcrate(
            "archive", str(copy), "-o", str(tmp_path / "a.tar.gz"), *([flag] if flag else [])
        )
        assert out.returncode == code and "seed-1" in out.stderr, out.stderr
        assert not list(tmp_path.glob("*.tar.gz")) and not list(tmp_path.glob(".*tmp"))
    out = rlcrate("archive", str(copy), "-o", str(tmp_path / "a.tar.gz"), "--incomplete")
    assert out.returncode == 0 and "marked incomplete" in out.stdout
    index = json.loads(members(tmp_path / "a.tar.gz")[1][INDEX])
    assert index["run"]["complete"] is False
    assert index["run"]["not_done"] == {"default/seed-1": "failed"}


def _tree(run) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "target", ["summary.json", "units/default/seed-0/model.zip", "units/new.tar.gz"]
)
def test_archive_output_inside_the_run_is_refused(run, tmp_path, target):
    import shutil

    copy = tmp_path / "runs" / run.name
    shutil.copytree(run, copy)
    (copy / ".lock").unlink(missing_ok=True)
    before = _tree(copy)
    out = rlcrate("archive", str(copy), "-o", str(copy / target))
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "inside the run directory" in lines[0], out.stderr
    assert _tree(copy) == before  # nothing of the run touched, nothing added
    # the same folder reached through a link is the same run directory
    (tmp_path / "alias").symlink_to(copy)
    out = rlcrate("archive", str(copy), "-o", str(tmp_path / "alias" / "summary.json"))
    assert out.returncode == 2 and "inside the run directory" in out.stderr, out.stderr
    assert _tree(copy) == before


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_archive_refuses_a_file_it_cannot_include(run, tmp_path, kind):
    import os
    import shutil

    copy = tmp_path / "runs" / run.name
    shutil.copytree(run, copy)
    (copy / ".lock").unlink(missing_ok=True)
    ev = copy / "units/default/seed-0/eval.json"
    if kind == "symlink":  # the file kept elsewhere, linked into the run
        kept = tmp_path / "eval-kept.json"
        shutil.move(ev, kept)
        ev.symlink_to(kept)
    else:
        os.mkfifo(copy / "units/default/seed-0/pipe")
    out = rlcrate("archive", str(copy), "-o", str(tmp_path / "a.tar.gz"))
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused" in lines[0] and "seed-0/" in lines[0], out.stderr
    assert ("symbolic link" if kind == "symlink" else "not a regular file") in lines[0]
    assert not list(tmp_path.glob("*.tar.gz")) and not list(tmp_path.glob(".*tmp"))


def _flip_digit(data: bytes) -> bytes:
    """The same bytes with their last digit changed: same size, different content."""
    i = max(data.rfind(d) for d in b"0123456789")
    return data[:i] + (b"1" if data[i : i + 1] != b"1" else b"2") + data[i + 1 :]


def _edit(name, fn):
    def edit(files):
        files[name] = fn(files[name])

    return edit


def _json_edit(name, fn):
    return _edit(name, lambda b: json.dumps(fn(json.loads(b))).encode())


def _drop(name):
    def edit(files):
        del files[name]

    return edit


def _add(name, data):
    def edit(files):
        files[name] = data

    return edit


def _raw_entry(kind: str):
    def extra(tar: tarfile.TarFile) -> None:
        top = tar.getnames()[0].split("/")[0]
        info = tarfile.TarInfo(
            {"abs": "/etc/evil", "dotdot": f"{top}/../evil"}.get(kind, f"{top}/evil")
        )
        if kind == "symlink":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        elif kind == "hardlink":
            info.type, info.linkname = tarfile.LNKTYPE, f"{top}/manifest.yaml"
        tar.addfile(info, io.BytesIO(b"") if kind in ("abs", "dotdot") else None)

    return extra


EVAL = "units/default/seed-0/eval.json"


def _raise_summary(files):
    """Every per-seed mean and the across-seed mean raised by 100, as a forger would."""
    summary = json.loads(files["summary.json"])
    ev = summary["variants"]["default"]["eval"]
    ev["per_seed_mean"] = {k: v + 100 for k, v in ev["per_seed_mean"].items()}
    ev["mean"] += 100
    for unit in summary["variants"]["default"]["units"].values():
        unit["eval_mean"] += 100
    files["summary.json"] = json.dumps(summary).encode()


ALTERED = {
    # name: (edit, recompute the checksums like a forger, expected words in the refusal)
    "eval-altered": (
        _edit(EVAL, _flip_digit),
        False,
        f"{EVAL} does not match its SHA-256",
    ),
    "eval-resized": (
        _json_edit(EVAL, lambda e: {**e, "mean": e["mean"] + 1.5}),
        False,
        "the index says",
    ),
    "model-altered": (
        _edit("units/default/seed-0/model.zip", lambda b: b[:-1] + b"x"),
        False,
        "model.zip does not match",
    ),
    "manifest-edited": (
        _edit("manifest.yaml", lambda b: b.replace(b"timesteps: 1024", b"timesteps: 1025")),
        False,
        "manifest.yaml does not match",
    ),
    "manifest-edited-resummed": (
        _edit("manifest.yaml", lambda b: b.replace(b"timesteps: 1024", b"timesteps: 2048")),
        True,
        "does not resolve to its resolved.yaml",
    ),
    "missing-file": (
        _drop("summary.json"),
        False,
        "summary.json is listed in SHA256SUMS but missing",
    ),
    "extra-file": (
        _add("units/default/seed-0/extra.txt", b"hello"),
        False,
        "extra.txt is not listed in SHA256SUMS",
    ),
    "index-altered": (
        _json_edit(INDEX, lambda i: {**i, "written_by": "me"}),
        False,
        f"{INDEX} does not match",
    ),
    "newer-manifest": (
        _edit("manifest.yaml", lambda b: b.replace(b"rlcrate: 1", b"rlcrate: 2")),
        True,
        "manifest is in format rlcrate: 2",
    ),
    "newer-archive": (_json_edit(INDEX, lambda i: {**i, "format": 2}), True, "archive format 2"),
    "summary-raised-resummed": (_raise_summary, True, "summary.json disagrees with its eval"),
    "eval-mean-raised-resummed": (
        _json_edit(EVAL, lambda e: {**e, "mean": e["mean"] + 100}),
        True,
        "its mean disagrees with its own episodes",
    ),
    "format-bool": (
        _json_edit(INDEX, lambda i: {**i, "format": True}),
        True,
        "archive format True",
    ),
}


@pytest.mark.parametrize("case", sorted(ALTERED))
def test_reproduce_refuses_altered_archive(bundle, tmp_path, case):
    edit, sums, words = ALTERED[case]
    bad = altered(bundle, tmp_path / f"{case}.tar.gz", edit, sums=sums)
    _assert_refused(bad, tmp_path, words)


@pytest.mark.parametrize("kind", ["abs", "dotdot", "symlink", "hardlink"])
def test_reproduce_refuses_unsafe_entries(bundle, tmp_path, kind):
    top, files = members(bundle)
    bad = write(tmp_path / f"{kind}.tar.gz", top, files, extra=_raw_entry(kind))
    words = {
        "abs": "unsafe path",
        "dotdot": "unsafe path",
        "symlink": "link entry",
        "hardlink": "link entry",
    }[kind]
    _assert_refused(bad, tmp_path, words)


def test_reproduce_refuses_truncated_stream(bundle, tmp_path):
    bad = tmp_path / "cut.tar.gz"
    bad.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    _assert_refused(bad, tmp_path, "truncated")


def test_reproduce_refuses_expansion_bomb(bundle, tmp_path):
    """200 MiB of zeros, listed with its true checksum: a ~0.2 MiB addition to the archive."""
    top, files = members(bundle)
    files = resum({**files, "units/default/seed-0/zeros.bin": bytes(200 * 2**20)})
    bad = write(tmp_path / "bomb.tar.gz", top, files)
    assert bad.stat().st_size < 2 * 2**20
    t0 = time.monotonic()
    _assert_refused(bad, tmp_path, "would expand to more than")
    assert time.monotonic() - t0 < 30  # refused from the headers, not after inflating it all


def test_reproduce_refuses_a_listing_of_too_many_files(bundle, tmp_path):
    """SHA256SUMS listing 200,000 files (verifying each would take ~36 s): refused from the
    listing, before any of them is read."""
    top, files = members(bundle)
    fake = "".join(f"{'0' * 64}  units/default/seed-0/f{i}.json\n" for i in range(200_000))
    files = {**files, SUMS: files[SUMS] + fake.encode()}
    bad = write(tmp_path / "many.tar.gz", top, files)
    t0 = time.monotonic()
    _assert_refused(bad, tmp_path, "lists more than 50,000 files")
    assert time.monotonic() - t0 < 15


def test_archive_clears_the_part_a_killed_archive_left(run, tmp_path):
    """`archive` writes FILE through `.FILE.PID.tmp`; one killed (SIGKILL) leaves it. The next
    `archive` to FILE removes the parts of writers that are gone, never a live writer's."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    output = tmp_path / "a.tar.gz"
    stale = tmp_path / f".a.tar.gz.{dead.pid}.tmp"
    stale.write_bytes(b"half an archive")
    live = tmp_path / f".a.tar.gz.{os.getpid()}.tmp"  # this test's process: alive
    live.write_bytes(b"another writer's part")
    out = rlcrate("archive", str(run), "-o", str(output))
    assert out.returncode == 0, out.stderr
    assert output.is_file() and not stale.exists() and live.exists()


def _assert_refused(bad, tmp_path, words):
    out_dir = tmp_path / "rerun"
    out = rlcrate("reproduce", str(bad), "--out", str(out_dir))
    assert out.returncode == 2, out.stdout + out.stderr
    assert "refused" in out.stderr and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not out_dir.exists()  # nothing extracted, nothing rerun
