"""What a backend can do beyond the core contract (`base.Backend`), each declared by deriving from
its class here: `class MySim(Backend[MySimEnv], Video[MySimEnv], ZooIds)`, the methods typed
against the backend's own options. A declared ability's abstract methods must be written (a
class that lacks one cannot be made); a caller asks `isinstance(backend, Ability)`, and where the
backend lacks it does without, saying so once (`runner.plugins.lacks`), or refuses in one line.
Ray Tune's `Searcher.save` is the model: the default says what the plugin cannot do, never
pretends.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from runner.errors import FieldProblem, first_error
from runner.manifest.schema import EnvSpec

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

E = TypeVar("E", bound=EnvSpec)


class Video(ABC, Generic[E]):
    """It can record its evaluations (`eval.video`): its envs render frames, or an equivalent
    env of another backend does. Without it, validate refuses `eval.video`, naming what the
    backend would need (`Traits.video_needs`)."""

    @abstractmethod
    def check_video(self, env: E) -> list[FieldProblem]:
        """Why this env's evaluation cannot be recorded here, each at its field; empty when
        `video_env` gives an env whose VecEnv's `get_images()` returns its frames (or
        `video_equivalent` one that does). Cheap, and needs none of the backend's packages
        (`validate` asks on a light install)."""

    def video_env(self, env: E, *, size: tuple[int, int] | None = None) -> E:
        """The env options of an evaluation that is recorded: the same env, its frames
        rendered, so that the VecEnv's `get_images()` returns each env's current frame and the
        episodes' returns stay those of `env`. `size`: eval.video's [width, height] (None: the
        env's own), for an env that can draw at a size asked for (the frames are scaled to it
        in any case). Asked only when `check_video` found no problem. Default: `env` itself."""
        first_error(self.check_video(env))
        return env

    def video_blank_hint(self, env: E) -> str:
        """What to do when every frame of a recorded episode is one colour (the env drew
        nothing): the end of the one line that fails the video."""
        return f"{env.id} drew nothing; check that it renders on this machine"

    def video_equivalent(self, env: E) -> tuple[EnvSpec, str] | None:
        """For a backend whose envs render nothing themselves: the options (`Options` of another
        backend) of an equivalent env that does, and one line saying what the recording then
        is. The evaluation scores `env`'s episodes as ever; the video is a rollout of the same
        policy on the equivalent env, never the scored episodes. Default None: `video_env`
        records the evaluation itself."""
        return None


class ZooIds(ABC):
    """Its env ids have entries in rl-zoo3's tuned tables (`algo.defaults: zoo`). Without it,
    `defaults: zoo` is refused at its line."""

    @abstractmethod
    def gymnasium_id(self, env_id: str) -> str | None:
        """The Gymnasium id of this backend's env `env_id` (rl-zoo3's tables are keyed by
        them), or None for an id that has none."""

    def is_atari(self, env_id: str) -> bool:
        """Whether `env_id` is an Atari game (rl-zoo3's `atari` entry applies). Default False."""
        return False


class TaskConfigs(ABC):
    """Its tasks register agent configs for training libraries (`algo.defaults: task`). Without
    it, `defaults: task` is refused at its line."""

    @abstractmethod
    def agent_config(self, task: str, entry_point: str) -> dict[str, Any] | None:
        """The agent config the task `task` registers for a training library (`entry_point`,
        e.g. Isaac Lab's `sb3_cfg_entry_point`), as `{entry, cfg}` (entry None: the task
        registers none for it)."""


class StepParts(Protocol):
    """Where the env steps of one VecEnv went while it is attached (`StepSplit.step_split`)."""

    seconds: dict[str, float]  # part -> seconds spent in it
    calls: int  # timed calls (for the profile's own cost)
    reported: bool  # False once the engine stopped reporting its own share

    def stall(self) -> str | None:
        """A sentence when the env's replies are held back by its transport (a Godot game's
        socket under Nagle's algorithm), else None."""

    def detach(self) -> None:
        """Stop timing: the VecEnv's own methods show through again."""


class StepSplit(ABC):
    """It can split one env step of its VecEnv into parts (`bench.profile`: Godot's encode,
    socket wait, engine tick, decode). Without it, the profile shows the env step as one part,
    and says so once."""

    @abstractmethod
    def step_split(self, venv: VecEnv) -> StepParts | None:
        """Timers splitting the env step of this VecEnv (one `make_vec_env` made) into parts,
        or None for a VecEnv it cannot split."""


class ExactResume(ABC, Generic[E]):
    """Its VecEnv's sub-envs answer `replay.REPLAY_STATE` and `replay.REPLAY` (the episodes in
    progress can be saved with a checkpoint and replayed on resume), so a trainer that resumes
    exactly (`trainers.abilities.ResumesExactly`) ends bit-identical to a unit never stopped.
    Without it, resume is approximate: `Traits.resume` says why."""

    def resume_approximate(self, env: E) -> str | None:
        """Why this env, although the backend's envs replay, does not resume exactly (an
        exception per env); None (the default): it does."""
        return None
