"""Archive figures (a script, not a test): size with and without models, archive time, verify
time, for finished run directories; and check-determinism time per manifest.

    .venv/bin/python tests/benchmarks/bench_archive.py --runs RUN_DIR [RUN_DIR ...] \\
        [--determinism MANIFEST ...] [--repeats 3] [--out bench-archive.json]

Archive and verify runs alternate (with models, without, verify) `--repeats` times; medians are
reported, with the load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runner.archive import ArchiveOptions, archive, verify


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def archive_figures(run_dir: Path, repeats: int) -> dict:
    times: dict[str, list[float]] = {"archive": [], "archive_no_models": [], "verify": []}
    with tempfile.TemporaryDirectory() as tmp:
        full, small = Path(tmp) / "full.tar.gz", Path(tmp) / "small.tar.gz"
        for _ in range(repeats):
            times["archive"].append(_timed(lambda: archive(run_dir, full, ArchiveOptions())))
            times["archive_no_models"].append(
                _timed(lambda: archive(run_dir, small, ArchiveOptions(models=False)))
            )
            times["verify"].append(_timed(lambda: verify(full)))
        sizes = {"with_models": full.stat().st_size, "without_models": small.stat().st_size}
    run_bytes = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    return {
        "run_dir": str(run_dir),
        "run_dir_bytes": run_bytes,
        "archive_bytes": sizes,
        "median_s": {k: statistics.median(v) for k, v in times.items()},
        "all_s": times,
    }


def determinism_figure(manifest: Path) -> dict:
    exe = Path(sys.executable).with_name("rlcrate")
    t0 = time.perf_counter()
    out = subprocess.run(
        [str(exe), "check-determinism", str(manifest)], capture_output=True, text=True
    )
    return {
        "manifest": str(manifest),
        "seconds": time.perf_counter() - t0,
        "rc": out.returncode,
        "output": out.stdout.strip().splitlines()[-1:],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", nargs="*", type=Path, default=[])
    ap.add_argument("--determinism", nargs="*", type=Path, default=[])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench-archive.json"))
    args = ap.parse_args()
    result: dict[str, object] = {"load_before": os.getloadavg(), "cpus": os.cpu_count()}
    result["archives"] = [archive_figures(r, args.repeats) for r in args.runs]
    result["check_determinism"] = [determinism_figure(m) for m in args.determinism]
    result["load_after"] = os.getloadavg()
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
