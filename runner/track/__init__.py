"""Experiment tracking: each unit of a run becomes a tracked run in MLflow and/or Weights &
Biases, grouped under the rlcrate run, uploaded by the runner after the units end (and by
`rlcrate track RUN_DIR` later, for what could not be uploaded then).

Tracking never fails a unit or a run: a sink that cannot be reached gets one warning and is left
alone for the rest of the run. What each unit has uploaded is recorded in its `track.json`
(tracked run ids, last step per scalar, eval and model fingerprints), so uploading again sends
only what is missing, and a resumed unit continues its tracked run. The libraries are optional
extras, imported only here and only when a manifest asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.manifest.resolved import ResolvedRun

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from runner.errors import BackendUnavailable

# name -> (module to import, "module:class" of its sink), looked up only when a manifest asks
SINKS: Final = {
    "mlflow": ("mlflow", "runner.track.mlflow_sink:MlflowSink"),
    "wandb": ("wandb", "runner.track.wandb_sink:WandbSink"),
}
INSTALL = "pip install 'rlcrate[track]'"


def track_section(res: ResolvedRun) -> dict[str, Any] | None:
    """The run's `track:` section as plain data (None when it has none)."""
    return res.track.model_dump(mode="json") if res.track is not None else None


def wanted(track: Any) -> dict[str, dict[str, Any]]:
    """The sinks a resolved `track:` section (a mapping, or None) asks for: name -> settings."""
    if not isinstance(track, dict):
        return {}
    return {name: spec for name, spec in track.items() if name in SINKS and spec is not None}


def check_installed(track: Any) -> None:
    """BackendUnavailable (exit 2) for a sink whose library is not installed: before any run
    directory exists."""
    for name in wanted(track):
        module = SINKS[name][0]
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install counts as none
            found = False
        if not found:
            raise BackendUnavailable(
                f"track.{name}: {module} is not installed here; {INSTALL} "
                f"(or remove track.{name} from the manifest)"
            )


def _sink_class(name: str) -> Any:
    import importlib

    module, cls = SINKS[name][1].split(":")
    return getattr(importlib.import_module(module), cls)


def track_run(run_dir: Path, res: ResolvedRun, warn: Callable[[str], None]) -> dict[str, int]:
    """Upload what each unit of the run has and its tracked runs lack; returns sink -> units
    brought up to date. Never raises for a sink's failure: `warn` gets one line per sink."""
    from runner.track.state import record_in_provenance
    from runner.track.unit_data import unit_data

    done: dict[str, int] = {}
    units = res.units()
    for name, spec in wanted(track_section(res)).items():
        sink = _sink_class(name)(run_dir, res, spec)
        count = 0
        try:
            sink.open()
            for unit in units:
                data = unit_data(run_dir, res, unit)
                if data is not None and sink.upload(data):
                    count += 1
            sink.close()
        except Exception as exc:  # tracking never fails a run: one warning per sink
            warn(
                f"track.{name}: {sink.where}: {_one_line(exc)}; the run goes on untracked there "
                f"(`rlcrate track {run_dir}` uploads what is missing later)"
            )
        done[name] = count
    record_in_provenance(run_dir, units)
    return done


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
