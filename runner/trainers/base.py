"""The trainer contract: the files a unit's training loop leaves in its unit directory.

A trainer is a class derived from `Trainer` below, with `train` and `evaluate` among its hooks.
Summary, report, progress, archive and reproduce read only these files, so any training loop that
leaves them plugs in (a new loop is a new module and its entry point, `runner.trainers`):

    model.zip                   MODEL_FILE: the final model, written atomically when train ends
    checkpoints/step-<N>.zip    optional: what `--resume` continues from after an interruption
    tb/                         TensorBoard event files with REWARD_TAG (the mean return of recent
                                training episodes) against env steps, in real wall time
    progress.json               optional: about once a second, `record.progress.write_progress`
    eval.json                   EVAL_FILE: {episodes: [{return, length}], mean, std,
                                deterministic, n_episodes, seed} (`write_eval` below)

Each is written through its record's model and writer (`runner.record`: progress, checkpoint,
train, eval), never as a JSON dict of the loop's own. What `train` and `evaluate` return goes
into the unit's status.json, checked against `record.train.TrainResult` (TRAIN_FIELDS at
least) and `record.eval.EvalResult` (EVAL_FIELDS); the unit writes its state, times and errors
itself.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from runner.record.eval import EVAL_FILE as EVAL_FILE  # every trainer leaves one

if TYPE_CHECKING:
    from runner.errors import FieldProblem
    from runner.manifest.schema import Manifest

MODEL_FILE = "model.zip"

TB_DIR = "tb"
REWARD_TAG = "rollout/ep_rew_mean"
TRAIN_FIELDS = (
    "timesteps_done",  # env steps trained in all (including before a resume)
    "train_wall_time_s",  # seconds of this training session
    "train_started",  # epoch seconds when this session started (origin of time-to-reach)
    "train_steps_per_s",  # env steps of this session / its wall time
    "resumed_from",  # env steps done before this session, or None
)
EVAL_FIELDS = ("eval_mean", "eval_std")

# Set by the unit's SIGTERM handler, which also raises KeyboardInterrupt. A loop that can check it
# per step does (raising KeyboardInterrupt itself): the handler's exception can land in code that
# swallows it (a finalizer, a C callback), and the unit would then train on to the end.
STOP = threading.Event()
# Set while a loop checks STOP itself at its next consistent point (SB3 with an exactly resumable
# env: the next rollout boundary, where a checkpoint holds all an exact resume needs); the
# handler then only sets STOP, instead of raising wherever the loop happens to be.
STOPS_ITSELF = threading.Event()


class Trainer(ABC):
    """A training loop: `name` and `ENV_INTERFACE` as class attributes, the hooks as methods.
    The abstract ones make a trainer; `deep_only`, `start_files` and `first_step` have working
    defaults."""

    name: ClassVar[str]
    # The env interface its loop steps (`runner.backends.base`: SB3_VEC_ENV, BRAX_ENV, ...):
    # `validate` refuses a backend that does not offer it, and the loop makes its env with the
    # backend's `make_env(..., interface=ENV_INTERFACE)`.
    ENV_INTERFACE: ClassVar[str]
    # The loop runs on torch: the unit seeds torch's generator and limits its threads.
    USES_TORCH: ClassVar[bool] = True
    # `first_step` can say when a fresh unit's first env step ends (the bench's cold start).
    COLD_START: ClassVar[bool] = False
    # Its `train`, `evaluate` and `dry_construct` close every file they write (loggers, envs),
    # so the process may end without Python's finalization once they return
    # (runner/trainers/quick_exit.py: torch's teardown, 0.5-1 s per unit, skipped).
    QUICK_EXIT: ClassVar[bool] = False
    # Its models are Stable-Baselines3 policies that `rlcrate export` can write as ONNX.
    EXPORTS_SB3_POLICY: ClassVar[bool] = False
    # Its `train` evaluates every `eval.every` steps (the unit's evals.json) and stops early
    # when the unit's prune request appears (`runner.record.evals`): what a study's pruner needs.
    PERIODIC_EVAL: ClassVar[bool] = False
    # Its `evaluate` records `eval.video` (the first episodes' frames, `runner.video`): a
    # manifest asking for videos with a loop that cannot is refused by `validate`.
    RECORDS_VIDEO: ClassVar[bool] = False

    @abstractmethod
    def check_params(self, cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
        """Every problem with the algorithm's name and params, each at its field from the
        manifest's top (e.g. ("algo", "params", "n_steps")). Cheap: names are read from the
        installed sources, never imported (`validate` answers in well under a second); only
        called where the backend's packages are installed."""

    @abstractmethod
    def check_limits(self, cfg: Manifest) -> list[FieldProblem]:
        """Every cross-field limit the training loop would hit only once it runs (e.g.
        ("parallel", "envs")). Needs no package: called by every `validate`, before any unit
        starts."""

    @abstractmethod
    def dry_construct(self, cfg: Manifest) -> None:
        """The dry construction (`validate --deep`, and every run before any unit, in the
        units' Python: `runner.checks.construct`): build what a unit builds first (its env, as
        the loop steps it, and its model) and take one action; raise what a unit would raise,
        a FieldError at the field a problem comes from (the device, the env, a config key).
        It reads no training budget or cadence (train.timesteps, checkpoint_every,
        log_interval): a pass is remembered without them (`checks.dry_cache`)."""

    def deep_only(self, cfg: Manifest) -> list[str]:
        """What `check_params` could not check of this config without building it (shown by
        `validate`, which says these need `--deep`). Default: [] (it checked everything)."""
        return []

    @abstractmethod
    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
        """Train `cfg.train.timesteps` env steps (continuing from the newest checkpoint, if any);
        leave MODEL_FILE and TB_DIR; return TRAIN_FIELDS. On KeyboardInterrupt (Ctrl-C,
        SIGTERM) save a checkpoint, then re-raise."""

    @abstractmethod
    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
        """Run `cfg.eval.episodes` episodes of the saved model on a fresh single env seeded
        with `seeds["eval_env"]`; leave EVAL_FILE; return EVAL_FIELDS."""

    def start_files(self, cfg: Manifest) -> list[str] | None:
        """The files of a unit trained with `cfg` that a warm start (`train.init_from`) reads,
        model first; None (the default) when this loop cannot start from another run's model.
        Needs no package: `validate` checks that the parent has them."""
        return None

    @abstractmethod
    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> dict[str, Any]:
        """One attempt of `rlcrate check-determinism`, in the unit's interpreter: train about
        `steps` env steps from `seeds` and return what two attempts are compared on:
        "steps" (per vector step, digests [observations, actions, rewards]; empty when the loop
        cannot be watched step by step), "params" (digest of the final parameters),
        "env_steps" (env steps actually trained) and "compares" (those words, for the user)."""

    @abstractmethod
    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> dict[str, Any]:
        """The bench job's measurements of one point (`cfg` is the point's config), each
        `{"steps_per_s": {median, min, max, runs}, "steps": N, ...}`: "env_only" (the env as this
        trainer steps it, random actions), "train" (None when `bench.train` is off; with
        "env_fraction", the share of training time spent stepping envs, or None), "inference"
        (env + policy inference: the policy choosing every action, no update; None or absent
        when `bench.inference` is off or the trainer cannot separate it), "envs", "vec_env"
        (what stepped them), and "profile" when `bench.profile` asks and the trainer can split
        a step."""

    def space_problem(self, cfg: Manifest, name: str) -> str | None:
        """Why `tune.space: NAME` (a search space this loop knows by name) cannot be sampled
        for `cfg`; None when it can. Needs no heavy import (`validate` asks it)."""
        return f"the {self.name} trainer knows no search space named {name!r}; write it out"

    def sample_space(self, cfg: Manifest, name: str, trial: Any) -> dict[str, Any]:
        """A trial's values from the named space (`trial`: an optuna.Trial, asked with no
        fixed distributions), as dotted manifest path -> value."""
        raise NotImplementedError(f"the {self.name} trainer knows no search space {name!r}")

    def first_step(self, cfg: Manifest, seeds: dict[str, int], mark: Callable[[], Any]) -> None:
        """For the bench's cold start (a trainer with `COLD_START = True`): build the env as its
        units do, step it once, call `mark()` right after that step, close it."""
        raise NotImplementedError(f"the {self.name} trainer does not measure its cold start")


def episode_bound(cfg: Manifest) -> tuple[int, str, bool]:
    """(steps, what set them, whether the evaluation must cut episodes there itself): the bound
    on every evaluation episode. The env's own time limit holds where it has one (the env cuts);
    `eval.max_episode_steps` where given; else rlcrate's default."""
    from runner.backends import get_backend
    from runner.manifest.schema import DEFAULT_EVAL_EPISODE_STEPS

    own = get_backend(cfg.env.backend).episode_limit(cfg.env)
    given = cfg.eval.max_episode_steps
    if given is not None and (own is None or given < own):
        return given, "eval.max_episode_steps", True
    if own is not None:
        return own, "the env's own time limit", False
    return DEFAULT_EVAL_EPISODE_STEPS, "rlcrate's default for an env without a time limit", True


def write_eval(
    unit_dir: Path,
    cfg: Manifest,
    eval_seed: int,
    returns: Any,
    lengths: Any,
    limit: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """Write the unit's eval.json (every trainer's, the same shape: `record.eval`); its status
    fields. `limit`: (steps, what set them), the bound its episodes ran under (`episode_bound`)."""
    from runner.record.eval import write_eval_record

    record = write_eval_record(
        unit_dir,
        returns,
        lengths,
        deterministic=cfg.eval.deterministic,
        seed=eval_seed,
        limit=limit,
    )
    return {"eval_mean": record.mean, "eval_std": record.std}


def spread(values: list[float]) -> dict[str, Any]:
    """Repeated measurements of one quantity (a bench): median, min, max and every run."""
    import numpy as np

    return {
        "median": float(np.median(values)),
        "min": float(min(values)),
        "max": float(max(values)),
        "runs": [float(v) for v in values],
    }


def digest(x: Any) -> str:
    """A short SHA-256 of an array, or of a mapping of them (sorted by key)."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    if isinstance(x, dict):
        for key in sorted(x):
            h.update(key.encode())
            h.update(digest(x[key]).encode())
    else:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:16]


def spaces_mismatch(parent: Any, child: Any) -> str:
    """One line naming both (observation, action) space pairs of a warm start that cannot be."""
    return (
        f"the parent's spaces (observations {parent[0]}, actions {parent[1]}) differ from this "
        f"env's (observations {child[0]}, actions {child[1]}): a policy moves only between envs "
        "with the same spaces"
    )
