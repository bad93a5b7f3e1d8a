"""The CPU image through docker: its size, its build times, and what `run --image` costs.

    .venv/bin/python tests/benchmarks/bench_images.py [--pairs 3] [--steps 4096]

Starts a Docker Engine and a registry of its own (tests/docker_daemon.py), then:
- build: `rlcrate image build cpu --engine docker --no-cache` (cold: every layer, the pip
  downloads included), and again after a change to rlcrate's source only (a comment appended to
  one module, removed afterwards): the dependency layer must come from the cache;
- size: the image's size as docker counts it, per layer;
- run: one CartPole PPO unit of `--steps` steps with a 3-episode eval, run here and with
  `--image` through docker, `--pairs` interleaved pairs; wall time per side and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import docker_daemon  # noqa: E402
from tests.helpers import rlcrate, tiny_manifest  # noqa: E402
from tests.images.test_docker import TAG, _docker_flags  # noqa: E402


def _timed(*args: str, env: dict[str, str]) -> float:
    start = time.monotonic()
    res = rlcrate(*args, env_extra=env, timeout=3600)
    if res.returncode != 0:
        raise SystemExit(
            f"rlcrate {' '.join(args[:3])} failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
        )
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4096)
    opts = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-images-") as tmp,
        docker_daemon.started(Path(tmp) / "engine") as docker,
    ):
        env = docker.env
        flags = _docker_flags(docker)
        build = ("image", "build", "cpu", "--engine", "docker", *flags)
        cold = _timed(*build, "--no-cache", env=env)
        module = ROOT / "runner" / "errors.py"
        text = module.read_text()
        module.write_text(text + "# a source-only change\n")
        try:
            warm = _timed(*build, env=env)
        finally:
            module.write_text(text)
        size = int(docker("image", "inspect", "--format", "{{.Size}}", TAG))
        layers = docker("history", "--format", "{{.Size}}\t{{.CreatedBy}}", TAG).splitlines()
        print(f"build, cold (--no-cache): {cold:.0f} s; after a source-only change: {warm:.0f} s")
        print(f"size: {size / 1e9:.2f} GB; layers with content:")
        for line in layers:
            amount, _, what = line.partition("\t")
            if amount not in ("0B", "0"):
                print(f"  {amount:>8}  {what[:90]}")
        manifest = Path(tmp) / "in" / "m.yaml"
        manifest.parent.mkdir()
        data = tiny_manifest(train__timesteps=opts.steps, eval__episodes=3)
        manifest.write_text(yaml.safe_dump(data, sort_keys=False))
        here, inside = [], []
        for i in range(opts.pairs):
            here.append(_timed("run", str(manifest), "--out", f"{tmp}/here{i}", env={}))
            inside.append(
                _timed("run", str(manifest), "--image", TAG, "--out", f"{tmp}/in{i}", env=env)
            )
        ratios = [b / a for a, b in zip(here, inside, strict=True)]
        print(
            f"run ({opts.steps} steps, {opts.pairs} pairs): here {statistics.median(here):.1f} s, "
            f"--image through docker {statistics.median(inside):.1f} s; ratio median "
            f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
