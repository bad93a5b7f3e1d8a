"""The manifest, format version 1, as pydantic models.

Every model forbids unknown keys; every field carries its description so the JSON Schema that
`rlcrate schema` prints gives editors completion and hover help.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from runner.manifest.algo import AlgoSpec as AlgoSpec
from runner.manifest.algo import algo_models, default_algo, validate_algo
from runner.manifest.options import Strict as Strict
from runner.manifest.options import custom as _custom
from runner.manifest.options import key_problem, refuse, validate_options
from runner.manifest.tune import TuneSpec

MAX_SEEDS = 10_000  # seeds in one run (a paper uses tens); more is a typo that would fill memory
MAX_SEED = 2**32 - 1  # the largest master seed: NumPy's and Gymnasium's seeds are 32-bit


class EnvSpec(Strict):
    """The part of `env` every backend shares. Each backend adds the options it owns in a model
    of its own (a subclass, the backend's `Options`), and a manifest's `env` is validated against
    the one its `backend` names (`Manifest._backend_options`): a field of another backend is an
    error there, and resolved.yaml records only the chosen backend's options."""

    backend: str = Field(
        min_length=1,
        description="Which backend makes the environments: godot, envpool, gymnasium, isaaclab, "
        "brax, or one an installed package adds (entry point rlcrate.backends; `rlcrate envs` "
        "lists them).",
    )
    id: str = Field(
        min_length=1,
        description="Env id: a Gymnasium/EnvPool id, a bundled Godot game name, a Godot project "
        "folder or an exported game binary, or a task id.",
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Passed through to the backend's env constructor."
    )
    # The `parallel.mode` values this backend's envs step in, its default first; () for none.
    parallel_modes: ClassVar[tuple[str, ...]] = ()


def env_model(backend: str) -> type[EnvSpec] | None:
    """The options model of the backend `backend` (found by entry point, `runner.plugins`), or
    None when no backend has that name."""
    from runner import plugins

    plugin = plugins.find("backend", backend)
    if plugin is None:
        return None
    loaded = plugins.load("backend", plugin)
    options = getattr(loaded, "Options", None) if isinstance(loaded, type) else None
    if not (isinstance(options, type) and issubclass(options, EnvSpec)):
        raise plugins.not_a("backend", plugin, "runner.backends.base.Backend (with its Options)")
    return options


def env_models() -> dict[str, type[EnvSpec]]:
    """Every installed backend's options model, by name (imports every backend's module). A
    backend that cannot be imported is left out and noted (`plugins.left_out`): it must not hide
    the problems of a manifest that does not use it, which these models help to name."""
    from runner import plugins
    from runner.errors import SettingError, UserInputError

    out = {}
    for name in plugins.names("backend"):
        try:
            model = env_model(name)
        except SettingError:
            raise
        except UserInputError as exc:  # its package is broken: one line beside the problems
            plugins.leave_out(str(exc))
            continue
        if model is not None:
            out[name] = model
    return out


def fields_of(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by name; for the env, every installed backend's options together, and
    for the algo every trainer's (a path such as `env.pacing` or `algo.normalize` names a field
    when some backend or trainer has it)."""
    merged: dict[str, Any] = dict(model.model_fields)
    plugins: list[type[BaseModel]] = []
    if model is EnvSpec:
        plugins += env_models().values()
    elif model is AlgoSpec:
        plugins += algo_models().values()
    for options in plugins:
        merged.update(options.model_fields)
    return merged


def validate_env(value: Any) -> EnvSpec:
    """`value` (the env mapping) as the options model its `backend` names: every problem at
    once, a field of another backend named as such (ValidationError)."""
    if isinstance(value, EnvSpec):
        return value
    backend = value.get("backend") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(backend, str) or not backend:
        return EnvSpec.model_validate(value)  # the base model says what is missing or wrong
    from runner import plugins
    from runner.errors import UserInputError

    try:
        model = env_model(backend)
    except UserInputError as exc:  # its package is broken: at env.backend's line
        raise refuse("EnvSpec", ("backend",), str(exc), backend) from None
    if model is None:  # the installed packages are read for the sentence only now
        raise refuse("EnvSpec", ("backend",), plugins.unknown("backend", backend), backend)

    def unknown(key: str) -> str:
        return key_problem(key, backend, "backend", model, env_models())

    return validate_options(model, value, unknown, "EnvSpec")


# Upper bounds that no real run reaches and that stop a typo (an extra zero, 1e26) from starting
# work that never ends: GPU simulators step up to ~16k envs; the longest published runs train
# ~1e10 steps.
MAX_ENVS = 65_536
MAX_TIMESTEPS = 10**12


class ParallelSpec(Strict):
    envs: int = Field(
        1,
        ge=1,
        le=MAX_ENVS,
        description="Environments stepped in lockstep (the vector size).",
    )
    workers: int = Field(
        1,
        ge=1,
        description="OS processes or threads stepping them (godot: Godot processes; "
        "gymnasium subproc: worker processes; envpool: threads).",
    )
    mode: str | None = Field(
        None,
        min_length=1,
        description="How the backend steps its envs, where it offers a choice: gymnasium's dummy "
        "(DummyVecEnv, in-process; its default) or subproc (SubprocVecEnv). The other backends "
        "have no modes: leave it unset.",
    )
    units: int = Field(
        0,
        ge=0,
        description="Units (variant, seed) run at once by the local executor; 0 = as many as "
        "the CPU count allows.",
    )

    @model_validator(mode="after")
    def _workers_fit(self) -> ParallelSpec:
        if self.workers > self.envs:
            raise ValueError(
                f"workers ({self.workers}) cannot exceed envs ({self.envs}); "
                "each worker steps at least one env"
            )
        return self


class InitFrom(Strict):
    """A warm start: the unit starts from the policy (and normalization statistics) of a
    finished unit of another run, on this or another backend, when the spaces agree."""

    run: str = Field(
        min_length=1,
        description="A finished run directory (runs/NAME/RUN-ID), or a folder of runs "
        "(runs/NAME): its newest run whose parent units are done. Relative: to the manifest's "
        "folder when it is there, else to the working directory.",
    )
    variant: str | None = Field(
        None, description="The parent run's variant; may be left out when it has one."
    )
    seed: int | Literal["same"] = Field(
        "same", description="The parent unit's seed; 'same': each unit takes its own seed's."
    )

    @field_validator("seed")
    @classmethod
    def _non_negative(cls, seed: int | str) -> int | str:
        if isinstance(seed, int) and seed < 0:
            raise ValueError("expected a non-negative seed or 'same'")
        return seed


class TrainSpec(Strict):
    timesteps: int = Field(
        100_000,
        ge=0,
        le=MAX_TIMESTEPS,
        description="Total environment steps to train for (0 with `init_from`: the parent's "
        "policy evaluated as it is, a zero-shot transfer test).",
    )
    checkpoint_every: int = Field(
        0, ge=0, description="Save a checkpoint every N steps (0: only the final model)."
    )
    keep_checkpoints: int = Field(
        3,
        ge=1,
        description="How many of the newest checkpoints a unit keeps; older ones are removed "
        "as new ones are saved, so a long run does not fill the disk.",
    )
    log_interval: int = Field(1, ge=1, description="Log to TensorBoard every N rollouts.")
    init_from: InitFrom | None = Field(
        None,
        description="Warm start from a finished unit of another run: {run, variant, seed}.",
    )

    @model_validator(mode="after")
    def _zero_only_from_a_parent(self) -> TrainSpec:
        if self.timesteps == 0 and self.init_from is None:
            raise ValueError(
                "timesteps: expected a positive number (0 only with init_from, a zero-shot "
                "evaluation of the parent's policy)"
            )
        return self


MAX_VIDEO_SIDE = 4096  # pixels: a frame larger than a 4K screen is a typo


class VideoSpec(Strict):
    """Videos of the evaluation's own first episodes (`eval.video`)."""

    episodes: int = Field(
        1,
        gt=0,
        description="The first N evaluation episodes recorded (at most eval.episodes): the "
        "episodes eval.json scores, not another rollout.",
    )
    fps: int = Field(30, gt=0, le=240, description="Frames per second of the video file.")
    format: Literal["mp4", "gif"] = Field(
        "mp4",
        description="mp4 (H.264 through the ffmpeg imageio-ffmpeg brings; the report shows a "
        "poster frame linking it) or gif (shown inline in the report).",
    )
    size: list[int] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="[width, height] in pixels the frames are scaled to; null: the env's own "
        "frame size (mp4 rounds odd sides down to even).",
    )

    @field_validator("size")
    @classmethod
    def _sane_size(cls, size: list[int] | None) -> list[int] | None:
        if size is not None and not all(2 <= side <= MAX_VIDEO_SIDE for side in size):
            raise ValueError(f"expected [width, height], each from 2 to {MAX_VIDEO_SIDE} pixels")
        return size


DEFAULT_EVAL_EPISODE_STEPS = 100_000  # an evaluation episode's bound where the env has none
MAX_EVAL_EPISODE_STEPS = 10**9


class EvalSpec(Strict):
    episodes: int = Field(20, gt=0, description="Evaluation episodes per unit.")
    deterministic: bool = Field(True, description="Greedy actions during evaluation.")
    reward_levels: list[float] = Field(
        default_factory=list,
        description="Reward levels for the 'time to reach' table (ep_rew_mean during training).",
    )
    every: int = Field(
        0,
        ge=0,
        description="Also evaluate every N training steps, during training (`every_episodes` "
        "deterministic episodes on an env of their own, which training never steps): each "
        "result is logged as eval/mean_reward in TensorBoard and kept in the unit's evals.json, "
        "and is what a study's pruner judges a trial on. 0: only the final evaluation.",
    )
    every_episodes: int = Field(
        5, gt=0, description="Episodes of each evaluation during training (`every`)."
    )
    max_episode_steps: int | None = Field(
        None,
        gt=0,
        le=MAX_EVAL_EPISODE_STEPS,
        description="Steps after which an evaluation episode is cut (truncated), so that no "
        "evaluation runs forever. Null: the env's own time limit, and for an env without one "
        f"(CliffWalking-v1) {DEFAULT_EVAL_EPISODE_STEPS:,}. eval.json records the bound that "
        "applied and how many episodes reached it.",
    )
    video: VideoSpec | None = Field(
        None,
        description="Record the first evaluation episodes of each unit as videos under "
        "the unit's video/ folder, shown in report.md: {episodes, fps, format, size}. Null: "
        "none (`rlcrate eval --video` records them later).",
    )

    @model_validator(mode="after")
    def _video_within_eval(self) -> EvalSpec:
        if self.video is not None and self.video.episodes > self.episodes:
            raise ValueError(
                f"video.episodes ({self.video.episodes}) exceeds episodes ({self.episodes}): "
                "only evaluation episodes are recorded"
            )
        return self


class BenchSpec(Strict):
    steps: int = Field(10_000, gt=0, description="Steps measured per repeat.")
    warmup: int = Field(1_000, ge=0, description="Steps run and discarded before timing.")
    repeats: int = Field(3, gt=0, description="Repeats per sweep point (median/min/max).")
    train: bool = Field(True, description="Also measure training steps/s with the algorithm.")
    inference: bool = Field(
        True,
        description="Also measure env + policy inference steps/s: the policy, built as "
        "training builds it, choosing every action, no update (where the trainer can separate "
        "it: Stable-Baselines3's).",
    )
    cold_start: bool = Field(
        True,
        description="Also measure the cold start: a fresh process of the units' Python, from "
        "its start to the end of its env's first vector step (imports, the env and its "
        "processes made), as a unit starts (one process per point; where the trainer can say "
        "when its first step ends: Stable-Baselines3's).",
    )
    sweep: dict[str, list[Any]] = Field(
        default_factory=dict, description="Dotted manifest path -> values to sweep."
    )
    profile: bool = Field(
        False,
        description="Also profile training at each point: where a training step's time goes "
        "(env step, policy inference, gradient update; Godot: encode, socket wait, engine tick, "
        "decode), with the profile's own overhead.",
    )


def _uri_problem(uri: str) -> str | None:
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if not parts.scheme or len(parts.scheme) < 2:  # a bare path, or a Windows drive letter
        return "expected a URI such as http://host:5000 or sqlite:///path/mlflow.db"
    if parts.scheme == "file":  # MLflow 3 refuses its file store ("maintenance mode")
        return (
            "MLflow 3 no longer writes a file: store; use sqlite:///path/mlflow.db (one file, "
            "no server) or http://host:5000 (`mlflow server`)"
        )
    if parts.scheme in ("http", "https") and not parts.hostname:
        return f"expected a host after {parts.scheme}://"
    if not (parts.netloc or parts.path):
        return "expected a URI such as http://host:5000 or sqlite:///path/mlflow.db"
    return None


class MlflowSpec(Strict):
    """Track each unit as an MLflow run, nested under one parent run per rlcrate run."""

    uri: str | None = Field(
        None,
        description="Tracking URI (http://host:5000, or sqlite:///path/mlflow.db; MLflow 3 "
        "refuses file: stores); unset: MLflow's own MLFLOW_TRACKING_URI (sqlite:///mlflow.db "
        "in the working folder when that is unset too). Credentials only from MLflow's environment "
        "variables (MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_TOKEN ...), never here.",
    )
    experiment: str | None = Field(
        None, min_length=1, description="Experiment name; unset: the manifest's name."
    )
    log_model: bool = Field(False, description="Also upload each unit's model.zip as an artifact.")

    @field_validator("uri")
    @classmethod
    def _a_uri(cls, uri: str | None) -> str | None:
        problem = None if uri is None else _uri_problem(uri)
        if problem:
            raise ValueError(f"{problem} (got {uri!r})")
        return uri


class WandbSpec(Strict):
    """Track each unit as a Weights & Biases run, grouped (`group=`) by the rlcrate run id."""

    project: str | None = Field(
        None, min_length=1, description="W&B project; unset: the manifest's name."
    )
    entity: str | None = Field(
        None, min_length=1, description="W&B entity (user or team); unset: W&B's default."
    )
    mode: Literal["online", "offline"] = Field(
        "online",
        description="online: upload as it goes; offline: write run folders under WANDB_DIR "
        "for `wandb sync`. Credentials only from W&B's own login or WANDB_API_KEY.",
    )
    log_model: bool = Field(False, description="Also log each unit's model.zip as an artifact.")


class TrackSpec(Strict):
    """Experiment tracking (optional extras: rlcrate[track]). Tracking never fails a unit."""

    mlflow: MlflowSpec | None = Field(None, description="Track in MLflow.")
    wandb: WandbSpec | None = Field(None, description="Track in Weights & Biases.")


Comparison = dict[Literal[">=", ">", "<=", "<", "=="], float]


class Manifest(Strict):
    rlcrate: Literal[1] = Field(description="Manifest format version.")
    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        description="Run name; also the folder under the output directory.",
    )
    image: str = Field(
        "local",
        min_length=1,
        description="Where `rlcrate run` runs the units: 'local' (this Python environment), "
        "'cpu' or 'cuda' (the versioned images) or a full image tag; `--image` overrides it.",
    )
    env: SerializeAsAny[EnvSpec] = Field(
        description="The environments: `backend` and `id`, `kwargs`, and the options that "
        "backend owns (godot: pacing, speedup, action_repeat, timeout; gymnasium and envpool: "
        "atari; gymnasium and brax: action_repeat; see each backend's page)."
    )
    parallel: ParallelSpec = Field(default_factory=lambda: ParallelSpec())
    algo: SerializeAsAny[AlgoSpec] = Field(
        default_factory=default_algo,
        description="The algorithm and its training loop: `name`, `trainer`, `params`, and the "
        "options that trainer owns (sb3: policy, normalize, device, torch_threads, defaults; "
        "brax_ppo: device; rsl_rl_ppo: device, torch_threads, defaults; see each trainer's "
        "page).",
    )
    train: TrainSpec = Field(default_factory=lambda: TrainSpec())
    eval: EvalSpec = Field(default_factory=lambda: EvalSpec())
    bench: BenchSpec = Field(default_factory=lambda: BenchSpec())
    seeds: list[int] = Field([0], min_length=1, description="Master seeds; one unit each.")
    matrix: dict[str, list[Any]] | list[dict[str, Any]] = Field(
        default_factory=dict,
        description="Variants: a mapping of dotted path -> values (cross product) or a list "
        "of override mappings.",
    )
    expect: dict[str, Comparison] = Field(
        default_factory=dict,
        description="Claims on summary metrics, e.g. {eval.mean_reward: {'>=': 80}}.",
    )
    track: TrackSpec | None = Field(
        None,
        description="Experiment tracking: each unit a tracked run in MLflow and/or Weights & "
        "Biases, grouped under the rlcrate run.",
    )
    tune: TuneSpec | None = Field(
        None,
        description="An Optuna study for `rlcrate tune`: {space, sampler, pruner, objective: "
        "{metric, stat, direction}, trials, parallel}; every trial runs the manifest's seeds. "
        "Not together with matrix.",
    )
    # dotted path -> where its value came from (`manifest`, `rlcrate default`, `rl-zoo3 ...`,
    # `isaaclab task ...`); set by load_manifest, written to resolved.yaml as `sources`
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("env", mode="wrap")
    @classmethod
    def _backend_options(cls, value: Any, handler: Any) -> EnvSpec:
        return validate_env(value)

    @field_validator("algo", mode="wrap")
    @classmethod
    def _trainer_options(cls, value: Any, handler: Any) -> AlgoSpec:
        return validate_algo(value)

    @field_validator("parallel")
    @classmethod
    def _mode_of_the_backend(cls, parallel: ParallelSpec, info: ValidationInfo) -> ParallelSpec:
        env = info.data.get("env")
        if parallel.mode is None or not isinstance(env, EnvSpec):
            return parallel
        modes = type(env).parallel_modes
        if parallel.mode not in modes:
            offered = f"its modes: {', '.join(modes)}" if modes else "it has none: leave it unset"
            error = _custom(
                "rlcrate_mode",
                f"the {env.backend} backend has no mode {parallel.mode!r} ({offered})",
            )
            details = InitErrorDetails(type=error, loc=("mode",), input=parallel.mode)
            raise ValidationError.from_exception_data("ParallelSpec", [details])
        return parallel

    @field_validator("tune")
    @classmethod
    def _not_with_a_matrix(cls, tune: TuneSpec | None, info: ValidationInfo) -> TuneSpec | None:
        if tune is not None and info.data.get("matrix"):
            raise ValueError(
                "not together with matrix: a study's trials are its variants; use one or the "
                "other (a matrix with `rlcrate run`, a tune: section with `rlcrate tune`)"
            )
        evals = info.data.get("eval")
        pruner = tune.pruner.name if tune is not None else "none"
        if pruner != "none" and isinstance(evals, EvalSpec) and not evals.every:
            error = _custom(
                "rlcrate_pruner",
                f"{pruner} prunes on evaluations during training, and eval.every is 0; set "
                "eval.every (steps between them) or pruner: none",
            )
            details = InitErrorDetails(type=error, loc=("pruner",), input=pruner)
            raise ValidationError.from_exception_data("TuneSpec", [details])
        return tune

    @field_validator("eval")
    @classmethod
    def _evaluated_within_the_budget(cls, evals: EvalSpec, info: ValidationInfo) -> EvalSpec:
        train = info.data.get("train")
        if isinstance(train, TrainSpec) and evals.every > train.timesteps > 0:
            error = _custom(
                "rlcrate_every",
                f"every {evals.every} steps is more than train.timesteps ({train.timesteps}): "
                "no evaluation would run during training",
            )
            details = InitErrorDetails(type=error, loc=("every",), input=evals.every)
            raise ValidationError.from_exception_data("EvalSpec", [details])
        return evals

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, seeds: list[int]) -> list[int]:
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"at most {MAX_SEEDS:,} seeds, got {len(seeds):,}")
        dupes = sorted(s for s, n in Counter(seeds).items() if n > 1)
        if dupes:
            raise ValueError(f"seeds must be unique; repeated: {dupes[:10]}")
        if any(s < 0 for s in seeds):
            raise ValueError("seeds must be non-negative integers")
        if any(s > MAX_SEED for s in seeds):
            raise ValueError(f"a seed is at most {MAX_SEED:,} (32 bits), got {max(seeds):,}")
        return seeds


def with_backend_defaults(cfg: Manifest) -> Manifest:
    """`cfg` with what its backend decides when the manifest leaves it open filled in (the
    default `parallel.mode` of a backend that has modes), so resolved.yaml says what ran."""
    modes = type(cfg.env).parallel_modes
    if cfg.parallel.mode is not None or not modes:
        return cfg
    parallel = cfg.parallel.model_copy(update={"mode": modes[0]})
    return cfg.model_copy(update={"parallel": parallel})
