"""Standard Atari preprocessing (`env.atari`), the same on the gymnasium and EnvPool backends.

gymnasium: Stable-Baselines3's `AtariWrapper` on each env (made with `frameskip=1` and
`repeat_action_probability=0`, since the wrapper skips frames and repeats actions itself), then
`VecFrameStack` on the vector. envpool: the same settings as EnvPool's own constructor arguments.
Setting by setting (SB3 wrapper inside AtariWrapper -> EnvPool argument):

    noop_max                   NoopResetEnv(noop_max)            -> noop_max
    frame_skip                 MaxAndSkipEnv(skip), max of last 2 -> frame_skip (also max-pools 2)
    screen_size                WarpFrame(84x84, INTER_AREA)      -> img_height, img_width
                               (grayscale, always)               -> gray_scale=True
                                                                    (use_inter_area_resize=True)
    terminal_on_life_loss      EpisodicLifeEnv                   -> episodic_life
    clip_reward                ClipRewardEnv (sign)              -> reward_clip
    repeat_action_probability  StickyActionEnv                   -> repeat_action_probability
    frame_stack                VecFrameStack(n)                  -> stack_num
                               FireResetEnv (games with FIRE)    -> use_fire_reset=True
    episode limit              ALE v5: 108000 frames             -> max_episode_steps=108000/skip

One difference remains: NoopResetEnv draws 1..noop_max no-ops, EnvPool 0..noop_max-1.
Episode statistics (ep_rew_mean, eval) are taken after the wrappers: with `clip_reward` and
`terminal_on_life_loss` they are clipped per-life returns, which equal the game score only for
games without lives and with unit rewards, such as Pong.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runner.errors import FieldProblem
from runner.manifest.schema import EnvSpec, Strict


class AtariSpec(Strict):
    """Standard Atari preprocessing; `envpool_kwargs` maps each field to EnvPool's."""

    noop_max: int = Field(30, ge=0, description="Random no-op actions (up to this many) on reset.")
    frame_skip: int = Field(
        4, ge=1, description="Frames per agent action (the action repeats; max of the last two)."
    )
    screen_size: int = Field(84, ge=8, description="Frames are resized to this square, grayscale.")
    terminal_on_life_loss: bool = Field(
        True, description="A lost life ends the episode for learning (the game goes on)."
    )
    clip_reward: bool = Field(True, description="Rewards clipped to their sign (-1, 0, +1).")
    repeat_action_probability: float = Field(
        0.0, ge=0.0, le=1.0, description="Sticky actions: chance the last action repeats."
    )
    frame_stack: int = Field(4, ge=1, description="Consecutive frames stacked per observation.")


class AtariOption(EnvSpec):
    """Options of a backend that offers standard Atari preprocessing."""

    atari: AtariSpec | None = Field(
        None,
        description="Standard Atari preprocessing (no-op reset, frame skip, episodic life, "
        "84x84 grayscale, reward clipping, frame stack) for Atari ids (gymnasium: ALE/ ids; "
        "envpool: *-v5 ids); {} takes every default. Unset: raw frames.",
    )


ALE_FRAMES_PER_EPISODE = 108_000  # ALE v5's max_num_frames_per_episode
# env.kwargs that env.atari decides; setting them as well would contradict it.
GYM_OWNED = {"frameskip": 1, "repeat_action_probability": 0.0}
ENVPOOL_OWNED = (
    "noop_max",
    "frame_skip",
    "img_height",
    "img_width",
    "gray_scale",
    "episodic_life",
    "reward_clip",
    "repeat_action_probability",
    "stack_num",
    "use_fire_reset",
    "use_inter_area_resize",
    "max_episode_steps",
)


def envpool_kwargs(spec: AtariSpec) -> dict[str, Any]:
    """EnvPool's constructor arguments equivalent to `spec` (see the table above)."""
    return {
        "noop_max": spec.noop_max,
        "frame_skip": spec.frame_skip,
        "img_height": spec.screen_size,
        "img_width": spec.screen_size,
        "gray_scale": True,
        "use_inter_area_resize": True,
        "episodic_life": spec.terminal_on_life_loss,
        "reward_clip": spec.clip_reward,
        "repeat_action_probability": spec.repeat_action_probability,
        "stack_num": spec.frame_stack,
        "use_fire_reset": True,
        "max_episode_steps": ALE_FRAMES_PER_EPISODE // spec.frame_skip,
    }


def gym_kwargs(env: AtariOption) -> dict[str, Any]:
    """gym.make's kwargs: the manifest's, plus no frame skipping or sticky actions in ALE itself."""
    return {**env.kwargs, **GYM_OWNED} if env.atari else dict(env.kwargs)


def problems(env: AtariOption, *, games: str, is_game: bool, owned: Any) -> list[FieldProblem]:
    """Why `env.atari` cannot apply to this env (`games`: which ids are Atari games on this
    backend, `is_game`: whether env.id is one, `owned`: the env.kwargs it decides itself)."""
    if env.atari is None:
        return []
    if not is_game:
        return [
            FieldProblem(("env", "atari"), f"applies to Atari games only ({games}), not '{env.id}'")
        ]
    clash = sorted(k for k in env.kwargs if k in owned)
    return [
        FieldProblem(
            ("env", "kwargs", key),
            f"env.atari sets this already (for {env.backend}); drop it from env.kwargs and use "
            "env.atari's fields",
        )
        for key in clash
    ]


def wrap_env(e: Any, spec: AtariSpec) -> Any:
    """One gymnasium env with SB3's AtariWrapper (everything but frame stacking)."""
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    return AtariWrapper(
        e,
        noop_max=spec.noop_max,
        frame_skip=spec.frame_skip,
        screen_size=spec.screen_size,
        terminal_on_life_loss=spec.terminal_on_life_loss,
        clip_reward=spec.clip_reward,
        action_repeat_probability=spec.repeat_action_probability,
    )


def stack(venv: Any, spec: AtariSpec) -> Any:
    """The vector with the last `frame_stack` frames stacked (channels last, as SB3 does)."""
    if spec.frame_stack <= 1:
        return venv
    from stable_baselines3.common.vec_env import VecFrameStack

    return VecFrameStack(venv, n_stack=spec.frame_stack)
