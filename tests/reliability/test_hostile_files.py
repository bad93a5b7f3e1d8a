"""Hostile files: a run directory or an archive whose files carry code. Nothing rlcrate reads
from either may run it, whichever command reads it.

Every payload here, when unpickled, creates a marker file; each case runs the command a user
would (the installed console script) and checks the marker never appears, the command ends in
one clear line (or, where the payload sits in a part rlcrate never reads, ends as the clean
file would) and no traceback. The forger is careful: after changing a file it recomputes every
hash rlcrate could check (the unit's train.json and step-N.json pins, the archive's SHA256SUMS),
so what is tested is the file format, not the checksums.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import shutil
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from runner.record.rundir import file_sha256
from tests.archive_tools import altered
from tests.helpers import rlcrate, run_dir_of, tiny_manifest

# slow: the module trains a normalized CartPole run and reruns parts of it
pytestmark = [pytest.mark.gymnasium, pytest.mark.slow]

UNIT = "units/default/seed-0"


class Payload:
    """Unpickled, it creates `marker`: what a pickle's `__reduce__` can do, it can do anything."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def payload(marker: Path) -> bytes:
    return pickle.dumps(Payload(marker))


def repin(unit: Path) -> None:
    """What a careful forger does after editing a unit's files: the hashes the unit recorded
    (train.json, checkpoints/step-N.json) recomputed for the files as they are now."""
    for record in [unit / "train.json", *sorted((unit / "checkpoints").glob("step-*.json"))]:
        if not record.is_file():
            continue
        data = json.loads(record.read_text())
        folder = record.parent
        pinned = [n for n in data.get("files", {}) if (folder / n).is_file()]  # gone: unpinned
        data["files"] = {n: file_sha256(folder / n) for n in pinned}
        record.write_text(json.dumps(data))


def rezip(path: Path, replace: dict[str, bytes], drop: tuple[str, ...] = ()) -> None:
    """Rewrite the zip at `path` with some members replaced (or added) and some dropped."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist() if n not in drop}
    members.update(replace)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def serialized_data(model_zip: Path, marker: Path) -> bytes:
    """The model's `data` member with every `:serialized:` entry (SB3's cloudpickle of the
    policy class, spaces, schedules) replaced by a payload."""
    with zipfile.ZipFile(model_zip) as z:
        data = json.loads(z.read("data"))
    code = base64.b64encode(payload(marker)).decode()
    for value in data.values():
        if isinstance(value, dict) and ":serialized:" in value:
            value[":serialized:"] = code
    return json.dumps(data).encode()


def torch_with_object(marker: Path) -> bytes:
    """A torch file whose state dict holds a non-tensor object (a pickled payload)."""
    import torch

    buf = io.BytesIO()
    torch.save({"weight": Payload(marker)}, buf)
    return buf.getvalue()


def declared_size(path: Path, member: str, size: int) -> None:
    """Make the zip at `path` declare `size` uncompressed bytes for `member` (a zip bomb's
    header) without writing them: both the local header and the central directory say so."""
    raw = bytearray(path.read_bytes())
    name = member.encode()
    for sig, offset, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        at = raw.find(sig)
        while at != -1:
            if raw[at + name_at : at + name_at + len(name)] == name:
                raw[at + offset : at + offset + 4] = struct.pack("<I", size)
            at = raw.find(sig, at + 4)
    path.write_bytes(bytes(raw))


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished normalized PPO CartPole run with a checkpoint (256 of 512 steps)."""
    tmp = tmp_path_factory.mktemp("hostile")
    m = tiny_manifest(
        name="hostile",
        algo__normalize={"obs": True, "reward": True},
        train__checkpoint_every=256,
    )
    (tmp / "m.yaml").write_text(yaml.safe_dump(m))
    out = rlcrate("run", str(tmp / "m.yaml"), "--out", str(tmp / "runs"))
    assert out.returncode == 0, out.stderr
    run = run_dir_of(tmp / "runs", "hostile")
    assert (run / UNIT / "checkpoints/step-256.zip").is_file()
    return run


@pytest.fixture
def copy(finished, tmp_path) -> Path:
    target = tmp_path / "run" / finished.name
    shutil.copytree(finished, target)
    return target


def _one_line(out, *words: str) -> str:
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    assert all(w in errors[0] for w in words), errors[0]
    return errors[0]


def _eval(run: Path):
    return rlcrate("eval", str(run / "manifest.yaml"), "--resume", str(run))


def _episodes(run: Path) -> list:
    return json.loads((run / UNIT / "eval.json").read_text())["episodes"]


# --- a unit's own files: eval --resume and run --resume --------------------------------------


def test_legacy_statistics_pickle_is_refused_unread(copy, tmp_path):
    marker = tmp_path / "ran"
    unit = copy / UNIT
    (unit / "vecnormalize.npz").unlink()
    (unit / "vecnormalize.pkl").write_bytes(payload(marker))
    repin(unit)
    for out in (_eval(copy), rlcrate("run", str(copy / "manifest.yaml"), "--resume", str(copy))):
        _one_line(out, "vecnormalize.pkl", "pickle")
        assert not marker.exists(), "a pickle from the run directory ran"


def test_statistics_with_object_arrays_are_refused_unread(copy, tmp_path):
    """An .npz can hold pickled object arrays; rlcrate reads numbers only."""
    marker = tmp_path / "ran"
    unit = copy / UNIT
    arrays = dict(np.load(unit / "vecnormalize.npz"))
    arrays["obs.mean"] = np.array([Payload(marker)], dtype=object)
    with open(unit / "vecnormalize.npz", "wb") as f:
        np.savez(f, **arrays)
    repin(unit)
    out = _eval(copy)
    assert not marker.exists(), "an object array of the statistics was unpickled"
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "failed" and "not readable as arrays" in status["error"]


def test_serialized_model_data_is_never_unpickled(copy, finished, tmp_path):
    """SB3's `:serialized:` entries (cloudpickle) are not read at all: the model is built from
    the manifest, so the evaluation is the clean file's, episode by episode."""
    marker = tmp_path / "ran"
    unit = copy / UNIT
    rezip(unit / "model.zip", {"data": serialized_data(unit / "model.zip", marker)})
    repin(unit)
    (unit / "eval.json").unlink()
    out = _eval(copy)
    assert out.returncode == 0, out.stderr
    assert not marker.exists(), "a :serialized: entry of model.zip was unpickled"
    assert _episodes(copy) == _episodes(finished)


@pytest.mark.parametrize("case", ["object-in-weights", "odd-name", "bomb"])
def test_hostile_model_members_fail_the_unit_cleanly(case, copy, tmp_path):
    marker = tmp_path / "ran"
    unit = copy / UNIT
    model = unit / "model.zip"
    if case == "object-in-weights":
        rezip(model, {"policy.pth": torch_with_object(marker)})
        why = "not readable as tensors"  # torch's restricted unpickler refuses the object
    elif case == "odd-name":
        rezip(model, {"../../escaped.pth": b"x"})
        why = "member named"
    else:
        declared_size(model, "policy.pth", 3_000_000_000)
        why = "unpacks to 3000000000 bytes"
    repin(unit)
    out = _eval(copy)
    assert not marker.exists()
    assert not (copy.parent / "escaped.pth").exists() and not (unit.parent / "escaped.pth").exists()
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr, out.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "failed" and why in status["error"], status["error"]


def test_a_changed_model_is_not_opened(copy):
    """Without the forger's care: the hash train.json pinned no longer matches. Nothing opens
    the file: `eval` fails the unit naming it, `run --resume` trains the unit again from its
    checkpoint (as for a damaged model)."""
    unit = copy / UNIT
    rezip(unit / "model.zip", {"extra.txt": b"changed"})
    out = _eval(copy)
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "failed" and "not the file train.json recorded" in status["error"]
    again = rlcrate("run", str(copy / "manifest.yaml"), "--resume", str(copy))
    assert again.returncode == 0, again.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["resumed_from"] == 256
    assert "not the file train.json recorded" in (unit / "unit.log").read_text()


def test_hostile_checkpoint_statistics_are_skipped_on_resume(copy, tmp_path):
    """A stopped unit resumes from its checkpoint: one whose statistics carry a payload is
    skipped (a warning in the unit's log), never unpickled, and training starts over."""
    marker = tmp_path / "ran"
    unit = copy / UNIT
    for name in ("model.zip", "vecnormalize.npz", "train.json", "eval.json"):
        (unit / name).unlink()
    stats = unit / "checkpoints/step-256.vecnormalize.npz"
    arrays = dict(np.load(stats))
    arrays["ret.var"] = np.array([Payload(marker)], dtype=object)
    with open(stats, "wb") as f:
        np.savez(f, **arrays)
    repin(unit)
    status = json.loads((unit / "status.json").read_text())
    (unit / "status.json").write_text(json.dumps({**status, "state": "interrupted"}))
    out = rlcrate("run", str(copy / "manifest.yaml"), "--resume", str(copy))
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    done = json.loads((unit / "status.json").read_text())
    assert done["state"] == "done" and done["resumed_from"] is None  # from scratch
    assert "step-256" in (unit / "unit.log").read_text()


# --- a warm start's parent: validate --deep and run -------------------------------------------


def _child(parent: Path) -> dict:
    return tiny_manifest(
        name="child",
        algo__normalize={"obs": True, "reward": True},
        train__timesteps=0,  # zero-shot: the parent's policy as it is
        train__init_from={"run": str(parent)},
    )


def test_parent_statistics_pickle_is_refused_by_validate_and_run(copy, write_manifest, tmp_path):
    marker = tmp_path / "ran"
    unit = copy / UNIT
    (unit / "vecnormalize.npz").unlink()
    (unit / "vecnormalize.pkl").write_bytes(payload(marker))
    repin(unit)
    path = write_manifest(_child(copy))
    for out in (
        rlcrate("validate", "--deep", str(path)),
        rlcrate("run", str(path), "--out", str(tmp_path / "runs")),
    ):
        _one_line(out, "vecnormalize.pkl", "pickle")
        assert not marker.exists()
    assert not (tmp_path / "runs").exists(), "a refused run leaves no run directory"


def test_parent_serialized_data_is_never_unpickled(copy, finished, write_manifest, tmp_path):
    marker = tmp_path / "ran"
    unit = copy / UNIT
    rezip(unit / "model.zip", {"data": serialized_data(unit / "model.zip", marker)})
    repin(unit)
    path = write_manifest(_child(copy))
    assert rlcrate("validate", "--deep", str(path)).returncode == 0
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    # zero-shot on the same env and eval seed: the parent's episodes, from its weights alone
    child = run_dir_of(tmp_path / "runs", "child")
    assert _episodes(child) == _episodes(finished)


# --- an archive: reproduce ----------------------------------------------------------------------


def test_archive_with_a_pickle_is_refused_before_anything_runs(finished, tmp_path):
    marker = tmp_path / "ran"
    tar = tmp_path / "a.tar.gz"
    assert rlcrate("archive", str(finished), "-o", str(tar)).returncode == 0

    def plant(files: dict) -> None:
        del files[f"{UNIT}/vecnormalize.npz"]
        files[f"{UNIT}/vecnormalize.pkl"] = payload(marker)

    forged = altered(tar, tmp_path / "forged.tar.gz", plant, sums=True)
    out = rlcrate("reproduce", str(forged), "--out", str(tmp_path / "re"))
    _one_line(out, "vecnormalize.pkl", "pickle")
    assert not marker.exists() and not (tmp_path / "re").exists()


def test_archive_pickles_are_never_archived(copy, tmp_path):
    (copy / UNIT / "vecnormalize.pkl").write_bytes(b"\x80\x04N.")  # an older rlcrate's file
    out = rlcrate("archive", str(copy), "-o", str(tmp_path / "a.tar.gz"))
    _one_line(out, "vecnormalize.pkl", "pickle")
    assert not (tmp_path / "a.tar.gz").exists()


# --- the own loops' files, read the way their trainers read them ---------------------------------


def test_rsl_rl_saves_are_read_with_the_restricted_unpickler(tmp_path):
    """RSL-RL's own `runner.load` unpickles anything; rlcrate's reader does not."""
    from runner.errors import RunFileError
    from runner.trainers.rsl_rl_ppo import _saved

    marker = tmp_path / "ran"
    path = tmp_path / "model.zip"
    path.write_bytes(torch_with_object(marker))
    with pytest.raises(Exception) as err:
        _saved(path)
    assert not marker.exists()
    assert isinstance(err.value, (RunFileError, pickle.UnpicklingError)), err.value


@pytest.mark.brax
def test_brax_legacy_params_pickle_is_refused_unread(tmp_path):
    from runner.record.datafiles import LegacyPickle
    from runner.trainers.brax_ppo.model import load_params

    marker = tmp_path / "ran"
    path = tmp_path / "model.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("params.pkl", payload(marker))
        z.writestr("config.json", "{}")
    with pytest.raises(LegacyPickle, match="pickle"):
        load_params(path, {})
    assert not marker.exists()


def test_the_payloads_are_live(tmp_path):
    """The payloads above do run when read the unsafe way (so every test here can fail)."""
    import torch

    for i, (data, load) in enumerate(
        [
            (payload(tmp_path / "0"), pickle.loads),
            (
                torch_with_object(tmp_path / "1"),
                lambda b: torch.load(io.BytesIO(b), weights_only=False),
            ),
        ]
    ):
        load(data)
        assert (tmp_path / str(i)).exists()
