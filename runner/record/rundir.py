"""The run directory: layout, atomic writes, records read through their models.

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

from pydantic import BaseModel, ValidationError

from runner.errors import RunFileError
from runner.record.versioned import Versioned

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


def checked(model: type[M], data: Any, source: str = "a record") -> M | None:
    """`data` (a run file's JSON) as `model`, or None when it is not a JSON object that fits it
    (a damaged record is never half-believed). A versioned record is brought to its current
    format first; one of a newer format is refused (NewerFormat, naming `source`), never taken
    for a damaged one."""
    if not isinstance(data, dict):
        return None
    if issubclass(model, Versioned):
        data = model.FORMAT.upgrade(data, source)
    try:
        return model.model_validate(data)
    except ValueError:  # pydantic's ValidationError, or a model's own check of the whole
        return None


def problem(model: type[BaseModel], data: Any, source: str = "a record") -> str | None:
    """Why `data` does not fit `model` (`field: what`, its first error), or None when it does."""
    if not isinstance(data, dict):
        found = "no valid JSON" if data is None else f"a JSON {type(data).__name__}"
        return f"expected a JSON object, found {found}"
    if issubclass(model, Versioned):
        data = model.FORMAT.upgrade(data, source)
    try:
        model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        return f"{where}: {msg}" if where else msg
    except ValueError as exc:
        return str(exc)
    return None


def read_record(model: type[M], path: Path, *, strict: bool = False) -> M | None:
    """The record at `path` through its model: None when there is none; a damaged one is None,
    or with `strict` (commands that only report) a RunFileError naming the file and its first
    problem. A newer format is refused either way (NewerFormat)."""
    data = read_json(path)
    found = checked(model, data, str(path))
    if found is not None or not (strict and path.exists()):
        return found
    raise RunFileError(f"{path}: damaged ({problem(model, data, str(path))})")


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
