"""eval.video for Godot: the bundled games drawn by the full engine (Debian's `godot3`, not the
server build) under a virtual display (`xvfb-run`, software OpenGL), their frames asked for over
the game's own connection (sync.gd's `frame` message) between agent steps.

The game's simulation is the same arithmetic with or without drawing (drawing only moves canvas
items), so a recorded evaluation scores the same episodes as a headless one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from runner.errors import BackendUnavailable, FieldProblem

DRAWING_NAMES = ("godot3", "godot")  # the full engine; godot3-server draws nothing
# The window holds the first instance's arena (400 x 400 and its walls), the one a frame shows;
# the virtual screen is a little larger.
WINDOW = "408x408"
SCREEN = "-screen 0 640x480x24"
APT = "apt-get install godot3 xvfb"


def drawing_binary() -> str | None:
    """The full Godot 3 engine on PATH, or None."""
    from runner.backends.godot import _probe_version

    for name in DRAWING_NAMES:
        path = shutil.which(name)
        version = _probe_version(path) if path else None
        if path and version and version.startswith("3.") and "server" not in Path(path).name:
            return path
    return None


def video_problems(kind: str) -> list[FieldProblem]:
    """Why a game of this kind ('game', 'project', 'binary') cannot be recorded here."""
    if kind != "game":
        msg = (
            "only rlcrate's bundled games send frames (their sync script's `frame` message); a "
            "Godot project or exported game of your own cannot be recorded yet"
        )
        return [FieldProblem(("eval", "video"), msg)]
    missing = [
        what
        for what, found in (
            ("the full Godot 3 engine (godot3)", drawing_binary()),
            ("xvfb-run", shutil.which("xvfb-run")),
        )
        if not found
    ]
    if missing:
        msg = (
            f"the godot backend records through the full engine under a virtual display, and "
            f"this machine lacks {' and '.join(missing)}: {APT}"
        )
        return [FieldProblem(("eval", "video"), msg)]
    return []


def drawing_head(project: Path) -> list[str]:
    """The start of a drawing Godot process's argv: Xvfb around the full engine, software
    OpenGL (a virtual display has no GPU), no sound card."""
    binary, xvfb = drawing_binary(), shutil.which("xvfb-run")
    if binary is None or xvfb is None:
        raise BackendUnavailable(f"eval.video needs the full Godot 3 engine and xvfb-run: {APT}")
    return [
        *("env", "LIBGL_ALWAYS_SOFTWARE=1"),
        *(xvfb, "--auto-servernum", "--server-args", SCREEN),
        *(binary, "--path", str(project), "--audio-driver", "Dummy", "--resolution", WINDOW),
        # nothing drawn but the frames asked for (the game draws each one itself, on demand):
        # without it the engine draws every tick, in software, recorded or not
        "--disable-render-loop",
    ]
