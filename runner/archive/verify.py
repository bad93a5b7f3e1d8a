"""Verify an archive in one streaming pass, before anything of it is written or loaded.

Nothing is extracted: each member is hashed as it streams past, and the run's small files
(index, checksums, JSON, YAML) are kept in memory for `reproduce`. Refused, each in one
sentence: a truncated or corrupt stream, anything but a regular file (links, devices, folders),
an absolute or `..` path or one outside the run's folder, a member larger than the index says,
more data than the expansion limit, a checksum mismatch, a file missing from or not listed in
SHA256SUMS, a duplicate, and an archive or manifest format newer than this rlcrate reads.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, TypeGuard

from runner.archive.layout import (
    ARCHIVE_FORMAT,
    EXPANSION_FLOOR,
    EXPANSION_RATIO,
    INDEX,
    MANIFEST_FORMAT,
    MAX_FILES,
    PICKLE_SUFFIXES,
    SMALL_LIMIT,
    SMALL_SUFFIXES,
    SUMS,
)
from runner.errors import UserInputError
from runner.manifest.parse import parse_yaml

CHUNK = 1 << 20
PARENTS_PREFIX = "parents/"


class ArchiveRefused(UserInputError):
    """The archive failed verification; nothing was extracted or loaded."""


@dataclass
class Verified:
    path: Path
    top: str
    index: dict[str, Any]
    sums: dict[str, str]
    # the small files and a warm start's parent files, by relative path
    files: dict[str, bytes] = field(default_factory=dict)
    total_bytes: int = 0

    def json(self, name: str) -> Any:
        return json.loads(self.files[name]) if name in self.files else None

    def yaml(self, name: str) -> Any:
        if name not in self.files:
            return None
        text = self.files[name].decode("utf-8", "replace")
        return parse_yaml(text, f"{self.path}:{name}")[0]  # bounded: aliases, depth, duplicates


def _refuse(path: Path, why: str) -> ArchiveRefused:
    return ArchiveRefused(f"{path}: refused, {why}; nothing was extracted")


def _check_name(path: Path, member: tarfile.TarInfo, top: str | None) -> tuple[str, str]:
    """(top folder, path inside it) of a member, or a refusal."""
    name = member.name
    kind = "link" if member.issym() or member.islnk() else "folder" if member.isdir() else None
    if kind or not member.isreg():
        raise _refuse(path, f"it holds a {kind or 'special file'} entry ({name!r})")
    pure = PurePosixPath(name)
    if pure.is_absolute() or name.startswith(("/", "\\")) or ".." in pure.parts or "\\" in name:
        raise _refuse(path, f"it holds an entry with an unsafe path ({name!r})")
    parts = pure.parts
    if len(parts) < 2 or (top is not None and parts[0] != top):
        raise _refuse(path, f"entry {name!r} is outside the run's folder")
    return parts[0], "/".join(parts[1:])


def _hash(stream: IO[bytes], keep: bool) -> tuple[str, bytes | None]:
    h, kept = hashlib.sha256(), bytearray() if keep else None
    while chunk := stream.read(CHUNK):
        h.update(chunk)
        if kept is not None:
            kept += chunk
    return h.hexdigest(), bytes(kept) if kept is not None else None


def _parse_sums(path: Path, data: bytes) -> dict[str, str]:
    sums: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or name in sums:
            raise _refuse(path, f"{SUMS} is malformed (line {line[:80]!r})")
        sums[name] = digest
        if len(sums) > MAX_FILES:
            raise _refuse(
                path, f"{SUMS} lists more than {MAX_FILES:,} files; a run never holds so many"
            )
    if INDEX not in sums:
        raise _refuse(path, f"{SUMS} does not list {INDEX}")
    return sums


def _is_int(value: Any) -> TypeGuard[int]:
    """An integer, not a bool (JSON's `true` is an int to isinstance)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_index(path: Path, data: bytes) -> dict[str, Any]:
    try:
        index = json.loads(data)
    except ValueError:
        raise _refuse(path, f"{INDEX} is not valid JSON") from None
    if not isinstance(index, dict) or index.get("kind") != "rlcrate-archive":
        raise _refuse(path, f"{INDEX} does not describe an rlcrate archive")
    fmt = index.get("format")
    if not _is_int(fmt) or fmt > ARCHIVE_FORMAT:
        raise _refuse(
            path,
            f"it was written by {index.get('written_by', 'a newer rlcrate')} in archive format "
            f"{fmt}; this rlcrate reads format {ARCHIVE_FORMAT} (upgrade rlcrate)",
        )
    return index


class _Pass:
    """The state of one streaming pass over the members."""

    def __init__(self, path: Path):
        self.path = path
        self.budget = max(EXPANSION_RATIO * path.stat().st_size, EXPANSION_FLOOR)
        self.top: str | None = None
        self.index: dict[str, Any] | None = None
        self.sums: dict[str, str] | None = None
        self.seen: set[str] = set()
        self.files: dict[str, bytes] = {}
        self.total = 0
        self.index_digest = ""

    def member(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        self.top, rel = _check_name(self.path, member, self.top)
        self.total += member.size
        if self.total > self.budget:
            raise _refuse(
                self.path,
                f"it would expand to more than {self.budget / 2**20:.0f} MiB "
                f"({EXPANSION_RATIO}x its size); an rlcrate archive never does",
            )
        if rel in self.seen:
            raise _refuse(self.path, f"it holds {rel!r} twice")
        if len(self.seen) >= MAX_FILES + 2:
            raise _refuse(self.path, f"it holds more than {MAX_FILES:,} files; a run never does")
        self._expect_listed(rel, member.size)
        stream = tar.extractfile(member)
        if stream is None:  # checked regular above; under python -O too, never read as None
            raise _refuse(self.path, f"it holds {rel!r}, which is not a regular file")
        keep = (
            rel in (INDEX, SUMS)
            or (rel.endswith(SMALL_SUFFIXES) and member.size <= SMALL_LIMIT)
            or rel.startswith(PARENTS_PREFIX)  # a warm start's parent: reproduce reruns from it
        )
        digest, data = _hash(stream, keep)
        self.seen.add(rel)
        if rel == INDEX:
            self.index_digest = digest
            self.index = _parse_index(self.path, data or b"")
        elif rel == SUMS:
            self.sums = _parse_sums(self.path, data or b"")
        if rel != SUMS and self.sums is not None and digest != self.sums[rel]:
            raise _refuse(self.path, f"{rel} does not match its SHA-256 in {SUMS} (altered?)")
        if data is not None and rel not in (INDEX, SUMS):
            self.files[rel] = data
        if rel == SUMS and self.sums is not None and self.sums[INDEX] != self.index_digest:
            raise _refuse(self.path, f"{INDEX} does not match its SHA-256 in {SUMS} (altered?)")

    def _expect_listed(self, rel: str, size: int) -> None:
        order = len(self.seen)
        if order < 2 and rel != (INDEX, SUMS)[order]:
            raise _refuse(self.path, f"it does not start with {INDEX} and {SUMS}")
        if self.sums is not None and rel not in self.sums:
            raise _refuse(self.path, f"{rel} is not listed in {SUMS} (added?)")
        sizes = (self.index or {}).get("sizes") or {}
        if rel in sizes and sizes[rel] != size:
            raise _refuse(self.path, f"{rel} is {size} bytes, the index says {sizes[rel]}")

    def finish(self) -> Verified:
        if self.index is None or self.sums is None or self.top is None:
            raise _refuse(self.path, f"it has no {INDEX} and {SUMS} (not an rlcrate archive)")
        missing = sorted(set(self.sums) - self.seen)
        if missing:
            raise _refuse(
                self.path, f"{missing[0]} is listed in {SUMS} but missing ({len(missing)} missing)"
            )
        return Verified(self.path, self.top, self.index, self.sums, self.files, self.total)


def verify(path: Path) -> Verified:
    """Check every member of the archive at `path`; raise ArchiveRefused on the first problem."""
    state = _Pass(path)
    try:
        with tarfile.open(path, mode="r|gz") as tar:
            for member in tar:
                state.member(tar, member)
    except ArchiveRefused:
        raise
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        what = "truncated" if isinstance(exc, EOFError) or "end" in str(exc) else "corrupt"
        raise _refuse(path, f"the stream is {what} or not an rlcrate archive ({exc})") from None
    verified = state.finish()
    _check_formats(verified)
    _check_no_pickles(verified)
    _check_statistics(verified)
    return verified


def _check_no_pickles(v: Verified) -> None:
    """Archives travel between strangers: a pickle (an older rlcrate's statistics or Brax
    parameters) can run code when read, so an archive that holds one is refused."""
    for rel in sorted(v.sums):
        if rel.endswith(PICKLE_SUFFIXES):
            raise _refuse(
                v.path,
                f"it holds {rel}, a Python pickle (written by an older rlcrate), which can run "
                "code when read; rlcrate reads only data files: archive the run again after "
                "rerunning it with this rlcrate",
            )


def _check_statistics(v: Verified) -> None:
    """A normalized variant's model is unusable without its VecNormalize statistics: an archive
    with the model but not them is refused (the rerun could not evaluate it the same way)."""
    try:
        variants = (v.yaml("resolved.yaml") or {}).get("variants") or {}
        normalized = {
            name for name, spec in variants.items() if spec["config"]["algo"].get("normalize")
        }
    except (AttributeError, KeyError, TypeError):
        return  # a damaged resolved.yaml is refused where it is read
    for rel in v.sums:
        parts = rel.split("/")
        if parts[-1] == "model.zip" and len(parts) == 4 and parts[1] in normalized:
            stats = "/".join(parts[:-1] + ["vecnormalize.npz"])
            if stats not in v.sums:
                why = f"{stats} is missing: {rel} was trained with algo.normalize"
                raise _refuse(v.path, why)


def _check_formats(v: Verified) -> None:
    manifest = v.files.get("manifest.yaml")
    if manifest is None:
        raise _refuse(v.path, "it holds no manifest.yaml")
    try:
        text = manifest.decode("utf-8", "replace")
        fmt = (parse_yaml(text, f"{v.path}:manifest.yaml")[0] or {}).get("rlcrate")
    except AttributeError:
        raise _refuse(v.path, "its manifest.yaml is not a YAML mapping") from None
    if not _is_int(fmt) or fmt > MANIFEST_FORMAT:
        raise _refuse(
            v.path,
            f"its manifest is in format rlcrate: {fmt}; this rlcrate runs format "
            f"{MANIFEST_FORMAT} (upgrade rlcrate to reproduce it)",
        )
