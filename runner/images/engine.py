"""Image names and labels, and the container engine: which one, and what images it holds."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field, replace
from typing import Any

from runner import __version__
from runner.errors import RunnerError, UserInputError
from runner.record.command import ask

VARIANTS = ("cpu", "cuda")
ENGINES = ("docker", "podman", "buildah")
ENGINE_ENV = "RLCRATE_ENGINE"
LABEL_VARIANT = "io.rlcrate.variant"
LABEL_LOCK = "io.rlcrate.lock.sha256"
LABEL_MIN_DRIVER = "io.rlcrate.cuda.min-driver"
LABEL_DIGEST = "io.rlcrate.image.digest"  # a .sif's: the image it was exported from
LABEL_REF = "io.rlcrate.image.ref"
# The hash of the lock each variant's image is built from, as this rlcrate pins it (images/
# <variant>/requirements.lock): images/lock.sh writes it here and in versions.toml, which
# tests/images/test_dockerfiles.py compares. An image file from elsewhere (a .sif) is checked
# against it.
PINNED_LOCK = {
    "cpu": "7adf115a409b68fba13ab515c1b344e42443c8eaf1ca669b177cc18e7a249131",
    "cuda": "2719ecb20eb940b53efa38d3a00cd76de4f33b3f632f043583802be3fef31b6b",
}
ENTRYPOINT = ["/usr/bin/tini", "--", "/usr/local/bin/rlcrate-entrypoint"]
IN_DIR, OUT_DIR = "/in", "/out"


@dataclass
class ImageInfo:
    ref: str
    id: str
    digest: str | None = None
    size: int | None = None
    labels: dict[str, str] = field(default_factory=dict)


def default_tag(variant: str) -> str:
    return f"rlcrate-{variant}:{__version__}"


def resolve_target(target: str) -> tuple[str, str]:
    """`cpu`, `cuda` or a full tag `rlcrate-<variant>:<version>` -> (variant, tag)."""
    if target in VARIANTS:
        return target, default_tag(target)
    name = target.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0]
    variant = name.removeprefix("rlcrate-")
    if variant not in VARIANTS or name == variant:
        raise UserInputError(
            f"unknown image {target!r}; expected cpu, cuda or a tag "
            f"rlcrate-cpu:<version> / rlcrate-cuda:<version>"
        )
    return variant, target


def image_ref(image: str) -> tuple[str, str]:
    """`--image`'s value -> (variant, reference): cpu and cuda name this version's tags; any
    other reference (a tag, REPO@sha256:...) is taken as it is, with no variant."""
    return resolve_target(image) if image in VARIANTS else ("", image)


def detect_engine(engine: str | None = None) -> str:
    """The engine asked for (argument, else $RLCRATE_ENGINE), else the first that answers."""
    wanted = engine or os.environ.get(ENGINE_ENV)
    if wanted:
        if wanted not in ENGINES:
            raise UserInputError(
                f"unknown container engine {wanted!r}; expected one of {', '.join(ENGINES)}"
            )
        if shutil.which(wanted) is None:
            raise UserInputError(f"container engine {wanted!r} is not installed on this machine")
        from runner.checks.installed import engine_problem

        # docker's daemon answers; podman answers, yet may not start a container (as here)
        problem = engine_problem(wanted)
        if problem:
            raise UserInputError(f"container engine {wanted}: {problem}")
        return wanted
    from runner.checks.installed import engine_problem

    problems = {name: engine_problem(name) for name in ENGINES if shutil.which(name)}
    for name, problem in problems.items():
        if problem is None:  # the first engine that answers, not merely the first installed
            return name
    if problems:
        found = "; ".join(f"{name}: {why}" for name, why in problems.items())
        raise UserInputError(f"no container engine works here ({found})")
    raise UserInputError("no container engine found; install docker, podman or buildah")


def _json(cmd: list[str], *, lines: bool = False) -> Any:
    """An engine's JSON answer (one document, or one per line), or None when it says no."""
    from runner.checks.installed import engine_timeout

    try:
        out = ask(cmd, engine_timeout())
    except subprocess.TimeoutExpired:
        raise RunnerError(
            f"{cmd[0]} did not answer `{' '.join(cmd[1:3])}` within {engine_timeout():g} s "
            "(RLCRATE_ENGINE_TIMEOUT); it was stopped"
        ) from None
    except OSError as exc:
        raise RunnerError(f"{cmd[0]} could not be started: {exc.strerror or exc}") from None
    if out.returncode != 0:
        if re.search(r"no such|not known|not found|unable to find", out.stderr, re.IGNORECASE):
            return None
        first = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[0]
        raise RunnerError(f"{cmd[0]} failed: {first}")
    try:
        if lines:
            return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        return json.loads(out.stdout or "null")
    except ValueError:
        raise RunnerError(
            f"{cmd[0]} answered `{' '.join(cmd[1:3])}` with something other than JSON"
        ) from None


def inspect(engine: str, ref: str) -> ImageInfo | None:
    """Labels, id and digest of a local image, or None when the engine does not have it."""
    if engine == "buildah":
        data = _json(["buildah", "inspect", "--type", "image", ref])
        if not isinstance(data, dict):
            return None
        config = (data.get("Docker") or {}).get("config") or data.get("OCIv1", {}).get("config")
        # The id (its config's digest) names the content; buildah's FromImageDigest is that of
        # the manifest it last wrote for the image, which changes when an identical image is
        # committed again (a reproducible rebuild under another tag)
        image_id = data.get("FromImageID") or ""
        image_id = f"sha256:{image_id}" if image_id and ":" not in image_id else image_id
        return ImageInfo(ref, image_id, None, None, dict((config or {}).get("Labels") or {}))
    data = _json([engine, "image", "inspect", ref])
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    item = data[0]
    labels = item.get("Labels") or (item.get("Config") or {}).get("Labels") or {}
    repo_digests = item.get("RepoDigests") or []
    digest = item.get("Digest") or (repo_digests[0].partition("@")[2] if repo_digests else None)
    return ImageInfo(ref, item.get("Id", ""), digest, item.get("Size"), dict(labels))


def list_images(engine: str | None = None) -> list[ImageInfo]:
    """Local images named rlcrate-<variant>, with their labels."""
    engine = detect_engine(engine)
    if engine == "docker":
        rows = _rows(_json(["docker", "images", "--format", "{{json .}}"], lines=True))
        refs = [f"{r.get('Repository')}:{r.get('Tag')}" for r in rows]
    else:
        rows = _rows(
            _json(
                [engine, "images", "--json"]
                if engine == "buildah"
                else [engine, "images", "--format", "json"]
            )
        )
        refs = [n for r in rows for n in (r.get("names") or r.get("Names") or [])]
        refs = [n for n in refs if isinstance(n, str)]
    # buildah's inspect has no size; its listing has one, as text ("3.05 GB")
    sizes = {n: _size(r.get("size")) for r in rows for n in (r.get("names") or []) if r.get("size")}
    wanted = [r for r in refs if r.rsplit("/", 1)[-1].startswith(("rlcrate-cpu:", "rlcrate-cuda:"))]
    found = [info for ref in sorted(set(wanted)) if (info := inspect(engine, ref))]
    return [replace(i, size=i.size or sizes.get(i.ref)) for i in found]


def _rows(data: Any) -> list[dict[str, Any]]:
    """An engine's listing: its objects (anything else in it is not an image)."""
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def _size(text: object) -> int | None:
    """Bytes from an engine's human-readable size ("3.05 GB", decimal units), None if unreadable."""
    if isinstance(text, int | float):
        return int(text)
    number, _, unit = str(text).strip().partition(" ")
    try:
        return int(float(number) * UNITS[unit.strip()])
    except (ValueError, KeyError):
        return None
