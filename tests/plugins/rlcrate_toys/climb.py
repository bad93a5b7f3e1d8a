"""A trainer without torch: hill climbing on a linear policy over Gymnasium envs.

`algo: {trainer: toy_climb, name: climb, params: {noise, step_ms}}` on a backend that makes
single Gymnasium envs (GYMNASIUM_ENV: the gymnasium backend).
The policy acts by `argmax(obs @ theta)` (discrete actions) or `clip(obs @ theta)` (boxes); each
finished episode scores the candidate it ran, which replaces the policy when it did better, and
the next candidate is the policy plus Gaussian noise (`noise`). `step_ms` paces each vector step
(the tests stop a unit part way through training, and need training to last a little).

It keeps the trainer contract whole, through rlcrate's own helpers: checkpoints every
`train.checkpoint_every` steps, resume from the newest readable one, a checkpoint on Ctrl-C or
SIGTERM, progress.json about once a second, TensorBoard scalars (tensorboard's own writer), the
final model, eval.json. A process training with it never imports torch: it drives the tests of
the runner's orchestration, faults and records, where the training loop is not what is tested.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.backends import get_backend
from runner.backends.base import GYMNASIUM_ENV
from runner.errors import FieldError, FieldProblem
from runner.manifest.algo import AlgoSpec
from runner.manifest.schema import Manifest
from runner.record.checkpoint import CheckpointRecord, write_checkpoint_record
from runner.record.progress import Progress, write_progress
from runner.record.rundir import replace_via
from runner.record.status import read_status
from runner.trainers.abilities import ColdStart, CountsSteps
from runner.trainers.base import (
    MODEL_FILE,
    REWARD_TAG,
    STOP,
    TB_DIR,
    Trainer,
    digest,
    spread,
    write_eval,
)
from runner.trainers.results import (
    BenchResult,
    DeterminismAttempt,
    EvalResult,
    Rate,
    TrainResult,
)
from runner.trainers.resume import Start, newest_readable, pins, totals, train_once

ALGO = "climb"
PARAMS = {"noise": 0.1, "step_ms": 0.0}
STATE = "state.json"  # the one member of model.zip and of a checkpoint


ENV_INTERFACE = GYMNASIUM_ENV  # one Gymnasium env, episode after episode


def _check_params(cfg: Manifest) -> list[FieldProblem]:
    out = []
    if cfg.algo.name != ALGO:
        msg = f"the toy_climb trainer trains only {ALGO!r}, not {cfg.algo.name!r}"
        out.append(FieldProblem(("algo", "name"), msg))
    for key, value in cfg.algo.params.items():
        if key not in PARAMS:
            msg = f"toy_climb takes only {', '.join(PARAMS)}"
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            msg = f"expected a number of at least 0, got {value!r}"
        else:
            continue
        out.append(FieldProblem(("algo", "params", key), msg))
    return out


def _dry_construct(cfg: Manifest) -> None:
    """Build one env, take one action."""
    env = _make(cfg, 0)
    try:
        obs, _ = env.reset(seed=0)
        env.step(_act(_zeros(env), obs, env.action_space))
    finally:
        env.close()


def _param(cfg: Manifest, key: str) -> float:
    return float(cfg.algo.params.get(key, PARAMS[key]))


def _make(cfg: Manifest, seed: int) -> Any:
    """One env, as the backend makes it for this loop (ENV_INTERFACE)."""
    backend = get_backend(cfg.env.backend)
    try:
        return backend.make_env(cfg.env, cfg.parallel, interface=ENV_INTERFACE, seed=seed)
    except FieldError:
        raise
    except Exception as exc:
        raise FieldError(
            ("env", "id"), f"{cfg.env.backend} cannot make {cfg.env.id!r}: {exc}"
        ) from None


def _zeros(env: Any) -> Any:
    import numpy as np

    space = env.action_space
    outputs = int(space.n) if hasattr(space, "n") else int(np.prod(space.shape))
    return np.zeros((int(np.prod(env.observation_space.shape)), outputs))


def _act(theta: Any, obs: Any, space: Any) -> Any:
    import numpy as np

    out = np.asarray(obs, dtype=np.float64).ravel() @ theta
    if hasattr(space, "n"):
        return int(np.argmax(out))
    return np.clip(out, space.low.ravel(), space.high.ravel()).reshape(space.shape)


class _State:
    """Everything training continues from: the policy, its score, the candidate, the generator."""

    def __init__(self, theta: Any, rng: Any, steps: int = 0, best: float = float("-inf")):
        self.theta, self.rng, self.steps, self.best = theta, rng, steps, best
        self.candidate = theta.copy()

    def propose(self, noise: float) -> None:
        self.candidate = self.theta + noise * self.rng.standard_normal(self.theta.shape)

    def score(self, ret: float, noise: float) -> None:
        if ret > self.best:
            self.best, self.theta = ret, self.candidate
        self.propose(noise)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "best": self.best if self.best != float("-inf") else None,
            "theta": self.theta.tolist(),
            "candidate": self.candidate.tolist(),
            "rng": self.rng.bit_generator.state,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _State:
        import numpy as np

        rng = np.random.default_rng()
        rng.bit_generator.state = data["rng"]
        best = data["best"] if data["best"] is not None else float("-inf")
        state = cls(np.array(data["theta"], dtype=np.float64), rng, int(data["steps"]), best)
        state.candidate = np.array(data["candidate"], dtype=np.float64)
        return state


def _write(state: _State, path: Path) -> None:
    def write(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w") as z:
            z.writestr(STATE, json.dumps(state.to_json()))

    path.parent.mkdir(parents=True, exist_ok=True)
    replace_via(path, path.with_name(f".{path.stem}.tmp{os.getpid()}.zip"), write)


def _read(path: Path) -> _State:
    with zipfile.ZipFile(path) as z:
        return _State.from_json(json.loads(z.read(STATE)))


def _steps_of(path: Path) -> int | None:
    try:
        return _read(path).steps
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
        return None


def _checkpoint(state: _State, unit_dir: Path, wall_s: float) -> None:
    path = unit_dir / "checkpoints" / f"step-{state.steps}.zip"
    _write(state, path)
    files = pins(path.parent, [path.name])
    record = CheckpointRecord(timesteps=state.steps, train_wall_time_s=wall_s, files=files)
    write_checkpoint_record(path, record)


def _train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    envs = [_make(cfg, seeds["env"] + i) for i in range(cfg.parallel.envs)]
    noise, pause = _param(cfg, "noise"), _param(cfg, "step_ms") / 1000
    start = newest_readable(unit_dir, _read, cfg.train.timesteps, steps_of=_steps_of)
    if start is None:
        state = _State(_zeros(envs[0]), np.random.default_rng(seeds["model"]))
        state.propose(noise)
        start = Start(state)
    state = start.model
    folder = TB_DIR if not start.steps_done else f"{TB_DIR}/resumed-{start.steps_done}"
    tb = EventFileWriter(str(unit_dir / folder), flush_secs=1)
    obs = [env.reset(seed=seeds["env"] + i)[0] for i, env in enumerate(envs)]
    recent: list[float] = []  # the returns of the latest episodes
    returns, episodes, log = [0.0] * len(envs), 0, False
    started, t0 = time.time(), time.perf_counter()
    tick, next_ckpt = t0, _next(state.steps, cfg.train.checkpoint_every)

    def wall() -> float:
        return start.wall_before_s + time.perf_counter() - t0

    try:
        while state.steps < cfg.train.timesteps:
            if STOP.is_set():
                raise KeyboardInterrupt
            for i, env in enumerate(envs):
                obs[i], reward, terminated, truncated, _ = env.step(
                    _act(state.candidate, obs[i], env.action_space)
                )
                returns[i] += float(reward)
                if terminated or truncated:
                    state.score(returns[i], noise)
                    recent = [*recent[-19:], returns[i]]
                    obs[i], returns[i] = env.reset()[0], 0.0
                    episodes += 1
                    log = episodes % cfg.train.log_interval == 0
            state.steps += len(envs)
            if log:  # the mean return of the last 20 episodes, as SB3 logs it
                value = summary_pb2.Summary.Value(tag=REWARD_TAG, simple_value=np.mean(recent))
                summary = summary_pb2.Summary(value=[value])
                tb.add_event(event_pb2.Event(wall_time=time.time(), step=state.steps,
                                             summary=summary))  # fmt: skip
                log = False
            if next_ckpt is not None and next_ckpt <= state.steps < cfg.train.timesteps:
                _checkpoint(state, unit_dir, wall())
                next_ckpt = _next(state.steps, cfg.train.checkpoint_every)
            if time.perf_counter() - tick >= 1.0:
                tick = time.perf_counter()
                rate = (state.steps - start.steps_done) / max(tick - t0, 1e-9)
                _progress(unit_dir, cfg, state.steps, rate, started)
            if pause:
                time.sleep(pause)
    except KeyboardInterrupt:
        _checkpoint(state, unit_dir, wall())
        raise
    finally:
        tb.close()
        for env in envs:
            env.close()
    _write(state, unit_dir / MODEL_FILE)
    fields = totals(state.steps, start.steps_done, start.wall_before_s, time.perf_counter() - t0)
    _progress(unit_dir, cfg, state.steps, fields.train_steps_per_s or 0.0, started, finished=True)
    resumes = list(read_status(unit_dir).resumes)
    resumes += [start.steps_done] if start.steps_done else []
    return fields.model_copy(update={"train_started": started, "resumes": resumes})


def _progress(unit_dir: Path, cfg: Manifest, steps: int, rate: float, started: float,
              finished: bool = False) -> None:  # fmt: skip
    total = cfg.train.timesteps
    write_progress(unit_dir, Progress(steps=steps, total=total, steps_per_s=rate, started=started,
                                      finished=finished))  # fmt: skip


def _next(steps: int, every: int | None) -> int | None:
    return None if not every else (steps // every + 1) * every


def _episode(cfg: Manifest, theta: Any, seed: int) -> tuple[float, int]:
    env = _make(cfg, seed)
    try:
        obs, _ = env.reset(seed=seed)
        total, n, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(_act(theta, obs, env.action_space))
            total, n, done = total + float(reward), n + 1, terminated or truncated
        return total, n
    finally:
        env.close()


def _evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
    model = unit_dir / MODEL_FILE
    if not model.exists():
        raise FileNotFoundError(f"{model} is missing; run the train job first")
    theta = _read(model).theta
    episodes = [_episode(cfg, theta, seeds["eval_env"] + i) for i in range(cfg.eval.episodes)]
    returns, lengths = zip(*episodes, strict=True)
    return write_eval(unit_dir, cfg, seeds["eval_env"], list(returns), list(lengths))


def _determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> DeterminismAttempt:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        short = cfg.model_copy(update={"train": cfg.train.model_copy(
            update={"timesteps": steps, "checkpoint_every": 0})})  # fmt: skip
        fields = _train(short, Path(tmp), seeds)
        theta = _read(Path(tmp) / MODEL_FILE).theta
    return DeterminismAttempt(steps=[], params=digest(theta), env_steps=fields.timesteps_done,
                              compares="the final policy")  # fmt: skip


def _rate(env: Any, seed: int, choose: Any, steps: int = 500) -> float:
    obs, _ = env.reset(seed=seed)
    t0, n = time.perf_counter(), 0
    while n < steps:
        obs, _, terminated, truncated, _ = env.step(choose(obs))
        n += 1
        if terminated or truncated:
            obs, _ = env.reset()
    return n / (time.perf_counter() - t0)


def _bench(cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
    """Env-only (random actions) and env + inference (the untrained linear policy) steps/s."""
    env = _make(cfg, seeds["env"])
    theta = _zeros(env)
    try:
        random = [_rate(env, seeds["env"], lambda _: env.action_space.sample()) for _ in range(3)]
        policy = [_rate(env, seeds["env"], lambda o: _act(theta, o, env.action_space))
                  for _ in range(3)] if cfg.bench.inference else []  # fmt: skip
    finally:
        env.close()
    inference = Rate(steps_per_s=spread(policy), steps=500) if policy else None
    return BenchResult(env_only=Rate(steps_per_s=spread(random), steps=500), inference=inference,
                       train=None, envs=1, vec_env="gymnasium.Env")  # fmt: skip


def _first_step(cfg: Manifest, seeds: dict[str, int], mark: Any) -> None:
    env = _make(cfg, seeds["env"])
    try:
        env.reset(seed=seeds["env"])
        env.step(env.action_space.sample())
        mark()
    finally:
        env.close()


class Climb(Trainer[AlgoSpec], ColdStart, CountsSteps):
    """Hill climbing on a linear policy, without torch (see the module). Its `algo` options are
    the shared ones (name, trainer, params): the base `AlgoSpec`."""

    name = "toy_climb"
    ALGORITHMS = (ALGO,)
    ENV_INTERFACE = ENV_INTERFACE
    USES_TORCH = False

    def check_params(self, cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
        return _check_params(cfg)

    def check_limits(self, cfg: Manifest) -> list[FieldProblem]:
        return []

    def dry_construct(self, cfg: Manifest) -> None:
        """Build one env, take one action."""
        _dry_construct(cfg)

    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
        return train_once(
            unit_dir, cfg.train.timesteps, lambda: _train(cfg, unit_dir, seeds), _read, _steps_of
        )

    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
        return _evaluate(cfg, unit_dir, seeds)

    def saved_steps(self, path: Path) -> int | None:
        return _steps_of(path)

    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> DeterminismAttempt:
        return _determinism_attempt(cfg, seeds, steps)

    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
        """Env-only (random actions) and env + inference (the untrained linear policy)."""
        return _bench(cfg, seeds)

    def first_step(self, cfg: Manifest, seeds: dict[str, int], mark: Callable[[], object]) -> None:
        _first_step(cfg, seeds, mark)
