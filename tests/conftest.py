"""Shared fixtures."""

from __future__ import annotations

import signal
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


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A one-node Ray cluster on ports of its own, stopped by killing exactly its processes
    (never `ray stop`, which would stop every Ray on the machine)."""
    from tests import ray_nodes

    if ray_nodes.ray_exe() is None:
        pytest.skip("ray is not installed (pip install 'rlcrate[ray]')")
    address, head = ray_nodes.start_head(tmp_path_factory.mktemp("ray"), cpus=2)
    try:
        yield address
    finally:
        head.kill()


def pytest_configure(config):
    # A suite started from a background job (`nohup ... &`, some CI runners) inherits SIGINT as
    # ignored, and every process it starts would too: the tests that press Ctrl-C on a run would
    # then test nothing. Children get the default back on exec once this process handles it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
