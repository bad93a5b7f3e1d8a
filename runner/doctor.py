"""`rlcrate doctor` and `rlcrate envs`: what this machine can run."""

from __future__ import annotations

import os
import shutil
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runner import __version__
from runner.backends import BACKENDS, get_backend


def _backend_rows() -> list[tuple[str, str, str]]:
    rows = []
    for name in BACKENDS:
        try:
            reason = get_backend(name).available()
        except Exception as exc:  # a broken install is reported, not raised
            reason = f"{type(exc).__name__}: {exc}"
        rows.append((name, "[green]ok[/]" if reason is None else "[red]no[/]", reason or ""))
    return rows


def _program_rows() -> list[tuple[str, str, str]]:
    """One row per external program a backend runs (its `versions()`), e.g. the Godot binary."""
    rows = []
    for name in BACKENDS:
        try:
            programs = get_backend(name).versions()
        except Exception as exc:  # a broken install is reported, not raised
            programs = {name: {"error": f"{type(exc).__name__}: {exc}"}}
        for program, info in programs.items():
            if "error" in info:
                rows.append((f"{program} binary", "[red]no[/]", str(info["error"])))
            else:
                rows.append(
                    (
                        f"{program} binary",
                        "[green]ok[/]",
                        f"{info.get('path')} ({info.get('version')})",
                    )
                )
    return rows


def _engines() -> str:
    from runner.images.engine import ENGINES

    found = [e for e in ENGINES if shutil.which(e)]
    return ", ".join(found) or "none (install docker, podman or buildah to build images)"


def _gpu() -> str:
    from runner.provenance import gpu_info

    info: dict[str, Any] = gpu_info()
    if not info["gpus"]:
        return "none (no nvidia-smi or no GPU)"
    return (
        "; ".join(f"{g['name']} {g.get('memory', '')}" for g in info["gpus"])
        + f", driver {info['driver']}"
    )


def doctor(console: Console) -> None:
    from runner.provenance import cpu_info

    table = Table(title=f"rlcrate {__version__} doctor", show_lines=False)
    table.add_column("what")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    for name, ok, reason in _backend_rows():
        table.add_row(f"backend {name}", ok, escape(reason))
    for what, ok, detail in _program_rows():
        table.add_row(what, ok, escape(detail))
    table.add_row("container engines", "", _engines())
    table.add_row("GPU", "", _gpu())
    from runner.doctor_accel import accelerator_rows

    for what, ok, detail in accelerator_rows():
        table.add_row(what, ok, escape(detail))
    cpu = cpu_info()
    table.add_row("CPU", "", f"{cpu['model']}, {cpu['count']} cores ({cpu['usable']} usable)")
    table.add_row("image", "", os.environ.get("RLCRATE_IMAGE") or "not running in an rlcrate image")
    console.print(table)


def list_envs(console: Console, backend: str | None, all_ids: bool) -> None:
    names = [backend] if backend else list(BACKENDS)
    for name in names:
        module = get_backend(name)
        reason = module.available()
        if reason:
            console.print(f"[bold]{name}[/]: unavailable ({escape(reason)})")
            continue
        ids = sorted(module.env_ids(), key=lambda i: ("/" in i, i))  # plain ids before namespaced
        namespaces: dict[str, int] = {}
        for i in ids:
            if "/" in i:
                namespaces[i.split("/")[0]] = namespaces.get(i.split("/")[0], 0) + 1
        shown = ids if all_ids else ids[:15]
        more = "" if all_ids or len(ids) <= 15 else f" ... and {len(ids) - 15} more (--all)"
        groups = "".join(f"; {ns}/* ({n})" for ns, n in namespaces.items())
        listing = escape(f"{', '.join(shown)}{more}")
        console.print(f"[bold]{name}[/] ({len(ids)} ids{groups}): {listing}")
