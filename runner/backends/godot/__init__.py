"""Godot backend: godot-rl games in headless Godot processes, each running N env instances.

`env.id` is a bundled game (`ballchase`, a Godot 4 project), a Godot project folder (run with the
engine of its version, `engine.godot_binary`, via `--path`) or an exported game binary (its own
engine, launched as godot-rl launches one). `parallel.workers` processes x instances per process
= `parallel.envs`: a bundled game makes as many arenas as it is told (`--instances`), a project
or an exported game runs the agents its scene holds. `env.kwargs` become `--key=value` launch
arguments.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr

from runner.backends.abilities import StepParts, StepSplit, Video
from runner.backends.base import Backend, RepeatsActions, Traits, unknown_id
from runner.backends.godot import binary, engine
from runner.backends.godot.engine import GODOT_ENV_VAR, godot_binary  # noqa: F401 - the package's API
from runner.errors import BackendUnavailable, FieldError, FieldProblem, UserInputError, first_error
from runner.manifest.schema import ParallelSpec

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

GAMES_DIR = Path(__file__).resolve().parents[2] / "games"  # runner/games
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
    # eval.video: the engine draws under a virtual display (`Godot.video_env`), in a window of
    # `_window` (None: the game's own); no manifest field, so resolved.yaml never records it
    _frames: bool = PrivateAttr(False)
    _window: tuple[int, int] | None = PrivateAttr(None)


def bundled_games() -> list[str]:
    return sorted(p.parent.name for p in GAMES_DIR.glob("*/project.godot"))


def _available() -> str | None:
    """godot-rl's client is what every godot env needs; an engine only for projects (their own
    line, `_engine_problem`): an exported game is its own engine."""
    if importlib.util.find_spec("godot_rl") is None:
        return "godot-rl is not installed (pip install 'rlcrate[godot]')"
    return None


def engine_problem(major: int = 4) -> str | None:
    """None when a Godot `major` engine runs here, else why not."""
    try:
        engine.godot_binary(major)
    except BackendUnavailable as exc:
        return str(exc)
    return None


def _target(env: GodotEnv) -> tuple[str, Path]:
    """('game' | 'project' | 'binary', path), or FieldError saying what is wrong."""
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
        why = binary.problem(path)
        if why:
            raise FieldError(("env", "id"), f"'{env.id}' {why}")
        return "binary", path.resolve()
    if "/" in env.id or path.suffix:
        raise FieldError(
            ("env", "id"),
            f"'{env.id}' does not exist: export a game to it with `rlcrate godot export "
            f"PROJECT -o {env.id}` (env.id is a bundled game ({', '.join(bundled_games())}), "
            "a Godot project folder or an exported game binary)",
        )
    raise unknown_id("godot", env.id, bundled_games()).error()


def _major(kind: str, path: Path) -> int | None:
    """The engine version a target runs on: 4 for the bundled games, a project's own, None for
    an exported game (its own engine)."""
    if kind == "binary":
        return None
    return 4 if kind == "game" else engine.project_major(path)


def _engine_problems(env: GodotEnv, kind: str, path: Path) -> list[FieldProblem]:
    major = _major(kind, path)
    why = None if major is None else engine_problem(major)
    if major is None or why is None:
        return []
    why = why.rstrip(".")
    if kind == "game":
        return [FieldProblem(("env", "id"), f"the bundled game {env.id} runs on Godot 4: {why}")]
    convert = {
        3: "or open it in Godot 4's editor, which converts it",
        4: "a Godot 4 project does not run on Godot 3",
    }[major]
    return [
        FieldProblem(
            ("env", "id"),
            f"'{env.id}' is a Godot {major} project (its project.godot says so): {why} ({convert})",
        )
    ]


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
    each process's framebuffer file, when a game of one's own is drawn (eval.video). Only the
    bundled games are told how many arenas to run (`--instances`); a project or an exported game
    runs the agents its scene holds."""
    import numpy as np

    kind, path = _target(env)
    first_error(_engine_problems(env, kind, path))
    head = _head(env, kind, path)
    heads = [_screen_head(env, kind, path, d) for d in screens] if screens else [head] * workers
    paced = env.pacing == "paced"
    pace = [] if paced else ["--fixed-fps", str(UNPACED_FPS)]
    # Independent per-process seed streams; consecutive run seeds never share a stream.
    seeds = np.random.SeedSequence(seed).generate_state(workers)
    extra = [f"--{k}={_kwarg(v)}" for k, v in env.kwargs.items()]
    count = [f"--instances={instances}"] if kind == "game" else []
    return [
        [
            *heads[p],
            *pace,
            f"--env_seed={int(seeds[p]) & 0x7FFFFFFF}",
            f"--speedup={env.speedup if paced else 1:g}",
            f"--action_repeat={env.action_repeat}",
            *count,
            *extra,
        ]
        for p in range(workers)
    ]


def _head(env: GodotEnv, kind: str, path: Path) -> list[str]:
    """The start of a headless process's argv (of a bundled game's drawing one, eval.video)."""
    if kind == "binary":
        # As godot-rl launches exported games: no window, no render loop.
        return [str(path), "--disable-render-loop", "--headless"]
    major = _major(kind, path) or 4
    binary, _ = engine.godot_binary(major)
    if env._frames and kind == "game":
        from runner.backends.godot.frames import drawing_head

        return drawing_head(binary, path)
    return (
        [binary, "--headless", "--path", str(path)] if major == 4 else [binary, "--path", str(path)]
    )


def _screen_head(env: GodotEnv, kind: str, path: Path, fbdir: Path) -> list[str]:
    """A drawing process of a game of one's own, in a window of eval.video's size or else the
    project's own (an exported game's: Godot's default)."""
    from runner.backends.godot.frames import DEFAULT_WINDOW, project_window, screen_head

    window = env._window or (project_window(path) if kind == "project" else DEFAULT_WINDOW)
    major = _major(kind, path)
    binary = engine.godot_binary(major)[0] if major else None
    return screen_head(binary, path, window, fbdir, godot4=major != 3)


class Godot(Backend[GodotEnv], Video[GodotEnv], StepSplit):
    """godot-rl games in headless Godot processes (see the module's docstring)."""

    name = "godot"
    example_id = "ballchase"
    Options = GodotEnv
    TRAITS = Traits(
        module="godot_rl",
        extra="godot",
        program_hint="`make godot4` in the rlcrate checkout, or Godot 4's own release as godot4",
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
            kind, path = _target(env)
        except FieldError as exc:
            return [FieldProblem(exc.path, exc.message)]
        game = _game_problems(env) if kind == "game" else []
        return game + _engine_problems(env, kind, path)

    def smallest_layout(self, env: GodotEnv, parallel: ParallelSpec) -> ParallelSpec:
        """One process: one arena of a bundled game (it makes as many as it is told), a
        project's or an exported game's own agents (its scene holds envs / workers of them)."""
        try:
            kind, _ = _target(env)
        except FieldError:
            kind = "game"
        per_process = (
            1
            if kind == "game" or parallel.envs % parallel.workers
            else parallel.envs // parallel.workers
        )
        return parallel.model_copy(update={"envs": per_process, "workers": 1})

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

    def step_split(self, venv: VecEnv) -> StepParts:
        from runner.backends.godot.profile import GodotSplit

        return GodotSplit(venv.unwrapped)

    def check_video(self, env: GodotEnv) -> list[FieldProblem]:
        from runner.backends.godot.frames import video_problems

        try:
            kind, path = _target(env)
        except FieldError:
            return []  # check_env says what is wrong with env.id
        return video_problems(kind, _major(kind, path))

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
                f"{env.id} drew nothing under Xvfb: a game exported as a dedicated server (Godot "
                "4's Dedicated Server export option, or Godot 3's server template) draws "
                "nothing; export it without that option (`rlcrate godot export` does), or give "
                "its project folder as env.id"
            )
        return f"{env.id} drew nothing under Xvfb: check that its main scene shows the game"

    def doctor_rows(self) -> list[tuple[str, bool, str]]:
        """Whether eval.video can draw Godot games here (an engine with a display, Xvfb)."""
        from runner.backends.godot.frames import video_problems

        found = video_problems("game", 4)
        if found:
            return [("Godot eval.video", False, found[0].message)]
        legacy = "" if video_problems("project", 3) else ", Godot 3 projects"
        return [
            (
                "Godot eval.video",
                True,
                "under xvfb-run: the bundled games, Godot 4 projects, exported games" + legacy,
            )
        ]

    def versions(self) -> dict[str, dict[str, Any]]:
        """The Godot 4 engine (`godot`) and, where one is installed, Godot 3 (`godot3`): path,
        version and the binary's SHA-256."""
        out: dict[str, dict[str, Any]] = {}
        for major, key in ((4, "godot"), (3, "godot3")):
            try:
                path, version = engine.godot_binary(major)
            except BackendUnavailable as exc:
                if major == 4:
                    out[key] = {"error": str(exc)}
                continue
            out[key] = {"path": path, "version": version, "sha256": engine.file_sha256(path)}
        return out

    def make_vec_env(
        self, env: GodotEnv, parallel: ParallelSpec, *, seed: int, log_dir: Path | None
    ) -> VecEnv:
        """`parallel.workers` Godot processes x (envs / workers) instances: arenas of a bundled
        game, or the agents of a game's scene, which must hold that many."""
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
            game=env.id,
        )
