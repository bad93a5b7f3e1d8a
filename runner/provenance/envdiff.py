"""What differs between the environment an archived run ran in and this one."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from runner import __version__, provenance

# The packages whose versions decide the numbers; any other difference is counted, not listed.
KEY_PACKAGES = (
    "torch",
    "numpy",
    "stable-baselines3",
    "sb3-contrib",
    "gymnasium",
    "envpool",
    "godot-rl",
    "jax",
    "scipy",
    "tensorboard",
)


@dataclass(frozen=True)
class Row:
    what: str
    archived: str
    here: str

    @property
    def same(self) -> bool:
        return self.archived == self.here


def _norm(pkgs: dict[str, str]) -> dict[str, str]:
    return {k.lower().replace("_", "-"): v for k, v in pkgs.items()}


def current(backends: set[str]) -> dict[str, Any]:
    """The parts of provenance that `reproduce` compares, for this machine and process."""
    return {
        "rlcrate": __version__,
        "python": {"version": sys.version},
        "packages": provenance.packages(),
        "cpu": provenance.cpu_info(),
        "gpu": provenance.gpu_info(),
        **(programs := provenance.backend_programs(backends)),
        provenance.PROGRAMS: sorted(programs),
        "image": {
            "tag": os.environ.get("RLCRATE_IMAGE"),
            "digest": os.environ.get("RLCRATE_IMAGE_DIGEST"),
        },
    }


def _gpus(p: dict[str, Any]) -> str:
    g = p.get("gpu") or {}
    names = ", ".join(x.get("name", "?") for x in g.get("gpus") or [])
    return f"{names} (driver {g.get('driver')})" if names else "none"


def _digest(obj: Any) -> str:
    if not obj:
        return "-"
    text = json.dumps(obj, sort_keys=True).encode()
    return hashlib.sha256(text).hexdigest()[:12]


def _s(value: Any) -> str:
    return "-" if value in (None, "") else str(value)


def diff(old: dict[str, Any], new: dict[str, Any], game_old: Any, game_new: Any) -> list[Row]:
    """Every compared item, archived vs here (rows whose values agree included)."""

    def row(what: str, section: str, key: str) -> Row:
        return Row(
            what, _s((old.get(section) or {}).get(key)), _s((new.get(section) or {}).get(key))
        )

    py = row("Python", "python", "version")
    rows = [
        Row("rlcrate", _s(old.get("rlcrate")), _s(new.get("rlcrate"))),
        Row("Python", py.archived.split()[0], py.here.split()[0]),
        row("image", "image", "tag"),
        row("image digest", "image", "digest"),
        row("CPU", "cpu", "model"),
        Row("GPU", _gpus(old), _gpus(new)),
    ]
    mine, theirs = provenance.programs_of(old), provenance.programs_of(new)
    for name in sorted(set(mine) | set(theirs)):  # the backends' programs (the Godot binary)
        if mine.get(name) or theirs.get(name):
            rows.append(row(f"{name} (program)", name, "version"))
    if game_old:
        rows.append(Row("game files (SHA-256)", _digest(game_old), _digest(game_new)))
    a, b = _norm(old.get("packages") or {}), _norm(new.get("packages") or {})
    for name in KEY_PACKAGES:
        if name in a or name in b:
            rows.append(Row(name, _s(a.get(name)), _s(b.get(name))))
    others = sorted(n for n in set(a) | set(b) if n not in KEY_PACKAGES and a.get(n) != b.get(n))
    if others:
        listed = ", ".join(f"{n} {a.get(n, '-')} -> {b.get(n, '-')}" for n in others[:5])
        rows.append(
            Row("other packages", f"{len(others)} differ", listed + " ..." * (len(others) > 5))
        )
    return rows


def same_platform(rows: list[Row]) -> bool:
    """Whether bitwise equality can be expected: only rlcrate's own version may differ, plus
    packages that do not enter the numbers."""
    decisive = {"Python", "image digest", "CPU", "GPU", "Godot", "game files (SHA-256)"}
    return all(r.same for r in rows if r.what in decisive or r.what in KEY_PACKAGES)
