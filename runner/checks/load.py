"""The whole manifest pipeline: parse -> validate (`runner.manifest.load`) -> check, collecting
every problem before reporting."""

from __future__ import annotations

from pathlib import Path

from runner.checks.manifest import check_manifest
from runner.errors import ManifestError
from runner.manifest.load import read_manifest
from runner.manifest.schema import Manifest


def load_manifest(path: str | Path, *, check: bool = True) -> Manifest:
    """Parse, validate and (by default) check a manifest; raise ManifestError listing every problem.

    When the schema rejects some fields, the checks still run on the rest (with defaults in place
    of the rejected values), so one `validate` shows every problem at once.
    """
    from runner.trainers.task_defaults import prepare  # algo.defaults: task

    path = Path(path)
    manifest, problems, lines = read_manifest(path, prepare)
    if check:
        found = check_manifest(manifest, str(path), lines)
        problems += [p for p in found if p not in problems]
    if problems:
        raise ManifestError(sorted(problems, key=lambda p: p.line))
    return manifest
