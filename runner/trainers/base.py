"""The trainer contract: the files a unit's training loop leaves in its unit directory.

A trainer is a class derived from `Trainer` below: its `Options` (the `algo` fields it owns, an
`AlgoSpec` subclass), the algorithms it trains by default (`ALGORITHMS`), the env interface its
loop steps, and the hooks as methods; what it can do beyond them it declares by deriving from the
abilities in `abilities.py`. Summary, report, progress, archive and reproduce read only these
files, so any training loop that leaves them plugs in (a new loop is a new module and its entry
point, `runner.trainers`):

    model.zip                   MODEL_FILE: the final model, written atomically when train ends
    checkpoints/step-<N>.zip    optional: what `--resume` continues from after an interruption
    tb/                         TensorBoard event files with REWARD_TAG (the mean return of recent
                                training episodes) against env steps, in real wall time
    progress.json               optional: `record.progress.Progress` about once a second
                                (steps, total, steps_per_s, started; SB3's checkpoint_bytes),
                                and the final count with `finished` when training ends
    eval.json                   EVAL_FILE, `record.eval.EvalRecord`: {episodes: [{return,
                                length}], mean, std, deterministic, n_episodes, seed,
                                episode_limit} (`write_eval` below)

Each is written through its record's model and writer (`runner.record`: progress, checkpoint,
train, eval), never as a JSON dict of the loop's own. What `train` and `evaluate` return
(`TrainResult`, `EvalResult`: the records' own models, `results.py` names them) goes into the
unit's status.json, checked there against those models; the unit writes its state, times and
errors itself.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

from runner.manifest.algo import AlgoSpec
from runner.record.eval import EVAL_FILE as EVAL_FILE  # every trainer leaves one
from runner.trainers.results import (
    BenchResult,
    DeterminismAttempt,
    EvalResult,
    Spread,
    TrainResult,
)

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
EVAL_FIELDS = tuple(EvalResult.model_fields)

# Set by the unit's SIGTERM handler, which also raises KeyboardInterrupt. A loop that can check it
# per step does (raising KeyboardInterrupt itself): the handler's exception can land in code that
# swallows it (a finalizer, a C callback), and the unit would then train on to the end.
STOP = threading.Event()
# Set while a loop checks STOP itself at its next consistent point (SB3 with an exactly resumable
# env: the next rollout boundary, where a checkpoint holds all an exact resume needs); the
# handler then only sets STOP, instead of raising wherever the loop happens to be.
STOPS_ITSELF = threading.Event()

A = TypeVar("A", bound=AlgoSpec)


def options_of(cfg: Manifest, model: type[A]) -> A:
    """`cfg.algo` as the options model `model` (what validation made of it, for the trainer
    that owns `model`); TypeError when it is another trainer's."""
    algo = cfg.algo
    if not isinstance(algo, model):
        raise TypeError(
            f"algo {algo.name!r} holds {type(algo).__name__}, not {model.__name__}: its config "
            "was made for another trainer"
        )
    return algo


class Trainer(ABC, Generic[A]):
    """A training loop: `name`, `Options`, `ALGORITHMS` and `ENV_INTERFACE` as class attributes,
    the hooks as methods. The abstract ones make a trainer; `deep_only` and `model_files` have
    working defaults; the abilities (`abilities.py`) are declared by deriving from them."""

    name: ClassVar[str]
    # The `algo` fields it owns (a subclass of AlgoSpec): a manifest's algo is validated against
    # it, and resolved.yaml records these. Default: the shared ones (name, trainer, params).
    Options: ClassVar[type[AlgoSpec]] = AlgoSpec
    # The algorithm names it trains when `algo.trainer` is not given (rlcrate's own trainers
    # are asked first, then the installed packages', in order: the first to declare one has it).
    ALGORITHMS: ClassVar[tuple[str, ...]] = ()
    # The env interface its loop steps (`runner.backends.base`: SB3_VEC_ENV,
    # FUNCTIONAL_JAX_ENV, ...): `validate` refuses a backend that does not offer it, and the
    # loop makes its env with the backend's `make_env(..., interface=ENV_INTERFACE)`.
    ENV_INTERFACE: ClassVar[str]
    # The loop runs on torch: the unit seeds torch's generator and limits its threads.
    USES_TORCH: ClassVar[bool] = True
    # Its `train`, `evaluate` and `dry_construct` close every file they write (loggers, envs),
    # so the process may end without Python's finalization once they return
    # (runner/trainers/quick_exit.py: torch's teardown, 0.5-1 s per unit, skipped).
    QUICK_EXIT: ClassVar[bool] = False

    def options(self, cfg: Manifest) -> A:
        """`cfg.algo` as this trainer's `Options`."""
        return cast(A, options_of(cfg, self.Options))

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
    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
        """Train `cfg.train.timesteps` env steps (continuing from the newest checkpoint, if any);
        leave MODEL_FILE and TB_DIR. On KeyboardInterrupt (Ctrl-C, SIGTERM) save a checkpoint,
        then re-raise."""

    @abstractmethod
    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
        """Run `cfg.eval.episodes` episodes of the saved model on a fresh single env seeded
        with `seeds["eval_env"]`; leave EVAL_FILE (`write_eval`)."""

    def model_files(self, cfg: Manifest) -> list[str]:
        """The files of a unit trained with `cfg` that make its final model, model first (what
        `check-determinism --resume` digests). Default: MODEL_FILE alone."""
        return [MODEL_FILE]

    @abstractmethod
    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> DeterminismAttempt:
        """One attempt of `rlcrate check-determinism`, in the unit's interpreter: train about
        `steps` env steps from `seeds` and say what two attempts are compared on."""

    @abstractmethod
    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
        """The bench job's measurements of one point (`cfg` is the point's config): the env as
        this trainer steps it (random actions), training (None when `bench.train` is off), env +
        policy inference where the trainer can separate it (None when `bench.inference` is
        off), and the profile when `bench.profile` asks and the trainer can split a step."""


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
) -> EvalResult:
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
    return EvalResult(eval_mean=record.mean, eval_std=record.std)


def spread(values: list[float]) -> Spread:
    """Repeated measurements of one quantity (a bench): median, min, max and every run."""
    import numpy as np

    return Spread(
        median=float(np.median(values)),
        min=float(min(values)),
        max=float(max(values)),
        runs=[float(v) for v in values],
    )


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
