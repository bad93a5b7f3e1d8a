"""eval.video for envs whose physics is a MuJoCo model (Brax's systems, MuJoCo Playground's MJX
envs): MuJoCo's renderer posed from joint positions and velocities, kept open for a whole
recording instead of one renderer per frame. Shared by the backends that draw so (each imports
this module, none another's).

MuJoCo's renderer needs an OpenGL context, which a machine without a display has only through
`MUJOCO_GL=osmesa` (software, libosmesa6) or `MUJOCO_GL=egl` (a GPU); MuJoCo reads the variable
when it is first imported, so it must be set before the unit starts. Drawing reads the poses
given and changes nothing else.
"""

from __future__ import annotations

import os
from typing import Any

GL_CHOICES = ("osmesa", "egl")
GL_HINT = "set MUJOCO_GL=osmesa (software, apt-get install libosmesa6) or MUJOCO_GL=egl (a GPU)"
# Brax's own default frame (brax.io.image), and MuJoCo Playground's (MjxEnv.render)
DEFAULT_SIZE = (320, 240)


def gl_problem(who: str) -> str | None:
    """Why MuJoCo cannot draw here (no OpenGL context chosen), in one sentence naming `who`
    draws; None when MUJOCO_GL names one. Cheap: imports nothing."""
    if os.environ.get("MUJOCO_GL") not in GL_CHOICES:
        return (
            f"{who} draws through MuJoCo's renderer, whose OpenGL context a machine without a "
            f"display lacks: {GL_HINT}"
        )
    return None


class ModelPainter:
    """Draws poses of one MuJoCo model: `frame(q, qd)` -> an H x W x 3 uint8 image, from the free
    camera (MuJoCo's default view, as Brax and Playground draw)."""

    def __init__(self, model: Any, size: tuple[int, int] = DEFAULT_SIZE) -> None:
        import mujoco

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
