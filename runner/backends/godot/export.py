"""`rlcrate godot export`: a Godot 4 project exported as a headless game binary, the godot-rl
course's "export a headless binary" step, with the Linux release template of the Godot in use.

The export is Godot's own (`godot --headless --export-release PRESET OUT`), run with folders of
its own for the editor's data, settings and cache (the template is found there, as Godot's editor
finds installed templates), so nothing of the user's Godot settings changes. It writes GAME and,
beside it, GAME's .pck, into a temporary folder first; they replace nothing unless `force`.

A template from an rlcrate install (images/godot/install.sh: Debian's, which needs a newer C
library than Debian 12's) gets what it needs beside it: GAME.libs/ holds its libraries and their
dynamic loader (hard links into the install where the file system allows, else copies), and the
binary names that loader and `$ORIGIN/GAME.libs` (patchelf). The game then runs as exported, for
that process alone; a program it starts runs with the system's libraries.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from runner.backends.godot import engine
from runner.errors import BackendUnavailable, RunnerError, UserInputError

PRESET_FILE = "export_presets.cfg"
EXPORT_TIMEOUT_S = 900.0  # a large project's first import of its assets included
# Libraries Godot opens at run time rather than linking (its X11, GL and sound wrappers), carried
# with an exported game so that it draws under a virtual display too (eval.video).
DLOPENED = (
    "libX11.so.6", "libX11-xcb.so.1", "libXcursor.so.1", "libXext.so.6", "libXinerama.so.1",
    "libXrandr.so.2", "libXrender.so.1", "libXi.so.6", "libxkbcommon.so.0", "libGL.so.1",
    "libGLX.so.0", "libGLdispatch.so.0", "libEGL.so.1", "libasound.so.2", "libpulse.so.0",
    "libdbus-1.so.3", "libudev.so.1", "libfontconfig.so.1",
)  # fmt: skip
_LINUX_PRESET = """[preset.0]

name="{name}"
platform="Linux"
runnable=true
dedicated_server=false
custom_features=""
export_filter="all_resources"
include_filter=""
exclude_filter=""
export_path=""

[preset.0.options]

custom_template/debug=""
custom_template/release=""
debug/export_console_wrapper=0
binary_format/embed_pck=false
binary_format/architecture="x86_64"
"""


@dataclass(frozen=True)
class Exported:
    binary: Path
    pck: Path
    libs: Path | None  # GAME.libs/, when the template needs what it carries
    godot: str  # the engine's version
    template: Path
    preset: str
    wrote_preset: bool  # the project had no export_presets.cfg: a Linux preset was added
    seconds: float


def bundled_project(game_id: str, games_dir: Path, into: Path, instances: int | None) -> Path:
    """A copy of a bundled game's project in `into`, its scene holding `instances` arenas (the
    course's duplicated env roots) when given."""
    project = Path(shutil.copytree(games_dir / game_id, into / game_id))
    if instances is not None:
        scene = project / "main.tscn"
        text = scene.read_text()
        node = re.search(
            r'^\[node name="Arena" parent="\." instance=ExtResource\("2"\)\]\n', text, re.M
        )
        if node is None:
            raise RunnerError(f"{scene} has no Arena node to duplicate")
        copies = "".join(
            f'\n[node name="Arena{i + 1}" parent="." instance=ExtResource("2")]\n'
            for i in range(1, instances)
        )
        scene.write_text(text.rstrip("\n") + "\n" + copies)
    return project


def linux_preset(project: Path, preset: str | None) -> tuple[str, bool]:
    """(the preset's name, whether rlcrate wrote export_presets.cfg): the project's first Linux
    preset or the one named; a project without export_presets.cfg gets a Linux preset (Godot's
    editor would write the same file); one whose file lacks it is refused."""
    path = project / PRESET_FILE
    if not path.exists():
        if preset is not None:
            raise UserInputError(f"--preset {preset}: {project} has no {PRESET_FILE}")
        path.write_text(_LINUX_PRESET.format(name="Linux"))
        return "Linux", True
    text = path.read_text(errors="replace")
    found = re.findall(r'^name="([^"]*)"\s*\nplatform="([^"]*)"', text, re.M)
    linux = [name for name, platform in found if platform == "Linux"]
    if preset is not None:
        if preset not in [name for name, _ in found]:
            raise UserInputError(
                f"--preset {preset}: {path} has no preset of that name "
                f"(it has {', '.join(n for n, _ in found) or 'none'})"
            )
        if preset not in linux:
            raise UserInputError(f"--preset {preset}: {path} says it is not a Linux preset")
        return preset, False
    if not linux:
        raise UserInputError(
            f"{path} has no Linux preset: add one in Godot's editor (Project > Export > Add > "
            f"Linux), or name one with --preset"
        )
    return linux[0], False


def _check_out(out: Path, force: bool) -> list[Path]:
    """GAME, GAME.pck and GAME.libs; refused when one exists and is not replaceable."""
    if out.parent.exists() and not out.parent.is_dir():
        raise UserInputError(f"-o {out}: {out.parent} is not a folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    targets = [out, out.with_suffix(".pck"), out.parent / f"{out.name}.libs"]
    for path in targets:
        if path.is_symlink() or (
            path.exists() and not (path.is_file() or path.name.endswith(".libs"))
        ):
            raise UserInputError(f"-o {out}: {path} exists and is not a game file rlcrate writes")
        if path.exists() and not force:
            raise UserInputError(f"-o {out}: {path} exists (--force replaces it)")
    return targets


def _godot_env(scratch: Path, template: Path, version: str) -> dict[str, str]:
    """The export's own editor folders: data (the template where Godot looks), settings, cache."""
    env = dict(os.environ)
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env[var] = str(scratch / var.lower())
        Path(env[var]).mkdir()
    where = scratch / "xdg_data_home/godot/export_templates" / engine.short_version(version)
    where.mkdir(parents=True)
    (where / "linux_release.x86_64").symlink_to(template.resolve())
    return env


def _run_export(
    binary: str, project: Path, preset: str, into: Path, env: dict[str, str], log: Path
) -> None:
    argv = [binary, "--headless", "--path", str(project), "--export-release", preset, str(into)]
    with open(log, "wb") as out:
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=env, timeout=EXPORT_TIMEOUT_S, start_new_session=True,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise RunnerError(f"Godot's export did not end within {EXPORT_TIMEOUT_S:g} s") from None
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or "export failed" in text.lower() or not into.is_file():
        errors = [ln.strip() for ln in text.splitlines() if "ERROR" in ln or "failed" in ln]
        tail = " | ".join((errors or text.strip().splitlines() or ["no output"])[-3:])
        raise RunnerError(f"Godot's export failed (exit status {proc.returncode}): {tail}")


def _closure(info: dict, files: list[Path]) -> set[Path]:
    """Every library `files` load, as the install's own loader resolves them in its folders."""
    libs: set[Path] = set()
    path = ":".join(info["library_path"])
    for f in files:
        out = subprocess.run(
            [info["loader"], "--library-path", path, "--list", str(f)],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if out.returncode != 0:
            raise RunnerError(f"cannot list the libraries of {f}: {out.stderr.strip()[:200]}")
        libs |= {Path(m) for m in re.findall(r"=> (/\S+)", out.stdout)}
    return libs


def _carry_libraries(info: dict, binary: Path, libs_dir: Path, final_libs: Path) -> None:
    """`libs_dir` filled with the template's libraries, those it opens at run time and the
    loader; the binary pointed at them where they will be (`final_libs`): its loader by absolute
    path (an ELF interpreter cannot be relative), its libraries by `$ORIGIN`."""
    patchelf = shutil.which("patchelf")
    if patchelf is None:
        raise BackendUnavailable(
            "exporting with this template needs patchelf (apt-get install patchelf)"
        )
    dirs = [Path(d) for d in info["library_path"]]
    opened = [d / name for name in DLOPENED for d in dirs if (d / name).exists()]
    loader = Path(info["loader"])
    libs_dir.mkdir()
    for lib in sorted({*_closure(info, [binary, *opened]), *opened, loader}):
        target = libs_dir / lib.name
        if target.exists():
            continue
        try:
            os.link(os.path.realpath(lib), target)
        except OSError:  # another file system: a copy
            shutil.copy2(os.path.realpath(lib), target)
    argv = [
        patchelf, "--set-interpreter", str(final_libs / loader.name),
        "--force-rpath", "--set-rpath", f"$ORIGIN/{final_libs.name}", str(binary),
    ]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RunnerError(
            f"patchelf could not point {binary.name} at its libraries: {out.stderr.strip()[:200]}"
        )


def export_game(
    source: str,
    out: Path,
    *,
    games_dir: Path,
    instances: int | None = None,
    preset: str | None = None,
    force: bool = False,
) -> Exported:
    """Export the bundled game `source` (an id of `games_dir`) or the Godot 4 project folder
    `source` to `out` (see the module's docstring)."""
    started = time.monotonic()
    out = out.expanduser().absolute()
    targets = _check_out(out, force)
    bundled = (games_dir / source / "project.godot").is_file() and "/" not in source
    project = None if bundled else Path(source).expanduser()
    if project is not None:
        if not (project / "project.godot").is_file():
            raise UserInputError(
                f"{source} is neither a bundled game ({', '.join(_bundled(games_dir))}) nor a "
                "Godot project folder (no project.godot)"
            )
        major = engine.project_major(project)
        if major != 4:
            raise UserInputError(
                f"{project} is a Godot {major} project; rlcrate exports Godot 4 projects (open "
                "it in Godot 4 to convert it, or export it with Godot 3's own editor)"
            )
        if instances is not None:
            raise UserInputError(
                "--instances sets the arena count of a bundled game; a project's agents are "
                "the ones its scene holds"
            )
    if instances is not None and not 1 <= instances <= 1024:
        raise UserInputError(f"--instances: expected 1 to 1024, got {instances}")
    binary, version = engine.godot_binary(4)
    template = engine.export_template(binary, version)
    info = engine.install_info(binary)
    with tempfile.TemporaryDirectory(prefix=".rlcrate-export-", dir=out.parent) as tmp:
        scratch = Path(tmp)
        if project is None:
            project = bundled_project(source, games_dir, scratch, instances)
        name, wrote = linux_preset(project, preset)
        staged = scratch / "out" / out.name
        staged.parent.mkdir()
        log = scratch / "export.log"
        _run_export(binary, project, name, staged, _godot_env(scratch, template, version), log)
        libs = None
        if info is not None and Path(os.path.realpath(template)) == Path(
            os.path.realpath(info["template"])
        ):
            libs = targets[2]
            _carry_libraries(info, staged, staged.parent / libs.name, libs)
        for target in targets:
            src = staged.parent / target.name
            if target.exists():
                shutil.rmtree(target) if target.is_dir() else target.unlink()
            if src.exists():
                os.replace(src, target)
    return Exported(
        binary=out, pck=targets[1], libs=libs, godot=version, template=template, preset=name,
        wrote_preset=wrote and not bundled, seconds=time.monotonic() - started,
    )  # fmt: skip


def _bundled(games_dir: Path) -> list[str]:
    return sorted(p.parent.name for p in games_dir.glob("*/project.godot"))
