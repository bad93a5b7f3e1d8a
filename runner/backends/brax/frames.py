"""eval.video for Brax: Brax's own way of drawing a state (brax.io.image: MuJoCo's renderer on
the env's MJCF model, posed from the state's joint positions and velocities), through the
renderer the MuJoCo-based backends share (`backends.mujoco_frames`)."""

from __future__ import annotations

from typing import Any

from runner.backends.mujoco_frames import DEFAULT_SIZE, ModelPainter, gl_problem
from runner.errors import FieldProblem

NO_SYSTEM = {"fast": "Brax's test env `fast` has no physics system to draw"}


def video_problems(env_id: str) -> list[FieldProblem]:
    """Why this Brax env's evaluation cannot be drawn here; cheap, imports nothing."""
    if env_id in NO_SYSTEM:
        return [FieldProblem(("eval", "video"), NO_SYSTEM[env_id])]
    problem = gl_problem("Brax")
    return [FieldProblem(("eval", "video"), problem)] if problem else []


def pose(state: Any) -> tuple[Any, Any]:
    """A Brax state's joint positions and velocities, which `Painter` draws."""
    return state.pipeline_state.q, state.pipeline_state.qd


class Painter(ModelPainter):
    """Draws states of one Brax system: `frame(q, qd)` -> an H x W x 3 uint8 image."""

    def __init__(self, sys: Any, size: tuple[int, int] = DEFAULT_SIZE) -> None:
        model = getattr(sys, "mj_model", None)
        if model is None:
            raise RuntimeError("the env's system has no MuJoCo model to draw")
        super().__init__(model, size)
