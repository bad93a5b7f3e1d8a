"""eval.video for Godot: the game drawn by the full engine (Debian's `godot3`, not the server
build) under a virtual display (`xvfb-run`, software OpenGL). Two ways to a frame:

- rlcrate's bundled games answer the `frame` message over their own connection (sync.gd): the
  engine runs with `--disable-render-loop` and draws only the frames asked for.
- A Godot 3 project or an exported game of one's own speaks godot-rl's protocol through
  godot-rl's plugin, which has no such message: it runs with its render loop on, under an Xvfb
  that keeps its screen in a file (`screen`), and a frame is that screen read off the file.

Drawing only reads the game's state, so a recorded evaluation scores the same episodes as a
headless one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from runner.errors import BackendUnavailable, FieldProblem

DRAWING_NAMES = ("godot3", "godot")  # the full engine; godot3-server draws nothing
# The window holds the first instance's arena (400 x 400 and its walls), the one a frame shows;
# the virtual screen is a little larger.
WINDOW = "408x408"
SCREEN = "-screen 0 640x480x24"
# A game of one's own without eval.video.size: its project's window size, else Godot 3's default
DEFAULT_WINDOW = (1024, 600)
APT = "apt-get install godot3 xvfb xauth"


def drawing_binary() -> str | None:
    """The full Godot 3 engine on PATH, or None."""
    from runner.backends.godot import _probe_version

    for name in DRAWING_NAMES:
        path = shutil.which(name)
        version = _probe_version(path) if path else None
        if path and version and version.startswith("3.") and "server" not in Path(path).name:
            return path
    return None


def video_problems(kind: str, *, godot4: bool = False) -> list[FieldProblem]:
    """Why a game of this kind ('game', 'project', 'binary') cannot be recorded here."""
    if godot4:
        msg = (
            "a Godot 4 project cannot be recorded: eval.video draws through the full Godot 3 "
            "engine (godot3), and Godot 4 does not run here"
        )
        return [FieldProblem(("eval", "video"), msg)]
    needs = [("xvfb-run", shutil.which("xvfb-run"))]
    if kind != "binary":  # an exported game is its own engine
        needs.insert(0, ("the full Godot 3 engine (godot3)", drawing_binary()))
    missing = [what for what, found in needs if not found]
    if missing:
        msg = (
            f"the godot backend records through the full engine under a virtual display, and "
            f"this machine lacks {' and '.join(missing)}: {APT}"
        )
        return [FieldProblem(("eval", "video"), msg)]
    return []


def _software_xvfb(server_args: str) -> list[str]:
    """`xvfb-run` with software OpenGL (a virtual display has no GPU) around what follows."""
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        raise BackendUnavailable(f"eval.video needs xvfb-run: {APT}")
    return ["env", "LIBGL_ALWAYS_SOFTWARE=1", xvfb, "--auto-servernum", "--server-args",
            server_args]  # fmt: skip


def _engine() -> str:
    binary = drawing_binary()
    if binary is None:
        raise BackendUnavailable(f"eval.video needs the full Godot 3 engine: {APT}")
    return binary


def drawing_head(project: Path) -> list[str]:
    """The start of a bundled game's drawing process: Xvfb around the full engine, no sound
    card, nothing drawn but the frames asked for (the game draws each one itself, on demand:
    without --disable-render-loop the engine draws every tick, in software, recorded or not)."""
    return [
        *_software_xvfb(SCREEN),
        *(_engine(), "--path", str(project), "--audio-driver", "Dummy", "--resolution", WINDOW),
        "--disable-render-loop",
    ]


def screen_head(kind: str, path: Path, window: tuple[int, int], fbdir: Path) -> list[str]:
    """The start of a drawing process for a project ('project') or an exported game ('binary')
    of one's own: its Xvfb's screen is the window's size and kept in `fbdir/Xvfb_screen0`;
    the window fills it from 0,0, and the render loop stays on (the game draws every tick by
    itself: nothing can ask a foreign game to draw)."""
    w, h = window
    # no pointer drawn into the picture
    head = _software_xvfb(f"-screen 0 {w}x{h}x24 -nocursor -fbdir {fbdir}")
    game = [str(path)] if kind == "binary" else [_engine(), "--path", str(path)]
    return [*head, *game, "--audio-driver", "Dummy", "--resolution", f"{w}x{h}",
            "--position", "0,0"]  # fmt: skip


def project_window(project: Path) -> tuple[int, int]:
    """A Godot 3 project's window size (project.godot's display/window/size), else Godot's."""
    text = (project / "project.godot").read_text(errors="replace")
    section = re.search(r"^\[display\]\s*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    if section is None:
        return DEFAULT_WINDOW
    sides = [
        re.search(rf"^window/size/{side}\s*=\s*(\d+)", section.group(1), re.MULTILINE)
        for side in ("width", "height")
    ]
    return (
        int(sides[0].group(1)) if sides[0] else DEFAULT_WINDOW[0],
        int(sides[1].group(1)) if sides[1] else DEFAULT_WINDOW[1],
    )
