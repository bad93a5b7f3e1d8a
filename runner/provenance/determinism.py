"""How far a backend's results can be expected to repeat, and what `check-determinism` found.

Two levels. `bitwise`: the same manifest and seed give identical eval returns, on the same CPU,
image and package versions. `statistical`: only the distribution repeats (GPU kernels, wall-clock
pacing, thread races), so `reproduce` compares with a statistical test instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.manifest import Manifest

from runner.backends.base import BITWISE, STATISTICAL
from runner.record.provenance import DeterminismCheck
from runner.record.rundir import checked


def declared(config: Manifest) -> tuple[str, str]:
    """(level, why) for one variant's resolved config."""
    from runner.backends import get_backend

    env, algo = config.env, config.algo
    backend = get_backend(env.backend)
    if backend.TRAITS.determinism == STATISTICAL:
        return STATISTICAL, f"{env.backend} runs on an accelerator"
    why = backend.nondeterminism(env)
    if why:
        return STATISTICAL, why
    why = algo.nondeterminism()
    if why:
        return STATISTICAL, why
    return BITWISE, f"{env.backend} on CPU with one torch thread"


def resume_level(
    backend_name: str,
    env: Any = None,
    checked: DeterminismCheck | None = None,
    trainer: str | None = None,
) -> str:
    """`exact`: a unit stopped at any moment (even SIGKILL) and resumed from a checkpoint ends
    bit-identical to one run without a stop; `approximate: why` otherwise (its envs restart
    their episodes on resume). `env`: one variant's env options, for the per-env exceptions.
    `checked`: a `check-determinism --resume` result recorded for this backend here, which
    overrules a declared `exact` it contradicts. `trainer`: the loop's name, when known: one
    without the `ResumesExactly` ability resumes approximately whatever the backend."""
    from runner.backends import get_backend
    from runner.backends.base import resume_approximate

    why = resume_approximate(get_backend(backend_name), env)
    if why is None and trainer is not None:
        from runner.trainers import get_trainer
        from runner.trainers.abilities import ResumesExactly

        if not isinstance(get_trainer(trainer), ResumesExactly):
            why = f"the {trainer} trainer's checkpoints do not hold all its loop continues from"
    if why:
        return f"approximate: {why}"
    if checked is not None and checked.result != "exact":
        differ = " and ".join(checked.differ or ["the results"])
        return f"approximate: check-determinism --resume found {differ} differ (on {checked.env})"
    return "exact"


def level(config: Manifest, recorded: dict[str, DeterminismCheck]) -> tuple[str, str]:
    """The declared level, overruled by a `check-determinism` result recorded for this backend
    (in the archived run's provenance, read through its model)."""
    lvl, why = declared(config)
    check = recorded.get(config.env.backend)
    if lvl == BITWISE and check is not None and check.result != BITWISE:
        return STATISTICAL, f"check-determinism found {check.result}"
    if lvl == BITWISE and check is not None:
        return BITWISE, why + "; check-determinism: bitwise"
    return lvl, why


def cache_file() -> Path:
    from runner.record.cache import cache_dir

    return cache_dir() / "determinism.json"


def fingerprint() -> str:
    """This environment, as far as determinism is concerned: CPU, Python, key packages, image."""
    import hashlib
    import sys

    from runner import provenance
    from runner.provenance.envdiff import KEY_PACKAGES

    pkgs = {k.lower().replace("_", "-"): v for k, v in provenance.packages().items()}
    text = json.dumps(
        [
            provenance.cpu_info()["model"],
            sys.version,
            {k: pkgs.get(k) for k in KEY_PACKAGES},
            os.environ.get("RLCRATE_IMAGE_DIGEST"),
        ],
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# The key, beside the backends' own, of `check-determinism --resume` results: backend ->
# trainer -> result (the kill and the resume are the trainer's as much as the backend's).
RESUME = "resume"


def _read_cache() -> dict[str, Any]:
    """The cache's content as data: a file that is not a JSON object (damaged, or not a file)
    is an empty cache, never a value copied on."""
    from runner.record.rundir import read_json

    try:
        data = read_json(cache_file())
    except OSError:  # RLCRATE_CACHE_DIR a regular file: nothing can be under it
        return {}
    return data if isinstance(data, dict) else {}


def _checks(entries: Any) -> dict[str, DeterminismCheck]:
    """The entries that are checks (DeterminismCheck); anything else in their place is dropped:
    a cache costs only a recheck."""
    if not isinstance(entries, dict):
        return {}
    out = {}
    for backend, value in entries.items():
        check = checked(DeterminismCheck, value) if backend != RESUME else None
        if check is not None:
            out[str(backend)] = check
    return out


def _resume_checks(entries: Any) -> dict[str, dict[str, DeterminismCheck]]:
    """backend -> trainer -> check; anything else dropped, an entry of the older per-backend
    form (a verdict of no known trainer) too."""
    if not isinstance(entries, dict):
        return {}
    found = {str(b): _checks(per) for b, per in entries.items()}
    return {b: per for b, per in found.items() if per}


def _dump(result: dict[str, Any]) -> dict[str, Any]:
    return DeterminismCheck.model_validate(result).model_dump(mode="json")


def record(backend: str, result: dict[str, Any]) -> str | None:
    """Remember a `check-determinism` result for this environment; later runs put it in
    provenance. Returns why it could not be remembered (the cache is not writable), else None:
    the check's verdict stands either way."""

    def put(checks: dict[str, Any], resumed: dict[str, dict[str, Any]]) -> None:
        checks[backend] = _dump(result)

    return _update(put)


def record_resume(backend: str, trainer: str, result: dict[str, Any]) -> str | None:
    """Remember a `check-determinism --resume` result for this environment, for the backend
    and the trainer it was found with (as `record`)."""

    def put(checks: dict[str, Any], resumed: dict[str, dict[str, Any]]) -> None:
        resumed.setdefault(backend, {})[trainer] = _dump(result)

    return _update(put)


def _update(put: Callable[[dict[str, Any], dict[str, dict[str, Any]]], None]) -> str | None:
    from runner.record.rundir import write_json_atomic

    data = _read_cache()
    mine = data.get(fingerprint())
    mine = mine if isinstance(mine, dict) else {}
    checks = {k: v.model_dump(mode="json") for k, v in _checks(mine).items()}
    resumed = {
        b: {t: v.model_dump(mode="json") for t, v in per.items()}
        for b, per in _resume_checks(mine.get(RESUME)).items()
    }
    put(checks, resumed)
    data[fingerprint()] = {**checks, RESUME: resumed}
    try:
        write_json_atomic(cache_file(), data)
    except OSError as exc:
        from runner.record.cache import unusable

        return f"the result is not remembered for later runs' provenance: {unusable(exc)}"
    return None


def _mine() -> dict[str, Any]:
    mine = _read_cache().get(fingerprint())
    return mine if isinstance(mine, dict) else {}


def recorded(backends: set[str]) -> dict[str, DeterminismCheck]:
    """The `check-determinism` results recorded for this environment, for the given backends,
    each read through its model."""
    found = _checks(_mine())
    return {b: found[b] for b in sorted(backends) if b in found}


def recorded_resume(
    trainers: Mapping[str, Iterable[str]],
) -> dict[str, dict[str, DeterminismCheck]]:
    """The `check-determinism --resume` results recorded for this environment: backend ->
    trainer -> result, for the trainers each backend's units train with (`trainers`)."""
    found = _resume_checks(_mine().get(RESUME))
    out = {}
    for backend in sorted(trainers):
        per = {
            t: found[backend][t] for t in sorted(trainers[backend]) if t in found.get(backend, {})
        }
        if per:
            out[backend] = per
    return out
