"""Archives for papers: `rlcrate archive` (pack), verification, and `rlcrate reproduce`."""

from __future__ import annotations

from runner.archive.pack import ArchiveOptions, archive
from runner.archive.reproduce import ReproduceOptions, reproduce
from runner.archive.verify import ArchiveRefused, Verified, verify

__all__ = [
    "ArchiveOptions",
    "ArchiveRefused",
    "ReproduceOptions",
    "Verified",
    "archive",
    "reproduce",
    "verify",
]
