"""What a run started with: the SHA-256 of its manifest.yaml and resolved.yaml, recorded in
provenance.json when the run directory is made and checked before every resume.

A resume takes its units' configs, seeds and --set values from resolved.yaml; a run whose
resolved.yaml (and manifest.yaml, to match) was edited afterwards would go on training something
other than what it began, under the same run. The record catches an edit of those files. It is
no signature: whoever rewrites provenance.json as well can forge it (docs/run-directory.md).
"""

from __future__ import annotations

from pathlib import Path

from runner.errors import RunFileError
from runner.record.rundir import file_sha256

KEY = "started_with"  # provenance.json: {file name: SHA-256}
FILES = ("manifest.yaml", "resolved.yaml")


def fingerprint(run_dir: Path) -> dict[str, str]:
    """The hashes to record, once the run's manifest.yaml and resolved.yaml are written."""
    return {name: file_sha256(run_dir / name) for name in FILES}


def check(run_dir: Path) -> str | None:
    """RunFileError, one line naming the file, when the run's files are not those it started
    with. A run with no record (made by an older rlcrate, or its provenance.json damaged, which
    a resume survives) cannot be checked: the warning to print is returned instead."""
    from runner.record.provenance import PROVENANCE_FILE, read_provenance

    prov_path = run_dir / PROVENANCE_FILE
    prov = read_provenance(run_dir)
    recorded = prov.started_with if prov is not None else None
    if recorded is None or set(recorded) != set(FILES):
        return (
            f"{prov_path} has no record of the files the run started with ({KEY}: an older "
            "rlcrate's run, or a damaged provenance.json); manifest.yaml and resolved.yaml are "
            "taken as they are"
        )
    for name in FILES:
        path = run_dir / name
        try:
            found = file_sha256(path)
        except OSError as exc:
            raise RunFileError(f"{path}: cannot be read ({exc.strerror})") from None
        if found != recorded[name]:
            raise RunFileError(
                f"{path}: changed since the run was made (SHA-256 {found[:12]}..., provenance.json "
                f"recorded {str(recorded[name])[:12]}...); a run resumes only with the files it "
                "started with: restore them, or start a new run"
            )
    return None
