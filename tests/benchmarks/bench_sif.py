"""The CPU image as a .sif: its size beside the OCI archive's and the engine's, how long the export
takes, and what running a unit in it costs against running it here.

    .venv/bin/python tests/benchmarks/bench_sif.py [--tag localhost/rlcrate-cpu:0.1.0]
        [--sif FILE.sif] [--pairs 3] [--steps 512]

- export (with --tag: a CPU image buildah holds): `rlcrate image export TAG --format oci-archive`
  and `--format sif`, each timed; the sizes of both files and of the image in buildah's store;
- run: one CartPole PPO unit of `--steps` steps with a 3-episode eval, here and with `--image
  FILE.sif` (the exported one, or --sif), `--pairs` interleaved pairs. Per side: the whole
  command; the unit's start, from `rlcrate run` starting to the unit's process recording itself
  (status.json `started`: the runner, and inside the .sif Apptainer and the runner in it, up to
  the unit's launch); and the unit's own start, from its process to its first training step
  (`train_started`: imports, env and model built). Also `apptainer exec FILE.sif true` alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.helpers import rlcrate, run_dir_of, tiny_manifest  # noqa: E402


def _timed(*args: str) -> float:
    start = time.monotonic()
    res = rlcrate(*args, timeout=7200)
    if res.returncode != 0:
        raise SystemExit(f"rlcrate {' '.join(args[:3])} failed:\n{res.stderr[-2000:]}")
    return time.monotonic() - start


def _run(manifest: Path, out: Path, *extra: str) -> dict[str, float]:
    start = time.time()
    whole = _timed("run", str(manifest), "--out", str(out), *extra)
    status = json.loads((run_dir_of(out, "tiny") / "units/default/seed-0/status.json").read_text())
    return {
        "whole": whole,
        "to_unit": status["started"] - start,
        "unit_start": status["train_started"] - status["started"],
    }


def _export(tag: str, folder: Path) -> Path:
    archive, sif = folder / "image.oci.tar", folder / "image.sif"
    oci_s = _timed("image", "export", tag, "--format", "oci-archive", "--engine", "buildah",
                   "-o", str(archive))  # fmt: skip
    sif_s = _timed("image", "export", tag, "--format", "sif", "--engine", "buildah", "-o", str(sif))
    listed = subprocess.run(["buildah", "images", "--format", "{{.Size}}", tag],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    print(f"export: oci-archive {oci_s:.0f} s, sif {sif_s:.0f} s (its own archive included)")
    print(f"size: buildah's store {listed}; OCI archive {archive.stat().st_size / 1e9:.2f} GB; "
          f".sif {sif.stat().st_size / 1e9:.2f} GB")  # fmt: skip
    archive.unlink()
    return sif


def _median(rows: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in rows]
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tag", help="a CPU image in buildah's store, exported first")
    parser.add_argument("--sif", type=Path, help="an exported .sif (instead of --tag)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=512)
    opts = parser.parse_args()
    if not (opts.tag or opts.sif):
        parser.error("give --tag or --sif")
    with tempfile.TemporaryDirectory(prefix="bench-sif-", dir=ROOT / ".cache") as name:
        tmp = Path(name)
        sif = opts.sif.resolve() if opts.sif else _export(opts.tag, tmp)
        starts = []
        for _ in range(5):
            t = time.monotonic()
            subprocess.run(["apptainer", "exec", "--containall", "--no-privs", str(sif), "true"],
                           check=True, capture_output=True)  # fmt: skip
            starts.append(time.monotonic() - t)
        print(f"apptainer exec {sif.name} true: median {statistics.median(starts):.2f} s")
        manifest = tmp / "in" / "m.yaml"
        manifest.parent.mkdir()
        data = tiny_manifest(train__timesteps=opts.steps, eval__episodes=3)
        manifest.write_text(yaml.safe_dump(data, sort_keys=False))
        here, inside = [], []
        for i in range(opts.pairs):
            here.append(_run(manifest, tmp / f"here{i}"))
            inside.append(_run(manifest, tmp / f"in{i}", "--image", str(sif)))
        for key, what in (("whole", "whole command"), ("to_unit", "rlcrate run to the unit's "
                          "start"), ("unit_start", "the unit's own start")):  # fmt: skip
            print(f"{what}: here {_median(here, key)}; in the .sif {_median(inside, key)}")


if __name__ == "__main__":
    main()
