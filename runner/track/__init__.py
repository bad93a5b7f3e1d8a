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
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from runner.errors import BackendUnavailable
from runner.record.rundir import read_json

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


LOG = "track.log"  # the run directory's: the tracking libraries' own output


def track_run(run_dir: Path, res: ResolvedRun, warn: Callable[[str], None]) -> dict[str, int]:
    """Upload what each unit of the run has and its tracked runs lack; returns sink -> units
    brought up to date. Never raises for a sink's failure: `warn` gets one line per sink.

    The upload runs in its own process (`runner.track.upload`), its output into `track.log`,
    every call bounded there, and the whole bounded here too; ended at once on Ctrl-C."""
    import subprocess
    import sys
    import tempfile

    from runner.track.state import record_in_provenance, sweep

    sinks = wanted(track_section(res))
    units = res.units()
    sweep(run_dir, units)  # what an upload killed outright left
    limit = _limit(len(units), len(sinks))
    root = str(Path(__file__).resolve().parents[2])  # the runner this process runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="rlcrate-track-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "runner.track.upload", str(run_dir), str(result)]
        with open(run_dir / LOG, "ab") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            except BaseException:  # Ctrl-C (it got the SIGINT too), SIGTERM: it goes now
                proc.kill()
                proc.wait()
                raise
            finally:
                sweep(run_dir, units)
                record_in_provenance(run_dir, units)
        answer = read_json(result) if result.is_file() else None
    if not isinstance(answer, dict):
        why = (
            f"did not end within {limit:.0f} s"
            if proc.returncode == -9
            else (f"ended with exit status {proc.returncode}")
        )
        for name in sinks:
            warn(
                f"track.{name}: the upload {why} (its output: {run_dir / LOG}); "
                f"`rlcrate track {run_dir}` uploads what is missing later"
            )
        return dict.fromkeys(sinks, 0)
    for line in answer.get("warnings") or []:
        warn(str(line))
    return {name: int((answer.get("done") or {}).get(name, 0)) for name in sinks}


def _limit(units: int, sinks: int) -> float:
    """The whole upload's bound: each of its calls is bounded (`deadline`); this is the backstop
    for a call whose bound did not fire."""
    from runner.track.deadline import PROBE_S, call_s

    return sinks * (PROBE_S + call_s() * (units + 2)) + 30
