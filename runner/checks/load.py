"""The whole manifest pipeline: parse -> validate (`runner.manifest.load`) -> check, collecting
every problem before reporting."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from runner.backends import anchor_paths
from runner.checks import lineage
from runner.checks.manifest import check_manifest
from runner.errors import ManifestError
from runner.manifest.load import read_manifest
from runner.manifest.overrides import Override, attribute
from runner.manifest.schema import Manifest
from runner.trainers import defaults


def load_manifest(
    path: str | Path, *, check: bool = True, overrides: Sequence[Override] = ()
) -> Manifest:
    """Parse, validate and (by default) check a manifest; raise ManifestError listing every problem.

    When the schema rejects some fields, the checks still run on the rest (with defaults in place
    of the rejected values), so one `validate` shows every problem at once. `overrides` (--set,
    --seeds) are applied first; a problem they cause names them instead of a line of the file.
    """
    path = Path(path)
    manifest, problems, lines = read_manifest(path, defaults.apply, overrides)
    manifest = anchor_paths(manifest, path.resolve().parent)
    manifest = lineage.anchor(manifest, path.resolve().parent)
    if check:
        found = check_manifest(manifest, str(path), lines)
        problems += [p for p in found if p not in problems]
    if problems:
        raise ManifestError(sorted(attribute(problems, overrides), key=lambda p: p.line))
    return manifest
