"""Shared fixtures."""

from __future__ import annotations

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
