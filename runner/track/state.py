"""What has been tracked, recorded beside what it describes: `track.json` (`record.track`) in each
unit directory (per sink: where, the tracked run id, the last step uploaded per scalar,
fingerprints of the eval result and model uploaded) and in the run directory (per sink: the
parent run or group). No credentials are ever written here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.record.rundir import UnitRef, file_sha256
from runner.record.track import TRACK_FILE, read_track, write_track


def load(folder: Path, sink: str) -> dict[str, Any]:
    return dict(read_track(folder).trackers.get(sink, {}))


def save(folder: Path, sink: str, entry: dict[str, Any]) -> None:
    record = read_track(folder)
    record.trackers[sink] = entry
    write_track(folder, record)


def fingerprint(path: Path) -> str | None:
    """SHA-256 of a file (None if it is missing): has it changed since it was uploaded?"""
    return file_sha256(path) if path.is_file() else None


def where_tracked(unit_dir: Path) -> dict[str, Any]:
    """For provenance: per sink, where the unit is tracked and its tracked run id."""
    keys = ("uri", "experiment", "project", "entity", "mode", "run_id", "url")
    return {
        sink: {k: e[k] for k in keys if e.get(k) is not None}
        for sink, e in read_track(unit_dir).trackers.items()
        if e.get("run_id")
    }


def record_in_provenance(run_dir: Path, units: list[UnitRef]) -> None:
    from runner.record.provenance import read_provenance, update_provenance

    prov = read_provenance(run_dir)
    if prov is None:  # damaged: kept as it is
        return
    recorded = {k: dict(v) for k, v in prov.units.items()}
    for u in units:
        tracked = where_tracked(u.dir(run_dir))
        if tracked:
            recorded.setdefault(u.key, {})["track"] = tracked
    update_provenance(run_dir, units=recorded)


def sweep(run_dir: Path, units: list[UnitRef]) -> None:
    """Remove the temporary files of track.json writes that an upload killed outright (SIGKILL)
    left; called under the run's lock, with no upload running, so none is in use."""
    for folder in [run_dir, *(u.dir(run_dir) for u in units)]:
        for tmp in folder.glob(f".{TRACK_FILE}.*"):
            tmp.unlink(missing_ok=True)
