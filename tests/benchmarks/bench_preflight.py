"""Cost of the dry construction `run` does before any unit (build each variant's env and model
once, one action, no training), against plain validation, on the same manifest.

    .venv/bin/python tests/benchmarks/bench_preflight.py [MANIFEST] [--repeats N]

Interleaved: each repeat times `rlcrate validate MANIFEST` and `rlcrate validate --deep MANIFEST`
back to back through the console script (what `run` adds is the difference), and prints the
medians, the ratio and `uptime`'s load so a noisy shared machine shows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = str(Path(sys.executable).with_name("rlcrate"))


def _time(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([EXE, *args], check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", nargs="?", default=str(ROOT / "manifests" / "quickstart.yaml"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    plain, deep = [], []
    for _ in range(args.repeats):
        plain.append(_time(["validate", args.manifest]))
        deep.append(_time(["validate", "--deep", args.manifest]))
    p, d = statistics.median(plain), statistics.median(deep)
    print(f"manifest: {args.manifest}")
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")
    print(f"validate        median {p:.2f} s  (min {min(plain):.2f}, max {max(plain):.2f})")
    print(f"validate --deep median {d:.2f} s  (min {min(deep):.2f}, max {max(deep):.2f})")
    print(f"dry construction adds {d - p:.2f} s per run (deep / plain = {d / p:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
