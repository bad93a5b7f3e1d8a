"""`rlcrate archive RUN_DIR -o FILE`: a deterministic, checksummed tar.gz of a run.

Deterministic: the same run archived twice gives byte-identical files (entries sorted, mtime 0,
owner 0:0 with no names, fixed modes, no gzip timestamp or file name, no archiving time inside).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import __version__
from runner.archive.layout import (
    ARCHIVE_FORMAT,
    INDEX,
    MODEL_PARTS,
    PICKLE_SUFFIXES,
    SKIPPED_NAMES,
    SUMS,
    TB_PARTS,
    VIDEO_PARTS,
)
from runner.archive.parents import parent_files
from runner.errors import RunFileError, UserInputError
from runner.manifest.resolved import ResolvedRun, read_resolved
from runner.record.output import check_output, write_failed
from runner.record.provenance import (
    PROVENANCE_FILE,
    Provenance,
    checked_provenance,
    provenance_problem,
)
from runner.record.rundir import file_sha256, read_json
from runner.record.status import read_status


@dataclass(frozen=True)
class ArchiveOptions:
    models: bool = True
    tensorboard: bool = True
    incomplete: bool = False  # archive a run with failed or interrupted units, marked as such
    videos: bool = True  # the units' eval.video clips (video/)


def run_files(run_dir: Path, opts: ArchiveOptions) -> list[str]:
    """The run's regular files to archive, as sorted POSIX paths relative to the run directory.

    A file of the run that is not a regular file (a symbolic link, a FIFO, a device) is refused
    with its name: an archive that left it out would still say it holds the whole run."""
    out = []
    for path in run_dir.rglob("*"):
        rel = path.relative_to(run_dir)
        parts = rel.parts
        if any(p.startswith(".") for p in parts):
            continue  # temporary files of atomic writes, the lock: never archived
        if rel.name in SKIPPED_NAMES and parts[0] == "units":
            continue
        if (
            (not opts.models and any(p in MODEL_PARTS for p in parts))
            or (not opts.tensorboard and any(p in TB_PARTS for p in parts))
            or (not opts.videos and parts[0] == "units" and any(p in VIDEO_PARTS for p in parts))
        ):
            continue
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            kind = "a symbolic link" if path.is_symlink() else "not a regular file"
            raise UserInputError(
                f"{path}: refused, it is {kind}; an archive holds the run's own regular files "
                "only (replace it with the file itself, then archive again)"
            )
        if path.is_file() and path.name.endswith(PICKLE_SUFFIXES):
            raise UserInputError(
                f"{path}: refused, it is a Python pickle (written by an older rlcrate), which "
                "can run code when read; an archive holds data only: rerun the unit with this "
                "rlcrate, then archive again"
            )
        if path.is_file():
            out.append(rel.as_posix())
    return sorted(out)


def unit_states(run_dir: Path, res: ResolvedRun) -> dict[str, str]:
    if not (run_dir / "units").is_dir():
        return {}  # a bench-only run has no units
    return {u.key: read_status(u.dir(run_dir), strict=True).state for u in res.units()}


def check_finished(run_dir: Path, states: dict[str, str], opts: ArchiveOptions) -> list[str]:
    """Refuse a run in progress; refuse failed units unless --incomplete (then return them)."""
    waiting = [k for k, s in states.items() if s in ("pending", "running")]
    if waiting:
        raise UserInputError(
            f"{run_dir}: {len(waiting)} unit(s) not finished ({waiting[0]}: "
            f"{states[waiting[0]]}); finish or resume the run before archiving it"
        )
    bad = [k for k, s in states.items() if s != "done"]
    if bad and not opts.incomplete:
        raise UserInputError(
            f"{run_dir}: {len(bad)} unit(s) did not finish ({bad[0]}: {states[bad[0]]}); "
            "resume the run, or pass --incomplete to archive it marked incomplete"
        )
    return bad


def _provenance(run_dir: Path) -> Provenance:
    """provenance.json through its model (none: the archive records less); one that does not
    fit it is refused, as `reproduce` would refuse the archive."""
    path = run_dir / PROVENANCE_FILE
    raw = read_json(path)
    if raw is None and not path.exists():
        return Provenance()
    prov = checked_provenance(raw, str(path))
    if prov is None:
        raise RunFileError(
            f"{path}: damaged ({provenance_problem(raw, str(path))}); `reproduce` would refuse "
            "an archive of it: restore it, or remove it (the archive then records less of where "
            "the run ran)"
        )
    return prov


def check_study(run_dir: Path, res: ResolvedRun) -> None:
    """A study's tune.json is archived only as its units and resolved.yaml have it
    (`tune.agree`): `reproduce` reruns the trial it names best."""
    from runner.record.tune import TUNE_FILE, read_tune
    from runner.tune.agree import record_disagrees, run_metric

    record = read_tune(run_dir)  # damaged: one line naming it
    if record is None:
        return
    why = record_disagrees(record, res, run_metric(run_dir, record.study.metric))
    if why is not None:
        raise UserInputError(
            f"{run_dir / TUNE_FILE}: disagrees with the study's units and resolved.yaml ({why}); "
            "an archive of it would rerun another trial than its figures pick: restore it, or "
            "archive with it removed"
        )


def game_hashes(res: ResolvedRun) -> dict[str, Any]:
    """SHA-256 of every file each env is made from (a Godot game: bundled, project folder or
    exported binary); envs made from an installed package have none."""
    from runner.backends import get_backend

    out: dict[str, Any] = {}
    envs = {v.config.env.id: v.config.env for v in res.variants.values()}
    for env_id, env in sorted(envs.items()):
        try:
            found = get_backend(env.backend).env_files(env)
        except Exception as exc:  # the game may be gone; the archive records that
            out[env_id] = {"error": str(exc)}
            continue
        if found is None:
            continue
        kind, path = found
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out[env_id] = {
            "kind": kind,
            "files": {
                (p.name if path.is_file() else p.relative_to(path).as_posix()): file_sha256(p)
                for p in files
            },
        }
    return out


def extra_files(prov: Provenance) -> dict[str, bytes]:
    """Environment files made for the archive: installed packages, and the image's lock."""
    pkgs = prov.packages
    out = {"environment/packages.txt": "".join(f"{n}=={v}\n" for n, v in pkgs.items()).encode()}
    lock = Path("/opt/rlcrate/requirements.lock")  # where the images keep their lock
    if prov.image.get("tag") and lock.is_file():
        out["environment/requirements.lock"] = lock.read_bytes()
    return out


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _stream(tar: tarfile.TarFile, name: str, data: bytes | Path) -> None:
    if isinstance(data, bytes):
        tar.addfile(_tarinfo(name, len(data)), io.BytesIO(data))
        return
    with data.open("rb") as f:
        tar.addfile(_tarinfo(name, os.fstat(f.fileno()).st_size), f)


def _index(
    run_dir: Path,
    res: ResolvedRun,
    prov: Provenance,
    states: dict[str, str],
    sizes: dict[str, int],
    opts: ArchiveOptions,
) -> dict[str, Any]:
    bad = {k: s for k, s in states.items() if s != "done"}
    return {
        "kind": "rlcrate-archive",
        "format": ARCHIVE_FORMAT,
        "written_by": f"rlcrate {__version__}",
        "run": {
            "name": res.name,
            "run_id": run_dir.name,
            "manifest_format": res.rlcrate,
            "complete": not bad,
            "not_done": bad,
            "units": len(states),
        },
        "contains": {
            "models": opts.models,
            "tensorboard": opts.tensorboard,
            "files": len(sizes) + 2,
            "bytes": sum(sizes.values()),
        },
        "ran_with": {
            "rlcrate": prov.rlcrate,
            "image": prov.image or None,
            "python": prov.python.get("version"),
            "determinism": {k: c.model_dump(mode="json") for k, c in prov.determinism.items()}
            or None,
        },
        "lock": "environment/requirements.lock"
        if "environment/requirements.lock" in sizes
        else "environment/packages.txt",
        "game": game_hashes(res),
        "parents": {n: v.parent.run_id for n, v in res.variants.items() if v.parent is not None},
        "sizes": sizes,
    }


def archive(run_dir: Path, output: Path, opts: ArchiveOptions) -> dict[str, Any]:
    """Write the archive atomically; returns its index. Refuses a run that is not finished."""
    res = read_resolved(run_dir)
    # inside a run (its own or another), a device, a folder: refused; an older archive: replaced
    check_output(output, force=True)
    prov = _provenance(run_dir)
    states = unit_states(run_dir, res)
    check_finished(run_dir, states, opts)
    check_study(run_dir, res)
    entries: dict[str, bytes | Path] = {rel: run_dir / rel for rel in run_files(run_dir, opts)}
    entries.update(extra_files(prov))
    entries.update(parent_files(run_dir, res))
    entries = dict(sorted(entries.items()))
    sums, sizes = {}, {}
    for name, data in entries.items():
        if isinstance(data, bytes):
            sums[name], sizes[name] = hashlib.sha256(data).hexdigest(), len(data)
        else:
            sums[name], sizes[name] = file_sha256(data), data.stat().st_size
    index = _index(run_dir, res, prov, states, sizes, opts)
    index_bytes = (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()
    sums = {INDEX: hashlib.sha256(index_bytes).hexdigest(), **sums}
    sums_bytes = "".join(f"{h}  {n}\n" for n, h in sums.items()).encode()
    _write(output, run_dir.name, {INDEX: index_bytes, SUMS: sums_bytes, **entries})
    return index


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def clear_stale_parts(output: Path) -> list[Path]:
    """Remove `.NAME.PID.tmp` files of `output` left by an `archive` that was killed (its pid is
    gone); a live writer's part is left alone. Returns what was removed."""
    removed = []
    for part in output.parent.glob(f".{output.name}.*.tmp"):
        pid = part.name[len(output.name) + 2 : -len(".tmp")]
        if pid.isdigit() and not _pid_alive(int(pid)):
            part.unlink(missing_ok=True)
            removed.append(part)
    return removed


def _write(output: Path, top: str, entries: dict[str, bytes | Path]) -> None:
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        clear_stale_parts(output)
        tmp.open("xb").close()  # the folder takes a new file: else one line naming the target
    except OSError as exc:
        raise write_failed(output, exc) from None
    try:
        with tmp.open("wb") as raw:
            with (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
            ):
                for name, data in entries.items():
                    _stream(tar, f"{top}/{name}", data)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, output)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp)):  # not a run file's
            raise write_failed(output, exc) from None
        raise
