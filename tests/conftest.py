"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml


@pytest.fixture
def write_manifest(tmp_path):
    def write(data: dict | str, name: str = "m.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(textwrap.dedent(text))
        return path

    return write


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    ray = Path(sys.executable).with_name("ray")
    exe = str(ray) if ray.exists() else shutil.which("ray")
    if exe is None:
        pytest.skip("ray is not installed (pip install 'rlcrate[ray]')")
    tmp = tmp_path_factory.mktemp("ray")
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        [
            exe,
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=2",
            "--node-ip-address=127.0.0.1",
            "--include-dashboard=false",
            f"--temp-dir={tmp}",
            "--disable-usage-stats",
        ],
        check=True,
        capture_output=True,
        env=env,
        timeout=180,
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([exe, "stop", "--force"], capture_output=True, env=env, timeout=120)


def pytest_addoption(parser):
    parser.addoption(
        "--run-isaaclab",
        action="store_true",
        help="run the Isaac Lab tests (make test-isaaclab; they need `make isaaclab-env`)",
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-isaaclab"):
        return
    skip = pytest.mark.skip(reason="Isaac Lab runs in its own target: make test-isaaclab")
    for item in items:
        if item.get_closest_marker("isaaclab"):
            item.add_marker(skip)
