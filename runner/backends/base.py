"""The backend contract, and helpers backends share.

A backend is a module (registered in `runner.backends.BACKENDS`) whose `TRAITS` and functions
match the `Backend` protocol below; mypy checks every registered module against it, and
`tests/test_registry.py` runs the same conformance test over each. A new backend is a new module
with these, its name added to `BackendName` in the manifest schema: nothing else in the runner
names a backend (tests/test_structure.py checks that no module outside the registries compares
one), so everything other modules need to know about a backend is asked of it here.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runner.errors import FieldError

# The GPU environment: Python 3.12 with images/cuda/requirements.lock, the lock Dockerfile.cuda
# installs (`make gpu-env` builds it in the checkout; RLCRATE_GPU_ENV names another folder).
# Isaac Lab's units run in it, and Brax's where the runner's own Python lacks Brax.
GPU_ENV_DEFAULT = Path(__file__).resolve().parents[2] / ".cache" / "gpu-env"


def gpu_env_python() -> Path:
    return Path(os.environ.get("RLCRATE_GPU_ENV") or GPU_ENV_DEFAULT) / "bin" / "python"


GPU_ENV_HINT = "run `make gpu-env` in the rlcrate checkout (it installs the CUDA image's own lock)"

if TYPE_CHECKING:
    from runner.manifest.schema import EnvSpec, ParallelSpec


BITWISE, STATISTICAL = "bitwise", "statistical"


@dataclass(frozen=True)
class Traits:
    """What a backend declares once, read by the modules that used to know it by name."""

    module: str  # the Python module whose presence means it is installed (`checks.installed`)
    extra: str  # the pip extra that installs it: `pip install 'rlcrate[extra]'`
    # The rlcrate images that have it: install hints offer `--image X` only for these.
    images: tuple[str, ...] = ("cpu", "cuda")
    needs_gpu: bool = False  # its units step a GPU simulator: a scheduler gives each a GPU
    # How far results repeat on CPU with one torch thread: `bitwise` (same eval returns) or
    # `statistical` (only the distribution); `nondeterminism()` names exceptions per env.
    determinism: str = BITWISE
    # Its units need Stable-Baselines3, torch and TensorBoard in the runner's own Python too
    # (False: they run in the backend's own environment, which brings its own).
    needs_train_extra: bool = True
    # How to install it, when more than `pip install 'rlcrate[extra]'` (an environment of its
    # own, such as the GPU environment): doctor and the install hints give this advice instead.
    install: str = ""
    # What else to install when `versions()` reports a program missing (doctor's hint).
    program_hint: str = ""
    # A relative env.id may name a file (a game project): relative to the manifest's folder.
    ids_are_paths: bool = False


class Backend(Protocol):
    """Every hook is required; a backend with nothing to say returns the documented default."""

    TRAITS: Traits

    def available(self) -> str | None:
        """None when this machine can run the backend, else a one-line reason (shown by
        `rlcrate doctor` and `rlcrate envs`, and raised when a unit needs it). Cheap: no heavy
        import."""
        ...

    def env_ids(self) -> list[str]:
        """The env ids it offers (may be a representative list, e.g. the bundled Godot games)."""
        ...

    def check_env(self, env: EnvSpec) -> None:
        """Raise FieldError (the field's key path, e.g. ("env", "kwargs", "x"), and one sentence)
        when the env cannot be made; `validate` reports it at that field's line."""
        ...

    def spaces(self, env: EnvSpec) -> tuple[Any, Any] | None:
        """(observation space, action space) as gymnasium spaces, or None when only launching
        the env would tell."""
        ...

    def action_kind(self, env: EnvSpec) -> str | None:
        """The action space's gymnasium class name ('Box', 'Discrete', ...) checked against the
        algorithm; None when unknown without launching. Must stay cheap (validate answers in
        under a second), so backends answer from what they know before asking `spaces`."""
        ...

    def check_parallel(self, parallel: ParallelSpec) -> str | None:
        """Why this backend cannot run `parallel` (envs, workers, mode), or None when it can."""
        ...

    def make_vec_env(
        self, env: EnvSpec, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> Any:
        """A Stable-Baselines3 VecEnv of `parallel.envs` envs, stepped by `parallel.workers`
        workers as this backend understands them; env i is seeded from `seed + i`. `log_dir`
        takes the env processes' own logs (None: a temporary folder, removed on close)."""
        ...

    def versions(self) -> dict[str, dict[str, Any]]:
        """External programs the backend runs, beyond Python packages (provenance records those):
        {component: {"path": ..., "version": ...}}, or {component: {"error": reason}} when one
        is missing. provenance.json records each component under its name; `rlcrate doctor`
        shows it as '<component> binary'. Empty when there are none."""
        ...

    def processes(self, parallel: ParallelSpec) -> int:
        """Env processes one unit starts besides itself (threads excluded; for the resource
        warnings); 0 when every env steps in the unit's own process."""
        ...

    def nondeterminism(self, env: EnvSpec) -> str | None:
        """Why this env does not repeat bitwise although the backend does (e.g. Godot paced:
        game time follows the wall clock), or None."""
        ...

    def env_files(self, env: EnvSpec) -> tuple[str, Path] | None:
        """(kind, path) of the files the env is made from (a game), hashed into archives; None
        when the env comes from an installed package."""
        ...

    def step_split(self, venv: Any) -> Any | None:
        """For `bench.profile`: an object splitting the env step of this VecEnv into parts
        (`seconds`, `calls`, `reported`, `detach()`), or None when the step is one part."""
        ...

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        """`rlcrate doctor`'s rows for what this backend needs beyond its packages (JAX's
        devices, Isaac Sim): (what, ok, detail). Asks the Python its units run in."""
        ...

    def interpreter(self) -> str | None:
        """The Python that runs this backend's units (an executable path), or None for the
        runner's own. A unit talks to the runner only through files, so it may run anywhere
        rlcrate and the backend's packages are installed (e.g. Isaac Lab's Python 3.12)."""
        ...


def unknown_id(backend: str, env_id: str, known: Iterable[str], *, limit: int = 12) -> FieldError:
    known = sorted(set(known), key=lambda i: ("/" in i, i))  # plain ids before namespaced ones
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
    listing = f"{len(known)} known: `rlcrate envs {backend} --all`"
    if close:  # a good suggestion is the answer; a dozen unrelated ids after it only bury it
        hint = f"Did you mean {', '.join(repr(c) for c in close)}? ({listing})"
    elif len(known) > limit:
        hint = f"Known ids: {', '.join(known[:limit])}, ... ({listing})."
    else:
        hint = f"Known ids: {', '.join(known)}."
    return FieldError(("env", "id"), f"'{env_id}' is not an id the {backend} backend knows. {hint}")


# A Python's start: well under a second, even for Isaac Lab's (the probe imports nothing).
# RLCRATE_PROBE_TIMEOUT (seconds) for an interpreter on a filesystem slower than that.
PROBE_S = 10.0


def probe_s() -> float:
    from runner.errors import SettingError

    value = os.environ.get("RLCRATE_PROBE_TIMEOUT")
    if value is None:
        return PROBE_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0.5 <= seconds <= 3600:
        raise SettingError(
            f"RLCRATE_PROBE_TIMEOUT={value!r}: expected seconds between 0.5 and 3600"
        )
    return seconds


_PROBE = "import sys; print('rlcrate-python', *sys.version_info[:2])"


@functools.cache
def python_problem(python: str) -> str | None:
    """None when `python` starts as a Python and answers within `probe_s()`; else what it did, in a
    few words. Asked once per process, before anything waits on that Python for minutes."""
    import signal
    import subprocess

    try:
        proc = subprocess.Popen(
            [python, "-c", _PROBE],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own group: a wrapper script's children end with it
        )
    except OSError as exc:
        return f"cannot be started ({exc.strerror})"
    timeout = probe_s()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"did not answer within {timeout:g} s (hung? RLCRATE_PROBE_TIMEOUT allows more)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if proc.returncode == 0 and "rlcrate-python" in stdout:
        return None
    tail = (stderr.strip() or stdout.strip()).splitlines()[-1:] or ["no output"]
    return f"is not a working Python (exit status {proc.returncode}: {tail[0][:160]})"
