"""Files a run writes and reads back that hold numbers: read as data, never as code.

A run directory or an archive travels between strangers, so nothing rlcrate reads from one may
run code when read. Python pickles can (a `__reduce__` calls anything), and so can SB3's
`:serialized:` entries (cloud-pickled) and torch files loaded without `weights_only`.
What a run keeps is:

- arrays in `.npz` files read with `allow_pickle=False` (numbers and their shapes only);
- zips whose members are checked before any library opens them (`check_zip`): plain names, a
  bounded count and size, the members the writer makes and no others;
- torch files read with `weights_only=True` (torch's own restricted unpickler: tensors,
  numbers, strings and containers of them).

`LegacyPickle` is the one line for a file an older rlcrate wrote as a pickle: it is refused,
never loaded.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from runner.errors import RunFileError
from runner.record.rundir import replace_via

# A model of an image policy is tens of MB; a member this large is a bomb, not a model.
MAX_MEMBER_BYTES = 2 << 30
MAX_MEMBERS = 64
_PLAIN = re.compile(r"^[A-Za-z0-9_.\-]+$")  # and neither "." nor ".."


class LegacyPickle(RunFileError):
    """A file an older rlcrate saved as a Python pickle, which can run code when read."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(
            f"{path}: {what} saved as a Python pickle by an older rlcrate; a pickle can run "
            "code when it is read, so rlcrate refuses it: rerun the unit with this rlcrate to "
            "have it saved as data"
        )


def check_zip(
    path: Path, allowed: Iterable[str] | None = None, *, what: str = "file", folders: bool = False
) -> None:
    """Raise RunFileError (one line naming `path`) unless it is a zip whose members all have
    plain names (no `..`; no folders unless `folders`, as torch's own zips have), are
    `allowed` (when given), are at most MAX_MEMBERS and each at most MAX_MEMBER_BYTES
    uncompressed. Called before any library opens it."""
    allow = set(allowed) if allowed is not None else None
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise RunFileError(f"{path}: the {what} is not a readable zip ({exc})") from None
    if len(infos) > MAX_MEMBERS:
        raise RunFileError(f"{path}: the {what} has {len(infos)} members, over {MAX_MEMBERS}")
    for info in infos:
        name = info.filename
        shown = ascii(name)[:80]
        parts = name.split("/") if folders else [name]
        if not all(_PLAIN.match(part) and part not in (".", "..") for part in parts):
            raise RunFileError(
                f"{path}: the {what} has a member named {shown}; expected plain names"
            )
        if allow is not None and name not in allow:
            raise RunFileError(
                f"{path}: the {what} has a member {shown} that rlcrate does not write; "
                f"expected only {', '.join(sorted(allow))}"
            )
        if info.file_size > MAX_MEMBER_BYTES:
            raise RunFileError(
                f"{path}: the {what}'s member {shown} unpacks to {info.file_size} bytes, over "
                f"{MAX_MEMBER_BYTES}"
            )


def write_npz_atomic(path: Path, arrays: Mapping[str, Any]) -> None:
    """Arrays of numbers as one .npz, atomically (via a temporary file beside it)."""
    import numpy as np

    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.npz")  # numpy keeps a .npz name as is

    def write(t: Path) -> None:
        with open(t, "wb") as f:
            named = {k: np.asarray(v) for k, v in arrays.items()}
            np.savez(f, allow_pickle=False, **named)  # type: ignore[arg-type]  # numbers only

    replace_via(path, tmp, write)


def read_npz(path: Path, *, what: str) -> dict[str, Any]:
    """Every array of an .npz written by `write_npz_atomic`, as numbers only: an object array
    (which only a pickle can hold) or a damaged file is one RunFileError naming `path`."""
    import numpy as np

    check_zip(path, what=what)
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {name: z[name] for name in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise RunFileError(f"{path}: the {what} is not readable as arrays ({first})") from None
    for name, arr in out.items():
        if arr.dtype.kind not in "biuf":
            raise RunFileError(
                f"{path}: the {what}'s array {name!r} holds {arr.dtype}, not numbers"
            )
    return out


def torch_load(path_or_file: Any, *, map_location: str = "cpu") -> Any:
    """torch.load with torch's restricted unpickler (tensors, numbers, strings, containers); a
    file path is checked as a zip first (torch saves zips)."""
    import torch

    if isinstance(path_or_file, Path):
        check_zip(path_or_file, what="torch file", folders=True)
    return torch.load(path_or_file, weights_only=True, map_location=map_location)
