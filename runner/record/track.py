"""What has been tracked, `track.json` beside what it describes (each unit directory, and the run
directory): per tracker (`mlflow`, `wandb`), its own entry (where, the tracked run id, the last
step uploaded per scalar, fingerprints of the eval result and model uploaded). No credentials are
ever written here. One typed model, written here alone (`write_track`) and read through
`read_track`; each tracker owns its entry's keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from runner.record.rundir import read_record, write_json_atomic
from runner.record.versioned import Format, Versioned

TRACK_FILE = "track.json"


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1: the file was the trackers' mapping itself; it is now `trackers`."""
    return {"format": 1, "written_by": None, "trackers": data}


class TrackRecord(Versioned):
    """track.json."""

    model_config = ConfigDict(extra="forbid")
    FORMAT = Format(TRACK_FILE, 1, (from_unversioned,))

    trackers: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Tracker name -> its own entry."
    )


def write_track(folder: Path, record: TrackRecord) -> None:
    write_json_atomic(folder / TRACK_FILE, record.as_written())


def read_track(folder: Path) -> TrackRecord:
    """The folder's track.json; an empty record when it has none or it is damaged (the trackers
    then upload again, into runs of their own)."""
    found = read_record(TrackRecord, folder / TRACK_FILE)
    return found if found is not None else TrackRecord()
