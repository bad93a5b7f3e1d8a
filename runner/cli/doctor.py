"""`rlcrate doctor` and `rlcrate envs`: what this machine can run."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner import __version__
from runner.backends import get_backend, names
from runner.checks import installed

YES, NO = "yes", "no"


def _backend_row(name: str) -> tuple[str, str, str]:
    """(installed, usable, detail): an install hint only for what could then run here."""
    try:
        module = get_backend(name)
        reason = module.available()
    except Exception as exc:  # a broken install is reported, not raised
        return "?", NO, f"{type(exc).__name__}: {exc}"
    missing = installed.missing_packages(name)
    if reason is None and not missing:
        return YES, YES, ""
    if missing and module.TRAITS.install:
        return NO, NO, reason or ""  # its own install advice (Isaac Lab, Brax)
    if missing:
        hint = module.TRAITS.program_hint
        no_program = hint and any("error" in v for v in module.versions().values())
        extra = f" (and {hint})" if no_program else ""
        return NO, NO, f"{', '.join(missing)} missing: {installed.install_hint(name)}{extra}"
    return YES, NO, reason or ""


def _program_rows() -> list[tuple[str, str, str, str]]:
    """One row per external program a backend runs (its `versions()`), e.g. the Godot binary."""
    rows = []
    for name in names():
        try:
            programs = get_backend(name).versions()
        except Exception as exc:  # a broken install is reported, not raised
            programs = {name: {"error": f"{type(exc).__name__}: {exc}"}}
        for program, info in programs.items():
            if "error" in info:
                rows.append((f"{program} binary", NO, NO, str(info["error"])))
            else:
                detail = f"{info.get('path')} ({info.get('version')})"
                rows.append((f"{program} binary", YES, YES, detail))
    return rows


def _plugin_rows() -> list[tuple[str, str, str, str]]:
    """One row per plugin an installed package adds (entry points): usable when it imports."""
    from runner import plugins
    from runner.backends import get_backend
    from runner.errors import UserInputError
    from runner.executors import get_executor
    from runner.trainers import get_trainer

    made = {"backend": get_backend, "trainer": get_trainer, "executor": get_executor}
    rows = []
    for kind in plugins.GROUPS:
        for plugin in plugins.installed(kind).values():
            if plugin.package == plugins.RLCRATE:
                continue  # rlcrate's own: their rows are above (backends) or need none
            what = f"{kind} {plugin.name} ({plugin.package})"
            try:
                made[kind](plugin.name)  # imported, the class it should be, and made
            except UserInputError as exc:
                rows.append((what, YES, NO, f"broken: {exc}"))
                continue
            rows.append((what, YES, YES, plugin.module))
    return rows


def _engine_rows(probe: bool) -> list[tuple[str, str, str, str]]:
    """One row per engine on PATH: usable only when it answers (docker: its daemon) and, where
    answering proves nothing (podman), starts a container: that probe's finding is reused while
    the engine's binary and answer are the same, with its age (`probe`: probe afresh)."""
    rows = []
    from runner.images.engine import ENGINES

    for engine in ENGINES:
        problem, probed = installed.engine_probe(engine, fresh=probe)
        if problem == "not installed":
            continue
        detail = problem or ""
        if probed is not None:
            age = f"container probe of {_age(time.time() - probed)} ago; doctor --probe: again"
            detail = f"{detail} ({age})" if detail else age
        rows.append((f"engine {engine}", YES, NO if problem else YES, detail))
    return rows or [("container engine", NO, NO, "install docker, podman or buildah for images")]


def _apptainer_row() -> tuple[str, str, str, str]:
    """Apptainer, which runs a .sif (`--image FILE.sif`): where, which version, and whether it
    can make its namespaces here."""
    from runner.images.sif import probe as apptainer_probe

    found, problem = apptainer_probe()
    detail = "; ".join(x for x in (found, problem) if x)
    return ("apptainer", YES if found else NO, NO if problem else YES, detail)


def _age(seconds: float) -> str:
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if unit == 'day' and n > 1 else ''}"
    return f"{max(0, int(seconds))} s"


def _gpu() -> tuple[bool, str]:
    from runner.record.machine import gpu_info

    info: dict[str, Any] = gpu_info()
    if not info["gpus"]:
        return False, "none (no nvidia-smi or no GPU)"
    names = "; ".join(f"{g['name']} {g.get('memory', '')}" for g in info["gpus"])
    return True, f"{names}, driver {info['driver']}"


def _said_once(rows: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """Several rows fail for one reason (no GPU environment: Isaac Lab's backend, binary and
    Python); the first says how to fix it, the others point at that row."""
    from runner.backends.base import GPU_ENV_HINT

    first: dict[str, str] = {}  # detail (or the hint) -> the row that said it first
    out = []
    for what, inst, usable, detail in rows:
        if detail and detail in first:
            detail = f"as for {first[detail]}"
        elif detail:
            first[detail] = what
            if GPU_ENV_HINT in detail:
                hinted = first.setdefault(GPU_ENV_HINT, what)
                if hinted != what:
                    detail = detail.replace(GPU_ENV_HINT, f"see {hinted}")
        out.append((what, inst, usable, detail))
    return out


def doctor(console: Console, probe: bool = False) -> None:
    """Installed (its packages or binary are here) versus usable (it works on this machine).
    `probe`: start a container with each engine that needs it, rather than reuse the last
    probe's finding."""
    from runner.record.machine import cpu_info

    gpus, gpu_text = _gpu()
    table = Table(title=f"rlcrate {__version__} doctor", show_lines=False)
    for col in ("what", "installed", "usable"):
        table.add_column(col)
    table.add_column("detail", overflow="fold")
    train = [m for m in installed.TRAIN_MODULES if not installed.has_module(m)]
    hint = f"{', '.join(train)} missing: pip install 'rlcrate[train]'" if train else ""
    rows = [("training (SB3, torch)", NO if train else YES, NO if train else YES, hint)]
    rows += [(f"backend {name}", *_backend_row(name)) for name in names()]
    rows += _plugin_rows() + _program_rows() + _engine_rows(probe) + [_apptainer_row()]
    rows.append(("GPU", YES if gpus else NO, YES if gpus else NO, gpu_text))
    from runner.cli.doctor_accel import OK, accelerator_rows

    rows += [(what, "", YES if ok == OK else NO, detail) for what, ok, detail in accelerator_rows()]
    for what, inst, usable, detail in _said_once(rows):
        table.add_row(what, inst, usable, escape(detail))
    cpu = cpu_info()
    table.add_row("CPU", "", "", f"{cpu['model']}, {cpu['count']} cores ({cpu['usable']} usable)")
    table.add_row("image", "", "", os.environ.get("RLCRATE_IMAGE") or "not in an rlcrate image")
    console.print(table)


def list_envs(console: Console, backend: str | None, all_ids: bool) -> None:
    """A sample of each backend's ids; with `all_ids`, every id on its own line (plain text, for
    grep): `ID` for one backend, `BACKEND ID` for all of them."""
    chosen = [backend] if backend else names()
    for name in chosen:
        module = get_backend(name)
        reason = module.available()
        if reason:
            if all_ids:  # stderr: the listing itself stays ids only
                print(f"{name}: unavailable ({reason})", file=sys.stderr)
            else:
                console.print(f"[bold]{name}[/]: unavailable ({escape(reason)})")
            continue
        ids = sorted(module.env_ids(), key=lambda i: ("/" in i, i))  # plain ids before namespaced
        notes = module.id_notes()
        if all_ids:  # a note after the id, in parentheses: the id stays the line's first word
            marked = [f"{i} ({notes[i]})" if i in notes else i for i in ids]
            print("\n".join(i if backend else f"{name} {i}" for i in marked))
            continue
        namespaces: dict[str, int] = {}
        for i in ids:
            if "/" in i:
                namespaces[i.split("/")[0]] = namespaces.get(i.split("/")[0], 0) + 1
        more = f" ... and {len(ids) - 15} more (--all)" if len(ids) > 15 else ""
        groups = "".join(f"; {ns}/* ({n})" for ns, n in namespaces.items())
        shown = [f"{i}*" if i in notes else i for i in ids[:15]]
        listing = escape(f"{', '.join(shown)}{more}")
        console.print(f"[bold]{name}[/] ({len(ids)} ids{groups}): {listing}")
        for note in sorted(set(notes.values())):
            count = sum(1 for v in notes.values() if v == note)
            console.print(f"  * {escape(note)} ({count} ids: --all lists them)")
