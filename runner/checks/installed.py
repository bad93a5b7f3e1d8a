"""Installed versus usable: what this Python environment has, and what this machine can run.

A light install (`pip install rlcrate`, no extras) drives images and reads manifests; training
needs the `train` extra and a backend's own packages. A container engine counts only when it
answers (docker without a daemon is installed, not usable). Nothing heavy is imported here.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import time

from runner.backends import get_backend, python_env_var
from runner.errors import SettingError
from runner.record.command import ask

TRAIN_MODULES = ("stable_baselines3", "torch", "tensorboard")
# engine -> a command that succeeds only when the engine can actually run containers here
ENGINE_PROBES = {
    "docker": ["docker", "version", "--format", "{{.Server.Version}}"],
    "podman": ["podman", "info", "--format", "{{.Version.Version}} {{.Host.OCIRuntime.Name}}"],
    "buildah": ["buildah", "version"],
}
# podman answers `info` where its OCI runtime cannot start any container (a sandbox that forbids
# raising RLIMIT_NOFILE: crun exits 126). So it counts only after starting one: /bin/true on the
# host's own root file system, read-only, so no image is needed.
CONTAINER_PROBES = {
    "podman": [
        "podman",
        "run",
        "--rm",
        "--read-only",
        "--network",
        "none",
        "--rootfs",
        "/",
        "/bin/true",
    ],
}


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def own_interpreter(backend: str) -> bool:
    """Units of this backend run under another Python (RLCRATE_PYTHON_<NAME>, or the backend's
    own interpreter), whose packages are not this environment's business."""
    return bool(os.environ.get(python_env_var(backend)) or get_backend(backend).interpreter())


def missing_packages(backend: str) -> list[str]:
    """Python modules a local run of this backend needs that are not installed here."""
    if own_interpreter(backend):
        return []
    traits = get_backend(backend).TRAITS
    needed = (traits.module, *(TRAIN_MODULES if traits.needs_train_extra else ()))
    return [m for m in needed if not has_module(m)]


def install_hint(backend: str) -> str:
    traits = get_backend(backend).TRAITS
    return traits.install or f"pip install 'rlcrate[{traits.extra}]'"


def image_hint(backend: str) -> str:
    """`, or run in an image (--image X)` for the first rlcrate image that has the backend; empty
    when none has it."""
    images = get_backend(backend).TRAITS.images
    return f", or run in an image (--image {images[0]})" if images else ""


# How long a container engine may take to answer a question (its version, a container probe,
# its images): RLCRATE_ENGINE_TIMEOUT (seconds). A hung engine is killed after, with every
# process it started (`record.command`).
ENGINE_TIMEOUT_S = 60.0


def engine_timeout() -> float:
    value = os.environ.get("RLCRATE_ENGINE_TIMEOUT")
    if value is None:
        return ENGINE_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0.5 <= seconds <= 3600:
        raise SettingError(
            f"RLCRATE_ENGINE_TIMEOUT={value!r}: expected seconds between 0.5 and 3600"
        )
    return seconds


def engine_problem(engine: str, timeout: float | None = None) -> str | None:
    """None when `engine` is installed and answers (and starts a container, where answering
    does not prove it can); else why not, in a few words. Probes afresh: for what is about to
    use the engine."""
    return engine_probe(engine, timeout)[0]


PROBES_FILE = "engine-probes.json"  # in rlcrate's cache: what each container probe found


def engine_probe(
    engine: str, timeout: float | None = None, *, fresh: bool = True
) -> tuple[str | None, float | None]:
    """(`engine_problem`, None) when probed now; with `fresh=False`, a container probe made
    before for the same engine binary (path, modification time) giving the same answer (its
    version) is reused: (what it found, when it was made)."""
    path = shutil.which(engine)
    if path is None:
        return "not installed", None
    timeout = engine_timeout() if timeout is None else timeout
    try:
        out = ask(ENGINE_PROBES[engine], timeout)
    except subprocess.TimeoutExpired:
        return f"`{' '.join(ENGINE_PROBES[engine][:2])}` did not answer", None
    except OSError as exc:
        return f"cannot be started ({exc.strerror})", None
    if out.returncode != 0:
        what = "no daemon answers" if engine == "docker" else "it does not work here"
        return f"{what}: {last_line(out)}", None
    if engine not in CONTAINER_PROBES:
        return None, None
    answer: list[object] = [path, _mtime(path), out.stdout.strip()]
    seen = None if fresh else _probes().get(engine)
    if isinstance(seen, dict) and _valid_probe(seen) and seen["answer"] == answer:
        return seen["problem"], seen["probed"]
    problem = container_problem(engine, timeout)
    _remember_probe(engine, answer, problem)
    return problem, None


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _probes() -> dict[str, object]:
    from runner.record.cache import cache_dir

    try:
        data = json.loads((cache_dir() / PROBES_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _valid_probe(seen: object) -> bool:
    return (
        isinstance(seen, dict)
        and isinstance(seen.get("answer"), list)
        and isinstance(seen.get("problem"), str | None)
        and isinstance(seen.get("probed"), int | float)
    )


def _remember_probe(engine: str, answer: list[object], problem: str | None) -> None:
    """Record a probe; an unwritable cache only means probing again next time."""
    from runner.record.cache import cache_dir

    path = cache_dir() / PROBES_FILE
    probes = {**_probes(), engine: {"answer": answer, "problem": problem, "probed": time.time()}}
    from runner.record.rundir import write_text_atomic

    with contextlib.suppress(OSError):
        write_text_atomic(path, json.dumps(probes), durable=False)


def last_line(out: subprocess.CompletedProcess[str]) -> str:
    """The last line a command printed (stderr first), for a one-line error."""
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[-1][:160] if lines else f"exit status {out.returncode}"


@functools.cache
def container_problem(engine: str, timeout: float) -> str | None:
    """Why `engine` cannot start a container here (its probe run), or None."""
    probe = CONTAINER_PROBES.get(engine)
    if probe is None:
        return None
    try:
        out = ask(probe, timeout)
    except subprocess.TimeoutExpired:
        return f"starting a container did not finish in {timeout:.0f} s"
    except OSError as exc:
        return f"cannot be started ({exc.strerror})"
    if out.returncode != 0:
        return f"it cannot start a container here: {last_line(out)}"
    return None


def usable_engines() -> list[str]:
    return [e for e in ENGINE_PROBES if engine_problem(e) is None]


def not_checked_here(backends: set[str]) -> str | None:
    """A note for `validate` when the packages that check env ids and algorithms are missing here
    (a light install that runs its units in an image); None when everything was checked."""
    missing = sorted({m for b in backends for m in missing_packages(b)})
    if not missing:
        return None
    return (
        f"env ids and algorithm arguments were not checked: {', '.join(missing)} not installed "
        "here (they are checked where the units run: in the image, or after installing the "
        "backend's extra)"
    )


def local_run_problem(backends: set[str]) -> str | None:
    """Why the units cannot run in this Python environment, or None."""
    from runner.backends import get_backend

    for backend in sorted(backends):
        missing = missing_packages(backend)
        if missing:
            reason = get_backend(backend).available()
            if reason:  # the backend's own advice: its extra, or the environment its units run in
                return f"the {backend} backend cannot run here: {reason}{image_hint(backend)}"
            return (
                f"the {backend} backend needs {', '.join(missing)}, not installed here: "
                f"{install_hint(backend)}{image_hint(backend)}"
            )
    return None
