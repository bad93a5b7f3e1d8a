"""Godot backend: godot-rl games in headless Godot processes, each running N env instances.

`env.id` is a bundled game (`ballchase`), a Godot project folder (run with the Godot binary
`godot_binary()` finds, via `--path`) or an exported game binary. `parallel.workers` processes
x instances per process = `parallel.envs`. `env.kwargs` become `--key=value` launch arguments.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from runner.backends.base import Backend, RepeatsActions, Traits, unknown_id
from runner.errors import BackendUnavailable, FieldError, FieldProblem, UserInputError, first_error
from runner.manifest.schema import ParallelSpec

GAMES_DIR = Path(__file__).resolve().parents[2] / "games"  # runner/games
GODOT_ENV_VAR = "RLCRATE_GODOT"
GODOT_NAMES = ("godot3-server", "godot3", "godot-server", "godot")
INSTALL_HINT = (
    f"install Godot 3 headless with `apt-get install godot3-server`, or set {GODOT_ENV_VAR} "
    "to a Godot binary"
)
# Launch arguments the bundled games understand, beyond the ones the backend sets itself.
GAME_KWARGS: dict[str, dict[str, str]] = {
    "ballchase": {
        "action_space": "discrete (9 compass moves, default) or continuous (2D force)",
        "episode_steps": "agent steps per episode (default 500)",
        "fault": "crash:STEP, hang:STEP or noconnect (tests of the supervisor)",
    },
}
UNPACED_FPS = 60


class GodotEnv(RepeatsActions):
    """The godot backend's env options."""

    pacing: Literal["unpaced", "paced"] = Field(
        "unpaced",
        description="'unpaced' runs a fixed timestep as fast as the CPU allows (deterministic); "
        "'paced' runs game time at `speedup` x real time.",
    )
    speedup: float = Field(1.0, gt=0, description="paced: game time / real time.")
    timeout: float = Field(
        60.0, gt=0, description="Seconds to wait for a Godot process to connect or answer a step."
    )
    # eval.video: the full engine draws under a virtual display (`Godot.video_env`), in a window
    # of `_window` (None: the game's own); no manifest field, so resolved.yaml never records it
    _frames: bool = PrivateAttr(False)
    _window: tuple[int, int] | None = PrivateAttr(None)


def bundled_games() -> list[str]:
    return sorted(p.parent.name for p in GAMES_DIR.glob("*/project.godot"))


@functools.cache
def _probe_version(path: str) -> str | None:
    try:
        out = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"\d+\.\d+(\.\d+)?\.\w+", out.stdout)
    return m.group(0) if m else None


def godot_binary() -> tuple[str, str]:
    """(path, version) of the Godot binary used for bundled games and project folders."""
    override = os.environ.get(GODOT_ENV_VAR)
    if override:
        path = shutil.which(override) or override
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BackendUnavailable(
                f"{GODOT_ENV_VAR}={override} is not an executable file; {INSTALL_HINT}"
            )
        version = _probe_version(path)
        if version is None:
            raise BackendUnavailable(
                f"{GODOT_ENV_VAR}={override} did not report a Godot version with --version"
            )
        return path, version
    probed = [(p, _probe_version(p)) for p in filter(None, map(shutil.which, GODOT_NAMES))]
    found = [(p, v) for p, v in probed if v]
    for path, version in found:  # prefer Godot 3: the bundled games are Godot 3 projects
        if version.startswith("3."):
            return path, version
    if found:
        return found[0]
    raise BackendUnavailable(f"No Godot binary found on PATH; {INSTALL_HINT}.")


def _available() -> str | None:
    if importlib.util.find_spec("godot_rl") is None:
        return "godot-rl is not installed (pip install 'rlcrate[godot]')"
    try:
        godot_binary()
    except BackendUnavailable as exc:
        return str(exc)
    return None


def _project_major(project: Path) -> int:
    text = (project / "project.godot").read_text(errors="replace")
    m = re.search(r"^config_version\s*=\s*(\d+)", text, re.MULTILINE)
    return 4 if m and int(m.group(1)) >= 5 else 3


def _target(env: GodotEnv) -> tuple[str, Path]:
    """('game' | 'project' | 'binary', path), or UserInputError saying what is wrong."""
    if env.id in bundled_games():
        return "game", GAMES_DIR / env.id
    path = Path(env.id).expanduser()
    if path.is_dir():
        if not (path / "project.godot").is_file():
            raise FieldError(
                ("env", "id"),
                f"'{env.id}' is a folder without a project.godot; expected a Godot project folder",
            )
        return "project", path.resolve()
    if path.is_file():
        if not os.access(path, os.X_OK):
            raise FieldError(
                ("env", "id"),
                f"'{env.id}' is not executable (chmod +x it, or give the exported game binary)",
            )
        return "binary", path.resolve()
    if "/" in env.id or path.suffix:
        raise FieldError(
            ("env", "id"),
            f"'{env.id}' does not exist (expected a bundled game "
            f"({', '.join(bundled_games())}), a Godot project folder or an "
            "exported game binary)",
        )
    raise unknown_id("godot", env.id, bundled_games()).error()


def _game_problems(env: GodotEnv) -> list[FieldProblem]:
    known = GAME_KWARGS.get(env.id, {})
    out = [
        FieldProblem(
            ("env", "kwargs", key),
            f"'{key}' is not an argument of {env.id}; "
            "known: " + "; ".join(f"{k}: {v}" for k, v in known.items()),
        )
        for key in env.kwargs
        if key not in known
    ]
    if env.kwargs.get("action_space", "discrete") not in ("discrete", "continuous"):
        out.append(
            FieldProblem(
                ("env", "kwargs", "action_space"),
                f"expected 'discrete' or 'continuous', got {env.kwargs['action_space']!r}",
            )
        )
    steps = env.kwargs.get("episode_steps", 500)
    if not isinstance(steps, int) or steps < 1:
        out.append(
            FieldProblem(
                ("env", "kwargs", "episode_steps"), f"expected a positive integer, got {steps!r}"
            )
        )
    return out


def _layout_problem(parallel: ParallelSpec) -> str | None:
    if parallel.envs % parallel.workers:
        return (
            f"the godot backend runs parallel.envs / parallel.workers instances in each "
            f"Godot process; parallel.envs ({parallel.envs}) must be a multiple of "
            f"parallel.workers ({parallel.workers})"
        )
    return None


def _spaces(env: GodotEnv) -> tuple[Any, Any] | None:
    """Known without launching for the bundled game; None for other games."""
    if env.id != "ballchase":
        return None
    import numpy as np
    from gymnasium import spaces as gs

    obs = gs.Box(-1.0, 1.0, shape=(10,), dtype=np.float32)
    if env.kwargs.get("action_space", "discrete") == "continuous":
        return obs, gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    return obs, gs.Discrete(9)


def _kwarg(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def launch_argvs(
    env: GodotEnv, *, workers: int, instances: int, seed: int, screens: list[Path] | None = None
) -> list[list[str]]:
    """The argv of each Godot process (the supervisor appends --port); `screens`: the folder of
    each process's framebuffer file, when a game of one's own is drawn (eval.video)."""
    import numpy as np

    kind, path = _target(env)
    head = _head(env, kind, path)
    heads = [_screen_head(env, kind, path, d) for d in screens] if screens else [head] * workers
    paced = env.pacing == "paced"
    pace = [] if paced else ["--fixed-fps", str(UNPACED_FPS)]
    # Independent per-process seed streams; consecutive run seeds never share a stream.
    seeds = np.random.SeedSequence(seed).generate_state(workers)
    extra = [f"--{k}={_kwarg(v)}" for k, v in env.kwargs.items()]
    return [
        [
            *heads[p],
            *pace,
            f"--env_seed={int(seeds[p]) & 0x7FFFFFFF}",
            f"--speedup={env.speedup if paced else 1:g}",
            f"--action_repeat={env.action_repeat}",
            f"--instances={instances}",
            *extra,
        ]
        for p in range(workers)
    ]


def _head(env: GodotEnv, kind: str, path: Path) -> list[str]:
    """The start of a headless process's argv (of a bundled game's drawing one, eval.video)."""
    if kind == "binary":
        # As godot-rl launches exported games: no window, no render loop.
        return [str(path), "--disable-render-loop", "--headless"]
    binary, version = godot_binary()
    need = 4 if kind == "project" and _project_major(path) == 4 else 3
    if not version.startswith(f"{need}."):
        raise BackendUnavailable(
            f"{env.id} is a Godot {need} project but the Godot binary "
            f"{binary} is version {version}; set {GODOT_ENV_VAR} to a "
            f"Godot {need} binary"
        )
    if env._frames and kind == "game":
        from runner.backends.godot.frames import drawing_head

        return drawing_head(path)
    return [binary, "--path", str(path)]


def _screen_head(env: GodotEnv, kind: str, path: Path, fbdir: Path) -> list[str]:
    """A drawing process of a game of one's own, in a window of eval.video's size or else the
    project's own (an exported game's: Godot's default)."""
    from runner.backends.godot.frames import DEFAULT_WINDOW, project_window, screen_head

    window = env._window or (project_window(path) if kind == "project" else DEFAULT_WINDOW)
    return screen_head(kind, path, window, fbdir)


class Godot(Backend):
    """godot-rl games in headless Godot processes (see the module's docstring)."""

    name = "godot"
    example_id = "ballchase"
    Options = GodotEnv
    TRAITS = Traits(
        module="godot_rl",
        extra="godot",
        program_hint="apt-get install godot3-server",
        ids_are_paths=True,  # a game project folder or an exported binary
        export_layout="godot-rl",  # a policy trained in the game goes back into it
        resume="the games run in Godot processes whose state cannot be saved",
    )

    def available(self) -> str | None:
        return _available()

    def env_ids(self) -> list[str]:
        return bundled_games()

    def check_env(self, env: GodotEnv) -> list[FieldProblem]:
        try:
            kind, _ = _target(env)
        except FieldError as exc:
            return [FieldProblem(exc.path, exc.message)]
        return _game_problems(env) if kind == "game" else []

    def spaces(self, env: GodotEnv) -> tuple[Any, Any] | None:
        return _spaces(env)

    def check_parallel(self, parallel: ParallelSpec) -> list[FieldProblem]:
        problem = _layout_problem(parallel)
        return [FieldProblem(("parallel", "workers"), problem)] if problem else []

    def processes(self, parallel: ParallelSpec) -> int:
        return parallel.workers  # one Godot process per worker

    def nondeterminism(self, env: GodotEnv) -> str | None:
        # bitwise only unpaced: the fixed timestep then does not depend on the wall clock
        return "godot paced: game time follows the wall clock" if env.pacing == "paced" else None

    def env_files(self, env: GodotEnv) -> tuple[str, Path] | None:
        """The bundled game's folder, a project folder or an exported binary."""
        return _target(env)

    def step_split(self, venv: Any) -> Any | None:
        from runner.backends.godot.profile import GodotSplit

        return GodotSplit(venv.unwrapped)

    def check_video(self, env: GodotEnv) -> list[FieldProblem]:
        from runner.backends.godot.frames import video_problems

        try:
            kind, path = _target(env)
        except FieldError:
            return []  # check_env says what is wrong with env.id
        return video_problems(kind, godot4=kind == "project" and _project_major(path) == 4)

    def video_env(self, env: GodotEnv, *, size: tuple[int, int] | None = None) -> GodotEnv:
        """The same game, launched with the full engine under Xvfb: a bundled game answering
        `frame`, a game of one's own in a window of `size` (None: its own) read off the
        screen."""
        self.require_env(env)
        first_error(self.check_video(env))
        drawn = env.model_copy()
        drawn._frames = True
        drawn._window = size
        return drawn

    def video_blank_hint(self, env: GodotEnv) -> str:
        try:
            kind, _ = _target(env)
        except FieldError:
            kind = "game"
        if kind == "binary":
            return (
                f"{env.id} drew nothing under Xvfb: a game exported with a server (headless) "
                "template draws nothing; export it with a desktop template, or give its project "
                "folder as env.id"
            )
        return f"{env.id} drew nothing under Xvfb: check that its main scene shows the game"

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        """Whether eval.video can draw Godot games here (the full engine, Xvfb)."""
        from runner.backends.godot.frames import drawing_binary, video_problems

        found = video_problems("game")
        if found:
            return [("Godot eval.video", False, found[0].message)]
        return [
            (
                "Godot eval.video",
                True,
                f"{drawing_binary()} under xvfb-run: bundled games, Godot 3 projects and "
                "exported games (read off the Xvfb screen); not Godot 4 projects",
            )
        ]

    def versions(self) -> dict[str, dict[str, Any]]:
        try:
            path, version = godot_binary()
        except BackendUnavailable as exc:
            return {"godot": {"error": str(exc)}}
        return {"godot": {"path": path, "version": version}}

    def make_vec_env(
        self, env: GodotEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> Any:
        """`parallel.workers` Godot processes x (envs / workers) instances."""
        self.require_env(env)
        if importlib.util.find_spec("godot_rl") is None:
            raise BackendUnavailable("godot-rl is not installed (pip install 'rlcrate[godot]')")
        problem = _layout_problem(parallel)
        if problem:
            raise UserInputError(problem)
        workers = parallel.workers
        instances = parallel.envs // workers
        from runner.backends.godot.screen import Screen
        from runner.backends.godot.vec_env import GodotVecEnv

        on_screen = env._frames and _target(env)[0] != "game"
        screens = [Screen() for _ in range(workers)] if on_screen else []
        try:
            argvs = launch_argvs(
                env, workers=workers, instances=instances, seed=seed,
                screens=[s.dir for s in screens] or None,
            )  # fmt: skip
        except BaseException:
            for screen in screens:
                screen.close()
            raise
        own = log_dir is None
        logs = Path(tempfile.mkdtemp(prefix="rlcrate-godot-")) if log_dir is None else Path(log_dir)
        return GodotVecEnv(
            argvs,
            instances=instances,
            timeout=env.timeout,
            log_dir=logs,
            own_log_dir=own,
            frames=env._frames,
            screens=screens or None,
        )
