"""The backend contract, and helpers backends share.

A backend is a class derived from `Backend` below: its `Options` (the `env` fields it owns, a
pydantic model), its `TRAITS`, and the hooks the runner asks. Every hook has a working default but
the four that make a backend (`available`, `env_ids`, `check_env`, `make_vec_env`): a class that
lacks one of those cannot be instantiated. A backend is found by name through the entry-point group
`rlcrate.backends` (`runner.plugins`), rlcrate's own included: a new backend is one module and its
entry point, and nothing else in the runner names it (tests/project/test_structure.py checks that no
module outside `backends/` compares a backend's name), so everything other modules need to know
about a backend is asked of it here.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import Field

from runner.backends.interfaces import BATCHED_TORCH_ENV as BATCHED_TORCH_ENV
from runner.backends.interfaces import FUNCTIONAL_JAX_ENV as FUNCTIONAL_JAX_ENV
from runner.backends.interfaces import GYMNASIUM_ENV as GYMNASIUM_ENV
from runner.backends.interfaces import SB3_VEC_ENV as SB3_VEC_ENV
from runner.backends.interfaces import BatchedTorchEnv as BatchedTorchEnv
from runner.backends.interfaces import JaxEnv as JaxEnv
from runner.errors import BackendUnavailable, FieldProblem, first_error
from runner.manifest.schema import EnvSpec

# The GPU environment: Python 3.12 with images/cuda/requirements.lock, the lock Dockerfile.cuda
# installs (`make gpu-env` builds it in the checkout; RLCRATE_GPU_ENV names another folder).
# Isaac Lab's units run in it, and Brax's where the runner's own Python lacks Brax.
GPU_ENV_DEFAULT = Path(__file__).resolve().parents[2] / ".cache" / "gpu-env"


def gpu_env_python() -> Path:
    return Path(os.environ.get("RLCRATE_GPU_ENV") or GPU_ENV_DEFAULT) / "bin" / "python"


GPU_ENV_HINT = "run `make gpu-env` in the rlcrate checkout (it installs the CUDA image's own lock)"

if TYPE_CHECKING:
    from gymnasium import Space
    from stable_baselines3.common.vec_env import VecEnv

    from runner.manifest.schema import ParallelSpec

E = TypeVar("E", bound=EnvSpec)


class RepeatsActions(EnvSpec):
    """Options of a backend that repeats each agent action for several physics ticks."""

    action_repeat: int = Field(
        1, ge=1, description="Physics ticks per agent action (the action repeats)."
    )


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
    # The ONNX layout `rlcrate export` writes by default for its units' policies: `sb3` (obs ->
    # action) or `godot-rl` (what godot-rl's Godot plugin loads, for a game's own inference).
    export_layout: str = "sb3"
    # Why a stopped unit only resumes approximately, for a backend without the `ExactResume`
    # ability (`abilities.py`: its sub-envs answer `replay`'s two env_methods).
    resume: str = "the backend's env state is not saved with a checkpoint"
    # What recording its evaluation as video (`eval.video`) would need, for the one-line refusal
    # of a backend without the `Video` ability.
    video_needs: str = "a renderer rlcrate can capture frames from"


class Backend(ABC, Generic[E]):
    """A backend: `name`, `Options` (the env fields it owns) and `TRAITS` as class attributes,
    the hooks as methods, each typed against its own `Options` (`E`). The four abstract ones
    make a backend; every other hook here has a working default, documented where it is, which a
    backend overrides only when it has more to say. What it can do beyond them (record videos,
    rl-zoo3's or a task's tuned defaults, a split env step for the bench profile, an exact
    resume) it declares by deriving from the abilities in `abilities.py`."""

    name: ClassVar[str]
    Options: ClassVar[type[EnvSpec]]
    TRAITS: ClassVar[Traits]
    # The env interfaces `make_env` makes (`interfaces`); SB3's VecEnv is every backend's.
    interfaces: ClassVar[tuple[str, ...]] = (SB3_VEC_ENV,)
    # A cheap env id for the conformance checks (`rlcrate plugin check`); None: its first id.
    example_id: ClassVar[str | None] = None

    @abstractmethod
    def available(self) -> str | None:
        """None when this machine can run the backend, else a one-line reason (shown by
        `rlcrate doctor` and `rlcrate envs`, and raised when a unit needs it). Cheap: no heavy
        import."""

    @abstractmethod
    def env_ids(self) -> list[str]:
        """The env ids it offers (may be a representative list, e.g. the bundled Godot games)."""

    def id_notes(self) -> dict[str, str]:
        """Ids `env_ids` lists that cannot be made here as installed, each with a few words on
        why (`rlcrate envs` marks them; `check_env` refuses them in a sentence). Cheap. Default:
        none."""
        return {}

    @abstractmethod
    def check_env(self, env: E) -> list[FieldProblem]:
        """Every problem with the env (its options model, `Options`): each at its field's key
        path (e.g. ("env", "kwargs", "x")) with one sentence; `validate` reports each at that
        field's line. Empty when the env can be made."""

    @abstractmethod
    def make_vec_env(
        self, env: E, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        """A Stable-Baselines3 VecEnv of `parallel.envs` envs, stepped by `parallel.workers`
        workers as this backend understands them; env i is seeded from `seed + i`. `log_dir`
        takes the env processes' own logs (None: a temporary folder, removed on close)."""

    def make_env(
        self,
        env: E,
        parallel: ParallelSpec,
        *,
        interface: str,
        seed: int,
        log_dir: Path | None = None,
    ) -> Any:
        """The env as `interface` (one of `interfaces`) has it, for a trainer whose loop steps
        that interface (`interfaces`: a `JaxEnv`, a `BatchedTorchEnv`, one Gymnasium env).
        Default: SB3's VecEnv (`make_vec_env`); a backend that offers more overrides this for
        those."""
        if interface != SB3_VEC_ENV:
            raise BackendUnavailable(
                f"the {self.name} backend offers the env interfaces {', '.join(self.interfaces)}, "
                f"not {interface}"
            )
        return self.make_vec_env(env, parallel, seed=seed, log_dir=log_dir)

    def package_file(self, relative: str) -> Path | None:
        """A file of the package that makes this backend's envs, found without importing it (a
        trainer reads its loop's signature there). Default None: none to read."""
        return None

    def require_env(self, env: E) -> None:
        """`check_env`'s first problem raised (FieldError), for the hooks that make an env."""
        first_error(self.check_env(env))

    def spaces(self, env: E) -> tuple[Space[Any], Space[Any]] | None:
        """(observation space, action space) as gymnasium spaces, or None (the default) when
        only launching the env would tell."""
        return None

    def action_kind(self, env: E) -> str | None:
        """The action space's gymnasium class name ('Box', 'Discrete', ...) checked against the
        algorithm; None when unknown without launching. Must stay cheap (validate answers in
        under a second). Default: the class of `spaces`' action space."""
        known = self.spaces(env)
        return type(known[1]).__name__ if known else None

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        """Every reason this backend cannot run `parallel` (envs, workers), each at its field.
        Default: any layout (`parallel.mode` is checked against `Options.parallel_modes` by the
        schema)."""
        return []

    def smallest_layout(self, env: E, parallel: ParallelSpec) -> ParallelSpec:
        """The smallest `parallel` that builds this env as the manifest's `parallel` runs it, for
        the jobs that need one env's worth (the dry construction, evaluation, export): one env
        in one worker by default; a game whose every process holds a fixed number of agents
        (Godot's exported games) says that number."""
        return parallel.model_copy(update={"envs": 1, "workers": 1})

    def versions(self) -> dict[str, dict[str, Any]]:
        """External programs the backend runs, beyond Python packages (provenance records those):
        {component: {"path": ..., "version": ...}}, or {component: {"error": reason}} when one
        is missing. provenance.json records each component under its name; `rlcrate doctor`
        shows it as '<component> binary'. Default: none."""
        return {}

    def processes(self, parallel: ParallelSpec) -> int:
        """Env processes one unit starts besides itself (threads excluded; for the resource
        warnings). Default 0: every env steps in the unit's own process."""
        return 0

    def nondeterminism(self, env: E) -> str | None:
        """Why this env does not repeat bitwise although the backend does (e.g. Godot paced:
        game time follows the wall clock). Default None."""
        return None

    def env_files(self, env: E) -> tuple[str, Path] | None:
        """(kind, path) of the files the env is made from (a game), hashed into archives.
        Default None: the env comes from an installed package."""
        return None

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        """`rlcrate doctor`'s rows for what this backend needs beyond its packages (JAX's
        devices, Isaac Sim): (what, ok, detail). Default: none."""
        return []

    def episode_limit(self, env: E) -> int | None:
        """The steps after which `env` ends an episode on its own (a time limit), or None (the
        default) when it has none or cannot say: an evaluation then cuts its episodes at
        `eval.max_episode_steps` (else rlcrate's default), so that no evaluation runs forever."""
        return None

    def interpreter(self) -> str | None:
        """The Python that runs this backend's units (an executable path). Default None: the
        runner's own. A unit talks to the runner only through files, so it may run anywhere
        rlcrate and the backend's packages are installed (e.g. Isaac Lab's Python 3.12)."""
        return None


def no_video(backend: Backend[Any]) -> list[FieldProblem]:
    """The one-line refusal of `eval.video` on `backend`, naming `TRAITS.video_needs`."""
    return [
        FieldProblem(
            ("eval", "video"),
            f"the {backend.name} backend cannot record evaluation videos here: it needs "
            f"{backend.TRAITS.video_needs}; remove eval.video",
        )
    ]


def video_problems(backend: Backend[Any], env: EnvSpec) -> list[FieldProblem]:
    """Why `env`'s evaluation cannot be recorded on `backend`: its `Video` ability's answer, or
    the refusal of a backend without it (`no_video`)."""
    from runner.backends.abilities import Video

    return backend.check_video(env) if isinstance(backend, Video) else no_video(backend)


def resume_approximate(backend: Backend[Any], env: EnvSpec | None) -> str | None:
    """Why a unit of `env` on `backend`, stopped and resumed, does not end bit-identical to one
    run without a stop (its envs restart their episodes on resume): a backend without the
    `ExactResume` ability says why in `TRAITS.resume`; one with it may name an exception per env.
    None: the envs resume exactly."""
    from runner.backends.abilities import ExactResume

    if not isinstance(backend, ExactResume):
        return backend.TRAITS.resume or "its envs' state is not saved with a checkpoint"
    return backend.resume_approximate(env) if env is not None else None


def unknown_id(backend: str, env_id: str, known: Iterable[str], *, limit: int = 12) -> FieldProblem:
    known = sorted(set(known), key=lambda i: ("/" in i, i))  # plain ids before namespaced ones
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
    listing = f"{len(known)} known: `rlcrate envs {backend} --all`"
    if close:  # a good suggestion is the answer; a dozen unrelated ids after it only bury it
        hint = f"Did you mean {', '.join(repr(c) for c in close)}? ({listing})"
    elif len(known) > limit:
        hint = f"Known ids: {', '.join(known[:limit])}, ... ({listing})."
    else:
        hint = f"Known ids: {', '.join(known)}."
    return FieldProblem(
        ("env", "id"), f"'{env_id}' is not an id the {backend} backend knows. {hint}"
    )


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
