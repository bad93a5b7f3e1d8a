"""What an rlcrate archive holds and how it is laid out; shared by writing and verifying.

An archive is a gzip-compressed tar of regular files only, all under one folder named after the
run id. Its first member is the index (`rlcrate-archive.json`: what it holds, which rlcrate wrote
it), its second `SHA256SUMS` (every other file, `sha256sum -c` format, paths relative to the
folder), then the run's files in sorted order.
"""

from __future__ import annotations

INDEX = "rlcrate-archive.json"
SUMS = "SHA256SUMS"
ARCHIVE_FORMAT = 1  # bumped when a reader of the previous format could misread the new one
MANIFEST_FORMAT = 1  # the newest manifest format (`rlcrate: N`) this rlcrate runs

# left out by --no-models (vecnormalize.npz: the model's observation normalization statistics)
MODEL_PARTS = ("model.zip", "vecnormalize.npz", "checkpoints")
# Files an older rlcrate wrote as Python pickles (which run code when read): an archive holding
# one is refused, never unpacked.
PICKLE_SUFFIXES = (".pkl", ".pickle")
TB_PARTS = ("tb",)  # left out by --no-tensorboard
VIDEO_PARTS = ("video",)  # a unit's eval.video clips, left out by --no-videos
SKIPPED_NAMES = ("progress.json",)  # advisory, rewritten every second while a unit trains

# An archive that would expand beyond max(RATIO x its size, FLOOR) bytes is refused before any
# of it is read: legitimate runs compress by well under 100x (models are already zip files).
EXPANSION_RATIO = 100
EXPANSION_FLOOR = 64 * 1024 * 1024
# Files read into memory while verifying (index, checksums, JSON and YAML of the run).
SMALL_SUFFIXES = (".json", ".yaml", ".txt", ".md", ".lock")
SMALL_LIMIT = 16 * 1024 * 1024
# Files an archive may hold. A run of 100 variants x 10 seeds with checkpoints holds some
# thousands; verifying costs ~0.2 ms a file, so this bounds a hostile listing to seconds.
MAX_FILES = 50_000
