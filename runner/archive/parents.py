"""A warm start's parents in an archive: `archive` carries the parent units a warm-started run
started from (pinned by SHA-256 in its resolved.yaml) under parents/<run-id>/, laid out as that
run's own directory; `reproduce` unpacks them next to the rerun, which starts from them."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from runner.archive.verify import Verified
from runner.errors import UserInputError
from runner.manifest.resolved import ResolvedRun, read_resolved
from runner.record.rundir import file_sha256, write_bytes_atomic

PARENTS = "parents"  # a warm start's parent units, as a run directory of their own: parents/<id>/


def parent_files(run_dir: Path, res: ResolvedRun) -> dict[str, Path]:
    """The files every warm start of the run started from (archive name -> file): each parent
    run's manifest and resolved.yaml, and each parent unit's status and pinned files, under
    parents/<run-id>/ as they lie in that run. Refused, with how to fix it, when one is gone or
    differs from the hash pinned when the run started."""
    from runner.checks.lineage import Parent

    out: dict[str, Path] = {}
    for lineage in (v.parent for v in res.variants.values() if v.parent is not None):
        run = Path(lineage.run)
        top = f"{PARENTS}/{lineage.run_id}"
        pinned = {
            "manifest.yaml": lineage.manifest_sha256,
            "resolved.yaml": lineage.resolved_sha256,
        }
        for name, digest in pinned.items():
            out[f"{top}/{name}"] = _pinned(run_dir, run / name, digest)
        parent = Parent(run, read_resolved(run), lineage.variant)
        for unit in lineage.units.values():
            unit_dir = parent.unit_dir(unit.seed)
            out[f"{top}/{unit_dir.relative_to(run).as_posix()}/status.json"] = (
                unit_dir / "status.json"
            )
            digests = (unit.model_sha256, unit.stats_sha256)
            for path, sha in zip(parent.files(unit.seed), digests, strict=False):
                out[f"{top}/{path.relative_to(run).as_posix()}"] = _pinned(run_dir, path, sha)
    return out


def _pinned(run_dir: Path, path: Path, digest: str | None) -> Path:
    found = file_sha256(path) if path.is_file() else None
    if digest is not None and found != digest:
        now = "is gone" if found is None else "has changed"
        raise UserInputError(
            f"{run_dir}: the warm start's parent file {path} {now} since the run started; "
            "restore the parent run as it was (resolved.yaml `parent` pins each file's "
            "SHA-256), then archive again, so the archive carries what the run started from"
        )
    return path


def unpack_parent(v: Verified, res: ResolvedRun, out: Path) -> Path | None:
    """A warm-started run's parent units, as the archive carries them, written to
    OUT/parents/<run-id>/ (kept: the rerun's resolved.yaml names it); None without a warm
    start. The rerun's own check then finds exactly the pinned files there."""
    ids = {p.run_id for p in (v.parent for v in res.variants.values()) if p is not None}
    if not ids:
        return None
    if len(ids) > 1:
        raise UserInputError(
            f"{v.path}: its variants warm-start from {len(ids)} parent runs; reproduce reruns "
            "a run whose warm starts share one parent run"
        )
    run_id = ids.pop()
    prefix = f"parents/{run_id}/"
    files = {name[len(prefix) :]: data for name, data in v.files.items() if name.startswith(prefix)}
    if "resolved.yaml" not in files:
        raise UserInputError(
            f"{v.path}: it does not carry its warm start's parent run {run_id} (archived by an "
            "older rlcrate?); nothing was rerun"
        )
    _check_parent_files(v, res, run_id, files)
    target = out / "parents" / run_id
    for rel, data in files.items():  # all checked before the first is written
        path = target / rel
        if path.exists() and not (path.is_file() and path.read_bytes() == data):
            raise UserInputError(
                f"{v.path}: {path} holds another copy of the warm start's parent (unpacked by "
                "an earlier reproduce, whose rerun reads it); reproduce into another --out"
            )
    for rel, data in files.items():
        path = target / rel
        if path.is_file():
            continue  # the same file, unpacked by an earlier reproduce
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
    return target.resolve()


def _check_parent_files(
    v: Verified, res: ResolvedRun, run_id: str, files: dict[str, bytes]
) -> None:
    """Refuse, before anything is written, a file under parents/<run-id>/ that `archive` would
    not have put there (only the parent's manifest, resolved.yaml and, for each pinned unit, its
    status and the files a warm start reads belong: `parent_files`), and a pinned file that is
    missing or is not the one the run's resolved.yaml pins."""
    from runner.checks.lineage import Parent
    from runner.manifest.resolved import parse_resolved

    where = f"{v.path}:{PARENTS}/{run_id}"
    theirs = parse_resolved(v.yaml(f"{PARENTS}/{run_id}/resolved.yaml"), f"{where}/resolved.yaml")
    expected: dict[str, str | None] = {}  # name -> the SHA-256 pinned, None: not pinned
    for lineage in (x.parent for x in res.variants.values() if x.parent is not None):
        expected["manifest.yaml"] = lineage.manifest_sha256
        expected["resolved.yaml"] = lineage.resolved_sha256
        if lineage.variant not in theirs.variants:
            raise UserInputError(
                f"{where}/resolved.yaml: has no variant {lineage.variant}, which the warm start "
                "names; nothing was rerun"
            )
        parent = Parent(Path(), theirs, lineage.variant)
        for unit in lineage.units.values():
            expected[(parent.unit_dir(unit.seed) / "status.json").as_posix()] = None
            pins = (unit.model_sha256, unit.stats_sha256)
            for path, sha in zip(parent.files(unit.seed), pins, strict=False):
                expected[path.as_posix()] = sha
    extra = sorted(set(files) - set(expected))
    if extra:
        raise UserInputError(
            f"{v.path}: refused, {PARENTS}/{run_id}/{extra[0]} is not a file of the warm "
            f"start's parent ({len(extra)} such file(s); an archive carries only the parent's "
            "manifest, resolved.yaml and each pinned unit's status and start files); nothing "
            "was rerun"
        )
    for name, sha in expected.items():
        data = files.get(name)
        if sha is not None and (data is None or hashlib.sha256(data).hexdigest() != sha):
            now = "is missing" if data is None else "is not the file"
            raise UserInputError(
                f"{v.path}: refused, {PARENTS}/{run_id}/{name} {now} its resolved.yaml pins "
                "(SHA-256, the warm start's `parent`); nothing was rerun"
            )


@contextlib.contextmanager
def unpacked_parent(v: Verified, res: ResolvedRun, out: Path, runs: Path) -> Iterator[Path | None]:
    """`unpack_parent` for a rerun whose run directories go under `runs`; undone when the
    rerun ends in an error that left no run directory there (a refusal, a Ctrl-C before any
    unit): nothing of a refused reproduce stays in OUT."""
    made = [p for p in (out, out / PARENTS) if not p.exists()]
    before = _entries(out / PARENTS), _entries(runs)
    try:
        yield unpack_parent(v, res, out)
    except BaseException:
        if _entries(runs) == before[1]:  # no rerun to keep its parent for
            for path in _entries(out / PARENTS) - before[0]:
                shutil.rmtree(path, ignore_errors=True)
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    path.rmdir()  # only when nothing else is there
        raise


def _entries(folder: Path) -> set[Path]:
    return set(folder.iterdir()) if folder.is_dir() else set()
