"""eval.video for Godot: the game drawn by an engine with a display under a virtual one
(`xvfb-run`, software OpenGL: Godot 4's Compatibility renderer, the full Godot 3 engine `godot3`
for a Godot 3 project, never its server build). Two ways to a frame:

- rlcrate's bundled games answer the `frame` message over their own connection (sync.gd): the
  engine runs with `--disable-render-loop` and draws only the frames asked for.
- A project or an exported game of one's own speaks godot-rl's protocol through godot-rl's
  plugin, which has no such message: it runs with its render loop on, under an Xvfb that keeps
  its screen in a file (`screen`), and a frame is that screen read off the file.

Drawing only reads the game's state, so a recorded evaluation scores the same episodes as a
headless one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from runner.errors import BackendUnavailable, FieldProblem

# The window holds the first instance's arena (400 x 400 and its walls), the one a frame shows;
# the virtual screen is a little larger.
WINDOW = "408x408"
SCREEN = "-screen 0 640x480x24"
# A game of one's own without eval.video.size: its project's window size, else Godot's default
DEFAULT_WINDOW = (1152, 648)
DEFAULT_WINDOW_3 = (1024, 600)
APT = "apt-get install xvfb xauth"
# Godot 4 draws through OpenGL under Xvfb (no Vulkan there): its Compatibility renderer.
OPENGL = ("--rendering-driver", "opengl3")


def drawing_binary(major: int) -> str | None:
    """The engine that draws a Godot `major` game here, or None: Godot 4's one binary, or the
    full Godot 3 engine (`godot3`; its server build draws nothing)."""
    from runner.backends.godot import engine

    if major == 4:
        try:
            return engine.godot_binary(4)[0]
        except BackendUnavailable:
            return None
    for name in ("godot3", "godot"):
        path = shutil.which(name)
        version = engine.probe_version(path) if path else None
        if path and version and version.startswith("3.") and "server" not in Path(path).name:
            return path
    return None


def video_problems(kind: str, major: int | None) -> list[FieldProblem]:
    """Why a game of this kind ('game', 'project', 'binary'; Godot `major`, None for an exported
    game, its own engine) cannot be recorded here."""
    needs = [("xvfb-run", shutil.which("xvfb-run"), APT)]
    if major == 4:
        needs.insert(0, ("a Godot 4 engine", drawing_binary(4), "make godot4"))
    elif major == 3:
        needs.insert(
            0, ("the full Godot 3 engine (godot3)", drawing_binary(3), "apt-get install godot3")
        )
    missing = [(what, how) for what, found, how in needs if not found]
    if missing:
        msg = (
            f"the godot backend records through an engine with a display under a virtual one, "
            f"and this machine lacks {' and '.join(w for w, _ in missing)}: "
            f"{'; '.join(h for _, h in missing)}"
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


def drawing_head(binary: str, project: Path) -> list[str]:
    """The start of a bundled game's drawing process: Xvfb around the engine, no sound card,
    nothing drawn but the frames asked for (the game draws each one itself, on demand: without
    --disable-render-loop the engine draws every tick, in software, recorded or not)."""
    return [
        *_software_xvfb(SCREEN),
        *(binary, "--path", str(project), *OPENGL, "--audio-driver", "Dummy"),
        *("--resolution", WINDOW, "--disable-render-loop"),
    ]


def screen_head(
    binary: str | None, path: Path, window: tuple[int, int], fbdir: Path, *, godot4: bool
) -> list[str]:
    """The start of a drawing process for a project (`binary`: its engine) or an exported game
    (`binary` None) of one's own: its Xvfb's screen is the window's size and kept in
    `fbdir/Xvfb_screen0`; the window fills it from 0,0, and the render loop stays on (the game
    draws every tick by itself: nothing can ask a foreign game to draw)."""
    w, h = window
    # no pointer drawn into the picture
    head = _software_xvfb(f"-screen 0 {w}x{h}x24 -nocursor -fbdir {fbdir}")
    game = [str(path)] if binary is None else [binary, "--path", str(path)]
    gl = list(OPENGL) if godot4 else []
    return [*head, *game, *gl, "--audio-driver", "Dummy", "--resolution", f"{w}x{h}",
            "--position", "0,0"]  # fmt: skip


def project_window(project: Path) -> tuple[int, int]:
    """A project's window size (project.godot's [display]: Godot 4's window/size/viewport_width
    and _height, Godot 3's window/size/width and height), else that Godot's default."""
    text = (project / "project.godot").read_text(errors="replace")
    godot4 = re.search(r"^config_version\s*=\s*[5-9]", text, re.MULTILINE) is not None
    default = DEFAULT_WINDOW if godot4 else DEFAULT_WINDOW_3
    keys = ("viewport_width", "viewport_height") if godot4 else ("width", "height")
    section = re.search(r"^\[display\]\s*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    if section is None:
        return default
    sides = [
        re.search(rf"^window/size/{key}\s*=\s*(\d+)", section.group(1), re.MULTILINE)
        for key in keys
    ]
    return (
        int(sides[0].group(1)) if sides[0] else default[0],
        int(sides[1].group(1)) if sides[1] else default[1],
    )
