"""The tracking upload's own process: `python -m runner.track.upload RUN_DIR RESULT.json`.

Started by `track_run` with its output into the run's `track.log`, so the libraries' console
lines (MLflow's "View run ..." for every unit) stay off rlcrate's; every call bounded in time
(`deadline`). It writes RESULT.json: `{"done": {sink: units brought up to date}, "warnings":
[one line per sink that failed]}`. Killed at any point, what it saved is resumable: each tracked
run is found again by its record in track.json (runner.track.mlflow_sink `_run_of`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.manifest.resolved import ResolvedRun, read_resolved
from runner.record.rundir import write_json_atomic
from runner.track import SINKS, track_section, wanted
from runner.track.deadline import PROBE_S, CallTimeout, call_s, deadline


def _sink_class(name: str) -> Any:
    import importlib

    module, cls = SINKS[name][1].split(":")
    return getattr(importlib.import_module(module), cls)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def upload_all(run_dir: Path, res: ResolvedRun, warn: Callable[[str], None]) -> dict[str, int]:
    """Upload what each unit has and its tracked runs lack; sink -> units brought up to date.
    A sink that fails or runs past a bound gets one `warn` line and is left alone. The bounds
    are on calls to the tracker: the library's import (`load`) is outside them."""
    from runner.track.unit_data import unit_data

    done: dict[str, int] = {}
    bound = call_s()
    for name, spec in wanted(track_section(res)).items():
        sink = _sink_class(name)(run_dir, res, spec)
        count = 0
        try:
            with deadline(PROBE_S, "its first request"):
                sink.probe()
            sink.load()  # the library's import: local work, not a call to bound
            with deadline(bound, "opening the run"):
                sink.open()
            for unit in res.units():
                data = unit_data(run_dir, res, unit)
                if data is None:
                    continue
                with deadline(bound, f"uploading {unit.key}"):
                    count += bool(sink.upload(data))
            with deadline(bound, "closing the run"):
                sink.close()
        except (Exception, CallTimeout) as exc:  # tracking never fails a run
            warn(
                f"track.{name}: {sink.where}: {_one_line(exc)}; the run goes on untracked there "
                f"(`rlcrate track {run_dir}` uploads what is missing later)"
            )
        done[name] = count
    return done


def _die_with_parent() -> None:
    """A runner killed outright (SIGKILL) takes its upload with it: no process stays behind."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)


def main(argv: list[str]) -> int:
    _die_with_parent()
    run_dir, result = Path(argv[0]), Path(argv[1])
    warnings: list[str] = []
    try:
        done = upload_all(run_dir, read_resolved(run_dir), warnings.append)
    except KeyboardInterrupt:  # Ctrl-C reaches it with the runner: what it saved stays valid
        return 130
    write_json_atomic(result, {"done": done, "warnings": warnings}, durable=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
