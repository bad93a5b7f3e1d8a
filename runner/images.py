"""Build, list and run the versioned images with docker, podman or buildah.

The images themselves are defined by `Dockerfile.<variant>` and `images/<variant>/` in a source
checkout; these modules only assemble engine command lines (pure functions, tested without an
engine) and run them. Nothing heavy is imported here.

Names, labels and engine queries live in `images_engine`, building in `images_build`, running
in `images_run`; this module is their public face.
"""

from __future__ import annotations

from runner.images_build import base_args, build, build_command, metadata_args, source_root
from runner.images_engine import (
    ENGINE_ENV,
    ENGINES,
    ENTRYPOINT,
    IN_DIR,
    LABEL_LOCK,
    LABEL_MIN_DRIVER,
    LABEL_VARIANT,
    OUT_DIR,
    VARIANTS,
    ImageInfo,
    default_tag,
    detect_engine,
    inspect,
    list_images,
    resolve_target,
)
from runner.images_run import check_driver, host_driver_version, run_command, run_in_image

__all__ = [
    "ENGINES",
    "ENGINE_ENV",
    "ENTRYPOINT",
    "IN_DIR",
    "LABEL_LOCK",
    "LABEL_MIN_DRIVER",
    "LABEL_VARIANT",
    "OUT_DIR",
    "VARIANTS",
    "ImageInfo",
    "base_args",
    "build",
    "build_command",
    "check_driver",
    "default_tag",
    "detect_engine",
    "host_driver_version",
    "inspect",
    "list_images",
    "metadata_args",
    "resolve_target",
    "run_command",
    "run_in_image",
    "source_root",
]
