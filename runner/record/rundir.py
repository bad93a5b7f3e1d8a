"""The run directory: layout, atomic writes, unit status.

Every file a reader may look at is written to a temporary name and renamed into place, so a
crash never leaves half a file; a unit's `status.json` is written last. Each gets the mode open()
would give it (0666 less the umask), not the temporary file's private 0600.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import RunFileError

M = TypeVar("M", bound=BaseModel)


@functools.cache
def _umask() -> int:
    """This process's umask, the mode bits open() would clear (read without changing it where
    Linux says it; elsewhere set and restored once, early, before any thread writes files)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write via a temporary file and rename; `durable` also fsyncs (skip it for advisory files
    such as progress.json, written every second during training)."""
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def write_bytes_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """`write_text_atomic` for bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would make every result private
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, obj: Any, *, durable: bool = True) -> None:
    text = json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n"
    write_text_atomic(path, text, durable=durable)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks (models and archives can be large)."""
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def pin_mismatch(path: Path, digest: str) -> str | None:
    """None when `path` holds the bytes whose SHA-256 is `digest`; else how it differs, as the
    words after its name ("is missing", "has SHA-256 0123456789ab…"), for a one-line refusal."""
    found = file_sha256(path) if path.is_file() else None
    if found == digest:
        return None
    return "is missing" if found is None else f"has SHA-256 {found[:12]}…"


def read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def checked(model: type[M], data: Any) -> M | None:
    """`data` (a run file's JSON) as `model`, or None when it is not a JSON object that fits it
    (a damaged record is never half-believed)."""
    if not isinstance(data, dict):
        return None
    try:
        return model.model_validate(data)
    except ValueError:  # pydantic's ValidationError, or a model's own check of the whole
        return None


def new_run_dir(out: Path, name: str) -> Path:
    """A fresh `out/name/<run-id>`; never an existing directory."""
    parent = (out / name).resolve()
    if out.resolve() not in parent.parents:
        raise ValueError(f"run name {name!r} escapes the output directory")
    parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)
        path = parent / run_id
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a new run directory under {parent}")


@dataclass(frozen=True)
class UnitRef:
    """One unit of work: a (variant, seed) pair, and where its files live in a run directory."""

    variant: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.variant}/seed-{self.seed}"

    def dir(self, run_dir: Path) -> Path:
        return run_dir / "units" / self.variant / f"seed-{self.seed}"


def _damaged(path: Path, data: Any, expected: str) -> RunFileError:
    found = "no valid JSON" if data is None else f"a JSON {type(data).__name__}"
    return RunFileError(f"{path}: damaged (expected {expected}, found {found})")


class Progress(BaseModel):
    """progress.json, written by a training unit about once a second (advisory)."""

    model_config = ConfigDict(strict=True)  # a count is a number, not "100" or true

    steps: int = Field(0, ge=0)
    total: int = Field(0, ge=0)
    steps_per_s: float = Field(0.0, ge=0)
    # bytes on disk of the newest checkpoint (model, statistics, state: an off-policy
    # algorithm's replay buffer among it); None before the first
    checkpoint_bytes: int | None = Field(None, ge=0)


def read_progress(unit_dir: Path, *, strict: bool = False) -> Progress | None:
    """A unit's training progress, None when it has none. Damaged (not an object of counts):
    None, or with `strict` a RunFileError naming the file."""
    path = unit_dir / "progress.json"
    data = read_json(path)
    if not isinstance(data, dict):
        if strict and path.exists():
            raise _damaged(path, data, "a JSON object of steps, total, steps_per_s")
        return None
    try:
        return Progress.model_validate(data)
    except ValidationError as exc:
        if not strict:
            return None
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise RunFileError(f"{path}: damaged ({where}: {err['msg']})") from None


def replace_via(path: Path, tmp: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)`, then rename it over `path` (made beside it, so the rename is atomic); the
    temporary file never outlives a failure. For files a library writes itself (a model, its
    normalization statistics)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
