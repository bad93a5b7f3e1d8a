"""Measure one bench point in this interpreter: `python -m runner.run.bench.point IN OUT`.

The bench job runs this in the Python a backend's units run in (Brax's and Isaac Lab's own
environments), so that a point is measured where it would train. IN holds the point's full
config (a validated manifest, as JSON); OUT receives its measurements, written atomically.
Exit status 0 when OUT is written; otherwise the last line of stderr says why.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any


def _sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    from runner.manifest.schema import Manifest
    from runner.record.rundir import write_json_atomic
    from runner.run.bench.measure import measure_here

    signal.signal(signal.SIGTERM, _sigterm)
    src, dst = Path(argv[0]), Path(argv[1])
    cfg = Manifest.model_validate(json.loads(src.read_text()))
    try:
        result = measure_here(cfg)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - reported to the bench job as one line
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    write_json_atomic(dst, result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
