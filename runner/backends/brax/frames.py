"""eval.video for Brax: Brax's own way of drawing a state (brax.io.image: MuJoCo's renderer on
the env's MJCF model, posed from the state's joint positions and velocities), kept open for a
whole recording instead of one renderer per call.

MuJoCo's renderer needs an OpenGL context, which a machine without a display has only through
`MUJOCO_GL=osmesa` (software, libosmesa6) or `MUJOCO_GL=egl` (a GPU); MuJoCo reads the variable
when it is first imported, so it must be set before the unit starts. Drawing reads the states
the evaluation kept and changes none of them.
"""

from __future__ import annotations

import os
from typing import Any

from runner.errors import FieldProblem

GL_CHOICES = ("osmesa", "egl")
GL_HINT = "set MUJOCO_GL=osmesa (software, apt-get install libosmesa6) or MUJOCO_GL=egl (a GPU)"
NO_SYSTEM = {"fast": "Brax's test env `fast` has no physics system to draw"}
# Brax's own default frame (brax.io.image); eval.video.size scales it
DEFAULT_SIZE = (320, 240)


def video_problems(env_id: str) -> list[FieldProblem]:
    """Why this Brax env's evaluation cannot be drawn here; cheap, imports nothing."""
    if env_id in NO_SYSTEM:
        return [FieldProblem(("eval", "video"), NO_SYSTEM[env_id])]
    if os.environ.get("MUJOCO_GL") not in GL_CHOICES:
        msg = (
            "Brax draws through MuJoCo's renderer, whose OpenGL context a machine without a "
            f"display lacks: {GL_HINT}"
        )
        return [FieldProblem(("eval", "video"), msg)]
    return []


class Painter:
    """Draws states of one Brax system: `frame(q, qd)` -> an H x W x 3 uint8 image."""

    def __init__(self, sys: Any, size: tuple[int, int] = DEFAULT_SIZE) -> None:
        import mujoco

        model = getattr(sys, "mj_model", None)
        if model is None:
            raise RuntimeError("the env's system has no MuJoCo model to draw")
        # the model's offscreen buffer bounds the frame; the video's writer scales it
        w = min(size[0], model.vis.global_.offwidth)
        h = min(size[1], model.vis.global_.offheight)
        self._mujoco, self._model = mujoco, model
        self._data = mujoco.MjData(model)
        self._renderer = mujoco.Renderer(model, height=h, width=w)

    def frame(self, q: Any, qd: Any) -> Any:
        self._data.qpos, self._data.qvel = q, qd
        self._mujoco.mj_forward(self._model, self._data)
        self._renderer.update_scene(self._data, camera=-1)
        return self._renderer.render()

    def close(self) -> None:
        self._renderer.close()
